"""Connections to `serve --http` that send requests (no token needed) and never read the answers.

Each connection pipelines many `GET /health` requests without a token and never reads: the 401
answers fill the socket buffers, the service's write of one answer waits for the client to read,
and that request stays "under way" for ever (it holds one of the requests-at-once places, and
a connection with a request under way is never closed). With enough such connections every
client with a token is answered 503. Usage: unread_responses.py HOST PORT TOKEN [CONNECTIONS]
"""

from __future__ import annotations

import http.client
import socket
import sys
import time

host, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
count = int(sys.argv[4]) if len(sys.argv) > 4 else 110
request = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
held = []
for _ in range(count):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.connect((host, port))
    s.setblocking(False)
    stalled_since = None
    while True:  # until the service stops reading: one of its answers waits for this client
        try:
            s.send(request * 50)
            stalled_since = None
        except BlockingIOError:
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since > 1.0:
                break
            time.sleep(0.02)
    held.append(s)
print(f"{len(held)} connections holding unread answers", flush=True)


def probe() -> str:
    c = http.client.HTTPConnection(host, port, timeout=15)
    try:
        c.request("GET", "/health", headers={"Authorization": f"Bearer {token}"})
        r = c.getresponse()
        return f"{r.status} {r.read()[:120]!r}"
    except OSError as exc:
        return f"error {exc!r}"
    finally:
        c.close()


for wait in (0, 5, 15, 30, 60):
    time.sleep(wait)
    print(f"after {wait} s more: a client with a token gets {probe()}", flush=True)
