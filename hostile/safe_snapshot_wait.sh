#!/bin/bash
# The database's owner makes every transaction SERIALIZABLE READ ONLY DEFERRABLE; a plain login keeps a
# serializable transaction open: the owner's reads wait for a safe snapshot (wait_event SafeSnapshot).
S=.venv/bin/simhash-store; U=postgresql://h17_owner@127.0.0.1:5432/h17db
psql -X -q -h 127.0.0.1 -U h17_dbo -d postgres -c "ALTER DATABASE h17db SET default_transaction_isolation = 'serializable'" -c "ALTER DATABASE h17db SET default_transaction_deferrable = on" -c "ALTER DATABASE h17db SET default_transaction_read_only = on"
(echo "BEGIN ISOLATION LEVEL SERIALIZABLE READ WRITE; SELECT 1;"; sleep 40) | psql -X -q -h 127.0.0.1 -U h17_evil -d h17db >/dev/null &
sleep 1
for cmd in "query --key v5" "stats" "dups -k 3" "optimize"; do
  start=$(date +%s); SIMHASH_STORE_LOCK_TIMEOUT=2 timeout 25 $S --db $U $cmd >/tmp/h17-out 2>&1; rc=$?
  echo "$cmd: rc=$rc after $(( $(date +%s) - start )) s: $(tail -1 /tmp/h17-out | cut -c1-160)"
done
psql -X -q -t -h 127.0.0.1 -U root -d postgres -c "SELECT wait_event_type, wait_event, left(query,60) FROM pg_stat_activity WHERE usename='h17_owner'"
kill %1; wait
psql -X -q -h 127.0.0.1 -U h17_dbo -d postgres -c "ALTER DATABASE h17db RESET ALL"
