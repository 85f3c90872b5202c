#!/bin/sh
# The database's owner (not the store's) rewrites every table of the database in a loop
# (PostgreSQL 15 lets it: VACUUM FULL without a table name), while the store's owner queries and
# adds with a 1 s lock timeout. Expect: each command answers, or stops in one line after 1 s.
O=postgresql://h20r_owner@127.0.0.1:5432/h20r_db
D=postgresql://h20r_dbowner@127.0.0.1:5432/h20r_db
( for i in 1 2 3 4 5 6; do psql "$D" -qc "VACUUM FULL" 2>/dev/null; done ) &
loop=$!
sleep 0.5
for i in 1 2 3 4 5; do
  SIMHASH_STORE_LOCK_TIMEOUT=1 simhash-store query --db $O /tmp/h20r_one.jsonl --format jsonl >/dev/null; echo "query exit $?"
  SIMHASH_STORE_LOCK_TIMEOUT=1 simhash-store stats --db $O 2>&1 >/dev/null | cut -c1-200; echo "stats exit $?"
done
wait $loop
