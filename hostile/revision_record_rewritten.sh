#!/bin/sh
# A member of pg_write_all_data (or a writer granted UPDATE on all the store's tables) rewrites the
# store's revision record; the owner's next command says to run init, and init ran revision 0011 again.
DB=${DB:-h13r_db2}
U=postgresql://h13r_owner@127.0.0.1:5432/$DB
SS=${SS:-/work/wt-h13r-roles/.venv/bin/simhash-store}
psql -h 127.0.0.1 -U h13r_allw -d $DB -c "UPDATE simhash.alembic_version SET version_num = '0010'"
$SS --db $U stats; echo "exit $?"
$SS --db $U init 2>&1 | tail -3; echo "exit $?"
psql -h 127.0.0.1 -U root -d $DB -qc "UPDATE simhash.alembic_version SET version_num = '0013'"
