#!/bin/bash
# As root, with h12alice's `serve --http 127.0.0.1:48123` running: h12alice sends requests the way
# docs/http.md showed (curl -H "Authorization: Bearer $TOKEN"), h12mallory watches /proc/*/cmdline.
# Then the way it shows now (the header on curl's standard input, printf being a shell builtin).
M="runuser -u h12mallory --"; A="runuser -u h12alice -- env HOME=/home/h12alice"
watch() { $M timeout 8 /usr/bin/python3 -c '
import os, re
seen = set()
while True:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                line = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            seen.update(re.findall(rb"Bearer ([A-Za-z0-9_-]{20,})", line))
            if seen:
                print(b" ".join(seen).decode(), flush=True); raise SystemExit
' > /tmp/h12seen; }
watch & W=$!
$A sh -c 'TOKEN=$(cat ~/.local/share/simhash-store/http-token); for i in $(seq 1 200); do curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:48123/health > /dev/null; done'
wait $W; echo "documented way, mallory saw: $(cat /tmp/h12seen)"
echo "alice's token:                $(cat /home/h12alice/.local/share/simhash-store/http-token)"
watch & W=$!
$A sh -c 'TOKEN=$(cat ~/.local/share/simhash-store/http-token); for i in $(seq 1 200); do printf "Authorization: Bearer %s\n" "$TOKEN" | curl -s -H @- http://127.0.0.1:48123/health > /dev/null; done; printf "Authorization: Bearer %s\n" "$TOKEN" | curl -s -H @- http://127.0.0.1:48123/health'
wait $W; echo; echo "header on stdin, mallory saw: '$(cat /tmp/h12seen)'"
rm -f /tmp/h12seen
