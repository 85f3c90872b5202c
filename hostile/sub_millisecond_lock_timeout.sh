#!/bin/bash
# SIMHASH_STORE_LOCK_TIMEOUT=0.0001 became lock_timeout=0ms, which PostgreSQL reads as no limit:
# with the table locked by another session, add waited for ever (here: killed after 20 s).
# Usage: sub_millisecond_lock_timeout.sh DB_NAME (a database holding a store)
S=${S:-$(dirname "$0")/../.venv/bin/simhash-store}
DB=$1
dir=$(mktemp -d)
echo "保护人民的合法权利和自由" > "$dir/a.txt"
psql -qh 127.0.0.1 -U root -d "$DB" -c "BEGIN; LOCK simhash.documents; SELECT pg_sleep(25); COMMIT;" >/dev/null &
holder=$!
sleep 1
start=$(date +%s)
SIMHASH_STORE_LOCK_TIMEOUT=0.0001 timeout 20 "$S" --db "postgresql://root@127.0.0.1:5432/$DB" add "$dir/a.txt"
echo "exit $? after $(( $(date +%s) - start )) s (124: still waiting when killed)"
wait $holder
rm -rf "$dir"
