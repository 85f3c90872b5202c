#!/bin/bash
# A plain login holds each of the store's advisory keys; every owner command must give up within the lock timeout.
S=.venv/bin/simhash-store; U=postgresql://h17_owner@127.0.0.1:5432/h17db
psql -X -q -h 127.0.0.1 -U root -d postgres -c "DROP ROLE IF EXISTS h17_evil" -c "CREATE ROLE h17_evil LOGIN"
for key in "1397312840, 1" "1397312840, 2" "1397312840, 3" "1397312840, 0"; do
  echo "== key $key"
  (echo "SELECT pg_advisory_lock($key);"; sleep 25) | psql -X -q -h 127.0.0.1 -U h17_evil -d h17db >/dev/null &
  sleep 1
  for cmd in "recluster" "remove v1" "optimize" "init" "dups -k 3"; do
    SIMHASH_STORE_LOCK_TIMEOUT=2 timeout 20 $S --db $U $cmd >/tmp/h17-out 2>&1; rc=$?
    echo "$cmd: rc=$rc $(tail -1 /tmp/h17-out | cut -c1-150)"
  done
  kill %1 2>/dev/null; wait 2>/dev/null
done
