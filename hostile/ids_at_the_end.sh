#!/bin/sh
# A writer (UPDATE on store_info, or INSERT on documents) leaves no ids below 2**63 - 1: the owner's add,
# dedup and import into the store.
DB=${DB:-h13r_db2}
U=postgresql://h13r_owner@127.0.0.1:5432/$DB
SS=${SS:-/work/wt-h13r-roles/.venv/bin/simhash-store}
psql -h 127.0.0.1 -U h13r_writer -d $DB -c "UPDATE simhash.store_info SET highest_retired_id = 9223372036854775800"
psql -h 127.0.0.1 -U h13r_writer -d $DB -c "INSERT INTO simhash.documents (id, key, fingerprint) VALUES (9223372036854775807, 'zz', 7)"
$SS --db $U add --jsonl /tmp/h13r_ten.jsonl --key-field id --text-field text 2>&1 | tail -2; echo "exit $?"
$SS --db $U dedup /tmp/h13r_ten.jsonl --key-field id --text-field text -o /tmp/h13r_out2.jsonl 2>&1 | tail -2; echo "exit $?"
printf 'key,fingerprint\nimp1,00000000000000ff\n' > /tmp/h13r_imp.csv
$SS --db $U import /tmp/h13r_imp.csv 2>&1 | tail -2; echo "exit $?"
