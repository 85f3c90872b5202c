#!/bin/sh
# Run as root: in a mount namespace whose /etc/hosts names localhost ::1 and 127.0.0.1 (as
# Debian's and Ubuntu's do), h13mallory asks for passwords on [::1]:PORT while h13alice runs
# `serve --listen localhost:PORT` (her embedded server) and connects with the printed URL, and
# with that URL less require_auth (what a libpq 15 client such as psql 15 must be given).
# Usage: serve_listen_localhost_ipv6.sh PORT SIMHASH_STORE_COMMAND
set -e
PORT=$1 CMD=$2 HERE=$(dirname "$(readlink -f "$0")")
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > /tmp/h13-hosts
chmod 644 /tmp/h13-hosts
cp "$HERE/serve_listen_localhost_ipv6_mallory.py" /tmp/h13-mallory-pg.py && chmod 644 /tmp/h13-mallory-pg.py
exec unshare -m sh -c "
mount --bind /tmp/h13-hosts /etc/hosts
su h13mallory -c 'python3 /tmp/h13-mallory-pg.py $PORT 120' > /tmp/h13-mallory-pg.out 2>&1 &
sleep 1
su h13alice -c 'cd ~ && { $CMD serve --listen localhost:$PORT > listen.url 2> listen.err & echo \$! > listen.pid; }'
for i in \$(seq 90); do [ -s /home/h13alice/listen.url ] && break; sleep 1; done
su h13alice -c '
cd ~ && URL=\$(cat listen.url) && echo \"printed: \$(echo \$URL | sed s/:[^:@]*@/:***@/)\" && cat listen.err
~/venv/bin/python -c \"import psycopg, sys; u = sys.argv[1]
for url in (u, u.replace(chr(38) + \\\"require_auth=scram-sha-256\\\", \\\"\\\").replace(\\\"?require_auth=scram-sha-256&\\\", \\\"?\\\")):
    try:
        print(psycopg.connect(url, connect_timeout=5).execute(\\\"select 1\\\").fetchone())
    except Exception as exc:
        print(\\\"client:\\\", str(exc).splitlines()[0][:150])
\" \"\$URL\"'
sleep 1; cat /tmp/h13-mallory-pg.out
kill \$(cat /home/h13alice/listen.pid) || true
"
