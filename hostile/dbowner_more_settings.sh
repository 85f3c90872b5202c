#!/bin/bash
# More database-level defaults set by the database's owner: each owner command should end in one line.
S=.venv/bin/simhash-store; U=postgresql://h17_owner@127.0.0.1:5432/h17db
for setting in "statement_timeout='1ms'" "idle_session_timeout='1ms'" "default_transaction_isolation='repeatable read'" "transform_null_equals=on" "array_nulls=off" "work_mem='64kB'" "maintenance_work_mem='1MB'" "row_security=off" "plan_cache_mode=force_generic_plan"; do
  psql -X -q -h 127.0.0.1 -U h17_dbo -d postgres -c "ALTER DATABASE h17db SET $setting"
  printf '{"key":"NULL","text":"a text whose key is the word null for arrays"}\n' > /tmp/h17-n.jsonl
  for cmd in "add /tmp/h17-n.jsonl" "query --key NULL" "remove NULL" "dups -k 3" "stats"; do
    timeout 60 $S --db $U $cmd >/tmp/h17-out 2>&1; rc=$?
    echo "$setting | $cmd: rc=$rc lines=$(wc -l </tmp/h17-out) $(grep -c Traceback /tmp/h17-out) tb: $(tail -1 /tmp/h17-out | cut -c1-110)"
  done
  psql -X -q -h 127.0.0.1 -U h17_dbo -d postgres -c "ALTER DATABASE h17db RESET ALL"
done
