#!/bin/bash
# A writer holds one document's row lock in an open transaction while the owner runs recluster, remove, add.
DB=${1:-h16r_b}
O=postgresql://h16_owner@127.0.0.1:5432/$DB
S=/work/wt-h16-roles/.venv/bin/simhash-store
( psql -q -h 127.0.0.1 -U h16_writer -d $DB -c "BEGIN; UPDATE simhash.documents SET keep_value = keep_value WHERE key = 'copy0002'; SELECT pg_sleep(25); COMMIT" > /dev/null ) &
sleep 1
export SIMHASH_STORE_LOCK_TIMEOUT=3
for c in "recluster" "remove copy0002"; do
  start=$(date +%s); timeout 20 $S --db $O $c 2>&1 | tail -1 | cut -c1-250; echo "rc ${PIPESTATUS[0]} after $(( $(date +%s) - start )) s"
done
wait
