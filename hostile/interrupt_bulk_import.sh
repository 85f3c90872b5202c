#!/bin/bash
# Interrupt `import` into an empty store (the bulk path: indexes dropped, rows COPYed, indexes
# rebuilt) with SIGINT, SIGTERM or SIGKILL at several moments; then check the store: row count,
# indexes, a re-run. Usage: interrupt_bulk_import.sh DB_URL BIG.jsonl
S=${S:-$(dirname "$0")/../.venv/bin/simhash-store}
U=$1; F=$2
DB=${U##*/}
indexes() { psql -qtAh 127.0.0.1 -U root -d "$DB" -c "select count(*) from pg_indexes where schemaname='simhash' and tablename='documents'"; }
rows() { psql -qtAh 127.0.0.1 -U root -d "$DB" -c "select count(*) from simhash.documents"; }
set -m
for sig in ${SIGS:-INT TERM KILL}; do
  for t in 0.5 1.5 3 4 5 5.5; do
    psql -qh 127.0.0.1 -U root -d "$DB" -c "set client_min_messages=warning; truncate simhash.documents cascade" >/dev/null
    $S --db "$U" import "$F" --scheme zh-jieba-v1 -q >/tmp/h13i/out.$$ 2>&1 &
    pid=$!
    sleep "$t"; kill -$sig $pid 2>/dev/null; wait $pid; rc=$?
    echo "sig=$sig t=$t rc=$rc rows=$(rows) indexes=$(indexes) msg=$(tail -c 300 /tmp/h13i/out.$$ | tr '\n' '|')"
  done
done
