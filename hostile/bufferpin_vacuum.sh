#!/bin/bash
# A reader (grant-read) holds an index-only scan open in an idle transaction; the owner's optimize
# (VACUUM) then waits for the B-tree leaf page's cleanup lock: not a lock, so no lock_timeout.
DB=${1:-h16r_b}
O=postgresql://h16_owner@127.0.0.1:5432/$DB
S=/work/wt-h16-roles/.venv/bin/simhash-store
python3 - > /tmp/h16_fps.jsonl <<'PY'
import json, random
r = random.Random(1)
for i in range(20000):
    print(json.dumps({"key": f"k{i}", "fingerprint": f"{r.getrandbits(64):016x}"}))
PY
$S --db $O import /tmp/h16_fps.jsonl --scheme multi-v2 --no-bulk | tail -1
$S --db $O remove k1 k2 k3 k4 k5 | tail -1
# the reader's cursor: an index-only scan, one row fetched, then idle
( psql -q -h 127.0.0.1 -U h16_reader -d $DB <<'SQL'
SET enable_seqscan = off; SET enable_bitmapscan = off;
BEGIN;
DECLARE c CURSOR FOR SELECT block0, fingerprint FROM simhash.documents WHERE block0 >= 0 ORDER BY block0;
FETCH 1 FROM c;
SELECT pg_sleep(40);
COMMIT;
SQL
) > /dev/null &
sleep 2
echo "optimize starts $(date +%T)"
SIMHASH_STORE_NETWORK_TIMEOUT=2 timeout 30 $S --db $O optimize --lock-timeout 3; echo "optimize exit $? at $(date +%T)"
psql -h 127.0.0.1 -U root -d $DB -Atc "SELECT pid, wait_event_type, wait_event, left(query,60) FROM pg_stat_activity WHERE datname='$DB'"
wait
