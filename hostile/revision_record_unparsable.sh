#!/bin/sh
# A member of pg_write_all_data sets simhash.alembic_version to '' (or '@', '0013@'): Alembic reads the
# record as a revision expression, and every command ended in an AssertionError traceback.
# Run hostile/setup.sh and init the store first.
export SIMHASH_STORE_URL=postgresql://h15r_owner@127.0.0.1:5432/h15r_db
S=${S:-.venv/bin/simhash-store}
for v in "" "@" "0013@" "head" "0012@head"; do
  psql -h 127.0.0.1 -U h15r_wad -d h15r_db -qc "UPDATE simhash.alembic_version SET version_num = '$v'"
  echo "== [$v]"; $S stats 2>&1 | tail -1 | cut -c1-160; $S init 2>&1 | tail -1 | cut -c1-160
done
psql -h 127.0.0.1 -U h15r_wad -d h15r_db -qc "UPDATE simhash.alembic_version SET version_num = '0013'"
