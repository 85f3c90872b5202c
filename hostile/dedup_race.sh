#!/bin/sh
# A writer holds documents (an open transaction that inserted one of the keys the owner's dedup into an
# empty store is about to write) past the decided-documents lock wait, then commits while the owner's COPY
# waits on that key.
DB=h13r_db2
R="psql -h 127.0.0.1 -U root -q"
$R -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" 2>/dev/null
$R -d $DB -c "GRANT CREATE ON DATABASE $DB TO h13r_owner; REVOKE CREATE ON SCHEMA public FROM PUBLIC"
U=postgresql://h13r_owner@127.0.0.1:5432/$DB
SS=${SS:-/work/wt-h13r-roles/.venv/bin/simhash-store}
$SS --db $U init >/dev/null
psql -h 127.0.0.1 -U h13r_owner -d $DB -q -c "GRANT USAGE ON SCHEMA simhash TO h13r_writer; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA simhash TO h13r_writer; GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA simhash TO h13r_writer"
( printf "BEGIN;\nINSERT INTO simhash.documents (key, fingerprint) VALUES ('g5v1', 5);\nSELECT pg_sleep(6);\nCOMMIT;\n" | psql -h 127.0.0.1 -U h13r_writer -d $DB -q ) &
sleep 1
rm -f /tmp/h13r_out.jsonl
$SS --db $U dedup /tmp/h13r_data.jsonl --key-field id --text-field text -o /tmp/h13r_out.jsonl -q; echo "exit $?"
wait
psql -h 127.0.0.1 -U h13r_owner -d $DB -Atc "select count(*) from simhash.documents"
wc -l /tmp/h13r_out.jsonl
