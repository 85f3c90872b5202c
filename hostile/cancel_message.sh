#!/bin/bash
# A member of pg_signal_backend cancels the owner's bulk import: what does the one line say?
DB=${1:-h16r_c}
O=postgresql://h16_owner@127.0.0.1:5432/$DB
S=/work/wt-h16-roles/.venv/bin/simhash-store
$S --db $O import /tmp/h16_big.jsonl --scheme multi-v2 --bulk 2>&1 | tail -2 &
sleep ${WAIT:-1.5}
psql -q -h 127.0.0.1 -U h16_sig -d $DB -Atc "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'h16_owner' AND datname = '$DB' AND state = 'active'"
wait
