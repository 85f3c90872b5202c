#!/bin/sh
# A --db URL of bytes that are not UTF-8: traceback before the fix. A NUL (%00) in the database
# name: connected to the database named up to it. A password holding "?": left in `ps`.
set -u
simhash-store --db "$(printf 'postgresql://u:\377@127.0.0.1:5432/h16_inputs')" stats; echo "rc=$?"
simhash-store --db 'postgresql://root@127.0.0.1:5432/h16_inputs%00x' stats; echo "rc=$?"
simhash-store --db 'postgresql://root:pa?ss@127.0.0.1:5432/h16_inputs' add --jsonl - -q & pid=$!
sleep 1; tr '\0' ' ' < /proc/$pid/cmdline; echo; kill $pid
