#!/bin/sh
# A member of pg_write_all_data deletes the one row of simhash.store_info under a zh-jieba-v1 store: the
# owner's next add (no --scheme) recorded multi-v2 and fingerprinted with it, silently. Now one line.
DB=${DB:-h14r_db2}
U=postgresql://h14r_owner@127.0.0.1:5432/$DB
SS=${SS:-$(dirname "$0")/../.venv/bin/simhash-store}
printf '{"key":"z1","text":"Beijing news today"}\n' | $SS --db $U add --scheme zh-jieba-v1 --jsonl -
psql -h 127.0.0.1 -U h14r_pwad -d $DB -qX -c "DELETE FROM simhash.store_info"
printf '{"key":"z2","text":"Beijing news today"}\n' | $SS --db $U add --jsonl -; echo "exit $?"
$SS --db $U stats | grep scheme
