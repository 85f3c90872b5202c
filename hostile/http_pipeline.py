"""serve --http on one connection: a 401 whose body is never read, pipelined with a good request;
a 413 then a good request; two pipelined good requests; a body cut mid-way; and 120 unauthenticated
connections trickling a declared body while a token holder asks. Usage: python hostile/http_pipeline.py PORT TOKEN"""

import socket
import sys
import time

port, token = int(sys.argv[1]), sys.argv[2]
body = b'{"texts": ["one two three four five six seven"]}'


def req(tok, b, length=None):
    auth = f"Authorization: Bearer {tok}\r\n".encode() if tok else b""
    n = len(b) if length is None else length
    return (
        b"POST /fingerprint HTTP/1.1\r\nHost: x\r\n"
        + auth
        + b"Content-Type: application/json\r\nContent-Length: "
        + str(n).encode()
        + b"\r\n\r\n"
        + b
    )


def talk(data, wait=3.0):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    s.settimeout(wait)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except TimeoutError:
        pass
    s.close()
    return [part.split(b"\r\n")[0] for part in got.split(b"HTTP/1.1 ")[1:]]


print("401 then good:", talk(req("wrong", body) + req(token, body)))
print("401 w/ unread 1MB declared then good:", talk(req("", b"x" * 1000, 1000) + req(token, body)))
big = b'{"texts": ["' + b"a" * (17 << 20) + b'"]}'
print("413 then good:", talk(req(token, big) + req(token, body), 6))
print("two good pipelined:", talk(req(token, body) + req(token, body)))
print("cut mid-body:", talk(req(token, body[:10], len(body)), 1))

held = []
for _ in range(120):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req(None, b"{", 100000))
    held.append(s)
time.sleep(1)
print("good while 120 unauthenticated hold a declared body:", talk(req(token, body)))
for s in held:
    s.close()
held = []
for _ in range(120):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req("4cI8-not-a-token", b"{", 100000))
    held.append(s)
time.sleep(1)
print("good while 120 wrong-token hold a declared body:", talk(req(token, body)))
for s in held:
    s.close()
