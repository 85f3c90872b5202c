#!/bin/sh
# A member of pg_write_all_data empties simhash.alembic_version, or adds a second row: the owner's add
# and init ended in a traceback (DuplicateTable: the store taken for a new one; Alembic's "Requested
# revision 0013 overlaps with other requested revisions 0012"). Now one line, nothing changed.
DB=${DB:-h14r_db}
U=postgresql://h14r_owner@127.0.0.1:5432/$DB
SS=${SS:-$(dirname "$0")/../.venv/bin/simhash-store}
AS() { psql -h 127.0.0.1 -U "$1" -d $DB -qX -c "$2"; }
printf '{"key":"a","text":"hello world"}\n' | $SS --db $U add --jsonl - >/dev/null
AS h14r_pwad "DELETE FROM simhash.alembic_version"
printf '{"key":"y","text":"hello there"}\n' | $SS --db $U add --jsonl - 2>&1 | tail -2; echo "exit $?"
AS h14r_pwad "INSERT INTO simhash.alembic_version VALUES ('0012'), ('0013')"
$SS --db $U init 2>&1 | tail -2; echo "exit $?"
AS root "DELETE FROM simhash.alembic_version WHERE version_num <> '0013'"
