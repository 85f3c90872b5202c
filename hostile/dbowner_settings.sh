#!/bin/bash
# The database's owner (not the store's owner) sets database-level defaults for every session.
set -u
P="psql -X -q -h 127.0.0.1 -U root -d postgres"
$P -c "DROP DATABASE IF EXISTS h17db" -c "DROP ROLE IF EXISTS h17_owner" -c "DROP ROLE IF EXISTS h17_dbo" 2>/dev/null
$P -c "CREATE ROLE h17_dbo LOGIN" -c "CREATE ROLE h17_owner LOGIN" -c "CREATE DATABASE h17db OWNER h17_dbo" -c "GRANT CREATE, CONNECT ON DATABASE h17db TO h17_owner"
S=.venv/bin/simhash-store
U=postgresql://h17_owner@127.0.0.1:5432/h17db
$S init --db $U 2>&1 | tail -1
printf '{"key":"a","text":"the quick brown fox jumps over the lazy dog again and again"}\n' > /tmp/h17-a.jsonl
$S add --db $U /tmp/h17-a.jsonl 2>&1 | tail -1
for setting in "default_transaction_read_only=on" "default_transaction_isolation='serializable'" "idle_in_transaction_session_timeout='1ms'" "standard_conforming_strings=off" "client_encoding='SJIS'" "DateStyle='SQL, DMY'" "extra_float_digits=-15" "bytea_output='escape'" "enable_indexscan=off"; do
  echo "== $setting"
  psql -X -q -h 127.0.0.1 -U h17_dbo -d postgres -c "ALTER DATABASE h17db SET $setting"
  printf '{"key":"b%s","text":"another text of some words for the store to keep here"}\n' $RANDOM > /tmp/h17-b.jsonl
  $S add --db $U /tmp/h17-b.jsonl 2>&1 | tail -3
  $S query --db $U --key a 2>&1 | tail -2
  $S stats --db $U 2>&1 | tail -1
  psql -X -q -h 127.0.0.1 -U h17_dbo -d postgres -c "ALTER DATABASE h17db RESET ALL"
done
