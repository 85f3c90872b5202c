#!/bin/bash
# As root, with h12alice's `serve --listen 127.0.0.1:55432` running: h12alice keeps the password in
# SIMHASH_STORE_URL (off the command line, as the docs advise) and runs the documented
# psql "$(simhash-store url)"; h12mallory reads psql's command line.
M="runuser -u h12mallory --"; PW=$(cat /home/h12alice/.local/share/simhash-store/password)
runuser -u h12alice -- env HOME=/home/h12alice SIMHASH_STORE_URL="postgresql://simhash_owner:$PW@127.0.0.1:55432/simhash_store" \
  bash -c 'psql "$(/tmp/h12ss url)" -c "SELECT pg_sleep(3)" > /dev/null' &
sleep 2.5
$M bash -c 'for p in $(pgrep -x psql); do echo "mallory reads psql $p: $(tr "\0" " " < /proc/$p/cmdline)"; done'
wait
echo "alice's password: $PW"
