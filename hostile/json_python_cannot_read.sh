#!/bin/sh
# A writer (granted writes on simhash.documents, as docs/operations.md says) stores a keep value and
# metadata Python cannot read: an integer of 5,000 digits, or JSON nested 5,000 deep (jsonb takes both).
# Before: the owner's add into the clustered store and every recluster ended in a ValueError or
# RecursionError traceback (the representatives' keep values are read on every clustered write),
# and Store.get in one. Run hostile/setup.sh, then grant h15r_writer the writer grants (tests/roles.py).
export SIMHASH_STORE_URL=postgresql://h15r_owner@127.0.0.1:5432/h15r_db
S=${S:-.venv/bin/simhash-store}
printf '{"key":"a","text":"天地玄黄宇宙洪荒日月盈昃辰宿列张"}\n' > /tmp/h15r_a.jsonl
printf '{"key":"b","text":"天地玄黄宇宙洪荒日月盈昃辰宿列张寒来"}\n' > /tmp/h15r_b.jsonl
$S add --jsonl /tmp/h15r_a.jsonl && $S recluster -k 11
for v in "repeat('7', 5000)" "repeat('[', 5000) || repeat(']', 5000)"; do
  psql -h 127.0.0.1 -U h15r_writer -d h15r_db -q -c \
    "UPDATE simhash.documents SET keep_value = ($v)::jsonb, metadata = ('[' || $v || ']')::jsonb"
  $S add --jsonl /tmp/h15r_b.jsonl 2>&1 | tail -2
  $S recluster --keep longest 2>&1 | tail -2
  .venv/bin/python -c "
from simhash_store.store import Store
try: Store('$SIMHASH_STORE_URL').get('a')
except Exception as e: print(type(e).__name__, str(e)[:120])"
  $S remove b >/dev/null
done
rm -f /tmp/h15r_a.jsonl /tmp/h15r_b.jsonl
