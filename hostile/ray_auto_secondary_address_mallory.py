"""As h14mallory: listen on ADDRESS:PORT (the second address of an interface, where alice's stopped
Ray head was) in bursts (3 ms on, 3 ms off, so that a look at who listens there misses it now and
then), taking every connection that comes; print how many came."""

import select
import signal
import socket
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
taken = 0


def report(*_):
    print(f"mallory: {taken} connections reached me", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, report)
print(f"mallory listens on {host}:{port} in bursts", flush=True)
while True:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen()
    end = time.monotonic() + 0.003
    while (left := end - time.monotonic()) > 0:
        if select.select([listener], [], [], left)[0]:
            connection, _ = listener.accept()
            taken += 1
            connection.close()
    listener.close()
    time.sleep(0.003)
