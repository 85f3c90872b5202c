#!/bin/sh
# As root, with a venv given as $1: h16mallory flips /tmp/h16m/in.txt between a link to her regular
# file and a link to /dev/ptmx (a stand-in for /dev/watchdog); root checks the name (as the commands
# do: a regular file) and opens it with corpus.open_regular_file, 3,000 times. Before the fix, a link
# that flipped between the check and the open was opened (then refused); after, only looked at (O_PATH).
V=$1
su h16mallory -c "mkdir -p /tmp/h16m && echo words > /tmp/h16m/real.txt"
su h16mallory -c "cd /tmp/h16m && while :; do ln -sfn real.txt a && mv -T a in.txt; ln -sfn /dev/ptmx b && mv -T b in.txt; done" >/dev/null 2>&1 &
FLIP=$!
sleep 1
$V/bin/python - <<'PY'
import os, stat
from simhash_store.corpus import open_regular_file
ok = refused = 0
for _ in range(3000):
    try:
        if not stat.S_ISREG(os.stat("/tmp/h16m/in.txt").st_mode):
            continue
        open_regular_file("/tmp/h16m/in.txt").close(); ok += 1
    except OSError:
        refused += 1  # a device swapped in after the check: opened before the fix
print("read", ok, "refused after the check", refused)
PY
kill $FLIP; ps -u h16mallory -o pid= | xargs -r kill
sleep 0.5; rm -f /tmp/h16m/a /tmp/h16m/b /tmp/h16m/in.txt /tmp/h16m/real.txt; rmdir /tmp/h16m
