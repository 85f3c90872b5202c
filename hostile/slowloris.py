# ruff: noqa
"""Idle / partial-header TCP connections to serve --http, then a real request: does it get served?"""

import socket, sys, time, json, urllib.request

port, n, mode, wait = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
token = json.load(open("w/serve.out"))["read_only_token"]
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    if mode == "partial":
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    elif mode == "body":
        s.sendall(
            b"POST /fingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + token.encode()
            + b"\r\nContent-Length: 100\r\n\r\n{"
        )
    socks.append(s)
time.sleep(wait)
alive = 0
for s in socks:
    s.setblocking(False)
    try:
        d = s.recv(100)
        alive += d != b""
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print(f"{n} {mode} connections after {wait}s: {alive} still open")
req = urllib.request.Request(f"http://127.0.0.1:{port}/health", headers={"Authorization": f"Bearer {token}"})
t = time.time()
try:
    r = urllib.request.urlopen(req, timeout=20)
    print("real request:", r.status, r.read()[:80], round(time.time() - t, 2), "s")
except Exception as e:
    print("real request failed:", e, round(time.time() - t, 2), "s")
