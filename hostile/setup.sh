#!/bin/bash
# Roles and a store owned by a non-superuser, for the sixteenth roles pass. Usage: hostile/setup.sh DB
set -e
DB=${1:-h16r_b}
P="psql -v ON_ERROR_STOP=1 -q -h 127.0.0.1 -U root"
$P -d postgres -c "DROP DATABASE IF EXISTS $DB"
for r in h16_owner h16_writer h16_reader h16_pwad h16_crt h16_sig h16_prad; do
  $P -d postgres -c "DO \$\$BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname='$r') THEN EXECUTE 'DROP OWNED BY $r CASCADE'; EXECUTE 'DROP ROLE $r'; END IF; END\$\$" 2>/dev/null || true
done
for r in h16_owner h16_writer h16_reader h16_pwad h16_crt h16_sig h16_prad; do $P -d postgres -c "CREATE ROLE $r LOGIN"; done
$P -d postgres -c "CREATE DATABASE $DB OWNER h16_owner"
$P -d postgres -c "GRANT pg_write_all_data TO h16_pwad; GRANT pg_signal_backend TO h16_sig; GRANT pg_read_all_data TO h16_prad"
$P -d $DB -c "GRANT CREATE ON DATABASE $DB TO h16_crt"
O=postgresql://h16_owner@127.0.0.1:5432/$DB
S=/work/wt-h16-roles/.venv/bin/simhash-store
$S --db $O init --segments
$P -d $DB -c "GRANT USAGE ON SCHEMA simhash TO h16_writer; GRANT SELECT ON ALL TABLES IN SCHEMA simhash TO h16_writer;
GRANT INSERT, UPDATE, DELETE ON simhash.documents, simhash.segments, simhash.cluster_heads TO h16_writer;
GRANT INSERT, UPDATE (highest_retired_id, cluster_max_distance, keep_policy) ON simhash.store_info TO h16_writer;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA simhash TO h16_writer"
$S --db $O grant-read h16_reader
echo ok
