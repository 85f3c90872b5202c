#!/bin/sh
# A member of pg_write_all_data (UPDATE on every sequence, no grant the schema check sees) sets the id
# sequence of a store that keeps no clusters back to the largest stored id, after the owner removed the
# document of the largest id: the owner's next add gave the removed document's id again, silently.
# Run hostile/setup.sh first.
export SIMHASH_STORE_URL=postgresql://h15r_owner@127.0.0.1:5432/h15r_db
S=${S:-.venv/bin/simhash-store}
Q="psql -h 127.0.0.1 -U root -d h15r_db -Atc"
printf '{"key":"a","text":"天地玄黄"}\n{"key":"b","text":"宇宙洪荒"}\n{"key":"c","text":"日月盈昃"}\n' | $S add --jsonl -
$S remove c
echo "removed c, id $($Q "SELECT highest_retired_id FROM simhash.store_info")"
psql -h 127.0.0.1 -U h15r_wad -d h15r_db -qc \
  "SELECT setval(pg_get_serial_sequence('simhash.documents', 'id'), (SELECT max(id) FROM simhash.documents))"
printf '{"key":"d","text":"辰宿列张"}\n' | $S add --jsonl -
echo "d took id $($Q "SELECT id FROM simhash.documents WHERE key = 'd'") (before: the id of c)"
