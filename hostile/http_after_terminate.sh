#!/bin/bash
# serve --http as the owner; a member of pg_signal_backend terminates the service's pooled connections
# between requests: does the next /query answer, or fail?
DB=${1:-h16r_b}; PORT=${PORT:-51143}
O=postgresql://h16_owner@127.0.0.1:5432/$DB
S=/work/wt-h16-roles/.venv/bin/simhash-store
D=$(mktemp -d /tmp/h16_http.XXXXXX)
export SIMHASH_STORE_HOME=$D XDG_DATA_HOME=$D
$S --db $O serve --http 127.0.0.1:$PORT --print-tokens > $D/out.json 2>$D/err.txt &
PID=$!
for i in $(seq 1 60); do grep -q token $D/out.json 2>/dev/null && break; sleep 1; done
TOKEN=$(python3 -c "import json,sys; d=json.load(open('$D/out.json')); print(d.get('read_write_token') or d.get('token') or '')")
q() { curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"fingerprints": ["0123456789abcdef"], "k": 3}' http://127.0.0.1:$PORT/query; echo; }
q
psql -q -h 127.0.0.1 -U h16_sig -d $DB -Atc "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'h16_owner' AND datname = '$DB'"
q; q
kill $PID; wait $PID
cat $D/err.txt
rm -r "$D"
