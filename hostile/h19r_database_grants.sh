#!/bin/sh
# As the database's owner (not the store's): REVOKE TEMPORARY (or CONNECT) ON DATABASE FROM PUBLIC, then
# the store owner's commands. Each should be one line (or work), nothing half-written.
DB=${DB:-h19r_db}; U=postgresql://h19r_owner@127.0.0.1:5432/$DB; S=${S:-.venv/bin/simhash-store}
printf '{"key":"t%s","text":"alpha beta gamma delta epsilon zeta eta theta iota kappa nu %s"}\n' $$ $$ > /tmp/h19r_t.jsonl
for grant in TEMPORARY CONNECT; do
  psql -h 127.0.0.1 -U h19r_dbowner -d $DB -q -c "REVOKE $grant ON DATABASE $DB FROM PUBLIC"
  for cmd in "add /tmp/h19r_t.jsonl" "query /tmp/h19r_in.txt" "dedup /tmp/h19r_t.jsonl -o /tmp/h19r_dd_$grant.jsonl -k 3" "dups -k 3" "recluster -k 3 --keep first" "remove t$$" "stats"; do
    out=$(SIMHASH_STORE_LOCK_TIMEOUT=3 timeout 60 $S --db $U $cmd 2>&1); rc=$?
    echo "[no $grant] $cmd -> rc=$rc lines=$(printf '%s\n' "$out" | wc -l): $(printf '%s' "$out" | tail -1 | cut -c1-250)"
  done
  psql -h 127.0.0.1 -U h19r_dbowner -d $DB -q -c "GRANT $grant ON DATABASE $DB TO PUBLIC"
done
