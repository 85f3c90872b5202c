#!/bin/sh
# A writer granted UPDATE on store_info (ALL TABLES IN SCHEMA simhash, or pg_write_all_data) rewrites the
# store's own record: the scheme (new documents are then fingerprinted with another scheme's defaults,
# silently), the cluster distance (64: every clustered add compares with every document), the keep policy.
DB=${DB:-h13r_db2}
U=postgresql://h13r_owner@127.0.0.1:5432/$DB
SS=${SS:-/work/wt-h13r-roles/.venv/bin/simhash-store}
psql -h 127.0.0.1 -U h13r_writer -d $DB -c "UPDATE simhash.store_info SET scheme = '{\"name\": \"zz\"}', cluster_max_distance = 64"
echo '{"id":"x1","text":"hello world, some words here"}' | $SS --db $U add --jsonl - --key-field id --text-field text; echo "exit $?"
$SS --db $U stats 2>&1 | grep -E "scheme|cluster max"
