"""Another local user opens N TCP connections to a `serve --listen` port and sends nothing
(no startup packet), holding them; then reports. Run as that user: python3 h18_hold_connections.py PORT N SECONDS"""

import socket
import sys
import time

port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
held = []
for _ in range(count):
    try:
        held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    except OSError as exc:
        print("connect failed:", exc)
        break
print("holding", len(held), flush=True)
end = time.time() + seconds
while time.time() < end:
    time.sleep(1)
    # reopen those the server closed (authentication_timeout)
    for i, s in enumerate(held):
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                held[i] = socket.create_connection(("127.0.0.1", port), timeout=5)
        except BlockingIOError:
            pass
        except OSError:
            held[i] = socket.create_connection(("127.0.0.1", port), timeout=5)
print("done", flush=True)
