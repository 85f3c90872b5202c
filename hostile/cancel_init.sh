#!/bin/bash
# A pg_signal_backend member cancels the owner's statements that switch on segments or change the layout during init.
S=.venv/bin/simhash-store; U=postgresql://h17_owner@127.0.0.1:5432/h17db2
P="psql -X -q -h 127.0.0.1 -U root -d postgres"
$P -c "DROP DATABASE IF EXISTS h17db2" -c "DROP ROLE IF EXISTS h17_sig" -c "CREATE ROLE h17_sig LOGIN IN ROLE pg_signal_backend" -c "CREATE DATABASE h17db2 OWNER h17_owner"
$S --db $U init >/dev/null 2>&1
python3 -c "
import json
for i in range(20000): print(json.dumps({'key':f'v{i}','text':f'document number {i} with words {i*7} and {i*13} and more {i%97}. Second paragraph {i%50} here.'}))" > /tmp/h17-v2.jsonl
$S --db $U add /tmp/h17-v2.jsonl 2>&1 | tail -1
for pattern in '%segments%' '%INDEX%' '%wide%'; do
  ( for i in $(seq 1 400); do psql -X -q -t -h 127.0.0.1 -U h17_sig -d h17db2 -c "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE usename='h17_owner' AND state='active' AND query ILIKE '$pattern'" ; done | grep -v '^ *0$' | head -3 ) &
  $S --db $U init --segments --layout wide3 2>&1 | tail -1
  wait
  echo "-- after cancel ($pattern):"; $S --db $U stats 2>&1 | grep -i "layout\|segment" | head -3
done
$S --db $U init --segments --layout wide3 2>&1 | tail -1
$S --db $U stats 2>&1 | grep -i "layout\|segment" | head -3
