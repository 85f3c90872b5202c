#!/bin/sh
# A writer granted DML on ALL TABLES IN SCHEMA simhash (or a member of pg_write_all_data) deletes the
# search's block masks: the owner's query (and add --skip-near-duplicates, dups) then silently miss
# near duplicates. g0v1 is 19398d943d57b7ec; the query is 4 bits from it, one in each 16-bit block.
DB=${DB:-h13r_db}
U=postgresql://h13r_owner@127.0.0.1:5432/$DB
SS=${SS:-/work/wt-h13r-roles/.venv/bin/simhash-store}
echo "before:"; $SS --db $U query -k 7 -f 19388d953d56b7ed 2>&1 | grep "g0v1"
psql -h 127.0.0.1 -U h13r_allw -d $DB -c "CREATE TABLE IF NOT EXISTS h13r_masks AS SELECT * FROM simhash.block_masks" -c "DELETE FROM simhash.block_masks WHERE weight > 0"
echo "after:"; $SS --db $U query -k 7 -f 19388d953d56b7ed 2>&1 | grep "g0v1"; echo "exit $?"
psql -h 127.0.0.1 -U root -d $DB -q -c "INSERT INTO simhash.block_masks SELECT * FROM h13r_masks WHERE weight > 0" -c "DROP TABLE h13r_masks"
