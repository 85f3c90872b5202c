#!/bin/sh
# A writer granted UPDATE (keep_policy, cluster_max_distance) on store_info (what its recluster writes) writes
# values no recluster writes: keep policy 'zz' made the owner's add a ValueError traceback; a cluster distance
# of -5 was used as it was (every new document its own cluster, silently). Now one line naming the repair.
DB=${DB:-h14r_db}
U=postgresql://h14r_owner@127.0.0.1:5432/$DB
SS=${SS:-$(dirname "$0")/../.venv/bin/simhash-store}
psql -h 127.0.0.1 -U h14r_owner -d $DB -qX -c "GRANT USAGE ON SCHEMA simhash TO h14r_allw; GRANT UPDATE (keep_policy, cluster_max_distance, highest_retired_id) ON simhash.store_info TO h14r_allw"
$SS --db $U recluster -k 3
psql -h 127.0.0.1 -U h14r_allw -d $DB -qX -c "UPDATE simhash.store_info SET keep_policy = 'zz'"
printf '{"key":"c1","text":"hello world two"}\n' | $SS --db $U add --jsonl - 2>&1 | tail -2; echo "exit $?"
psql -h 127.0.0.1 -U h14r_allw -d $DB -qX -c "UPDATE simhash.store_info SET keep_policy = NULL, cluster_max_distance = -5"
printf '{"key":"c2","text":"hello world three"}\n' | $SS --db $U add --jsonl - 2>&1 | tail -2; echo "exit $?"
$SS --db $U recluster -k 3 --keep first
