#!/bin/bash
# A member of pg_signal_backend terminates (or cancels) the owner's backend while dups, dups --containment
# stream their pairs (a server-side cursor, a generator): one line, or a traceback?
DB=${1:-h16r_b}
O=postgresql://h16_owner@127.0.0.1:5432/$DB
S=/work/wt-h16-roles/.venv/bin/simhash-store
SIG=${SIG:-pg_terminate_backend}
if [ ! -s /tmp/h16_copies.jsonl ]; then
python3 - > /tmp/h16_copies.jsonl <<'PY'
import json
p = "The committee met on Tuesday to discuss the new schedule for examinations and the courses of the coming year. " * 3
for i in range(400):
    print(json.dumps({"key": f"copy{i:04d}", "text": p + f" Note {i}."}))
PY
$S --db $O add --jsonl /tmp/h16_copies.jsonl | tail -1
fi
for cmd in "dups --containment" "dups -k 11" "recluster"; do
  ( $S --db $O $cmd 2>/tmp/h16_err.txt | (sleep 3; cat > /dev/null); echo "exit ${PIPESTATUS[0]}" >> /tmp/h16_err.txt ) &
  sleep 1.5
  psql -q -h 127.0.0.1 -U h16_sig -d $DB -Atc "SELECT $SIG(pid) FROM pg_stat_activity WHERE usename = 'h16_owner' AND datname = '$DB'"
  wait
  echo "== $cmd"; cat /tmp/h16_err.txt | cut -c1-300
done
