"""A listener that asks every client for a clear-text password and prints what it gets.
Run as the other user: python3 h18_fake_server.py PORT SECONDS"""

import socket
import struct
import sys
import time

port, seconds = int(sys.argv[1]), float(sys.argv[2])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1", port))
listener.listen()
listener.settimeout(1)
end = time.time() + seconds
while time.time() < end:
    try:
        client, _ = listener.accept()
    except TimeoutError:
        continue
    client.settimeout(5)
    try:
        length = struct.unpack("!I", client.recv(4))[0]
        body = client.recv(length - 4)
        if struct.unpack("!I", body[:4])[0] in (80877103, 80877104):  # SSL or GSS request: say no
            client.sendall(b"N")
            length = struct.unpack("!I", client.recv(4))[0]
            body = client.recv(length - 4)
        print("startup:", body[4:].split(b"\0")[:8], flush=True)
        client.sendall(b"R" + struct.pack("!II", 8, 3))  # AuthenticationCleartextPassword
        kind = client.recv(1)
        length = struct.unpack("!I", client.recv(4))[0]
        print("got", kind, client.recv(length - 4), flush=True)
    except Exception as exc:  # noqa: BLE001
        print("client:", exc, flush=True)
    finally:
        client.close()
