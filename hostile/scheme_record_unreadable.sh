#!/bin/sh
# A member of pg_write_all_data (no grant the schema check sees, no SELECT needed) writes a scheme
# record Python cannot read: every command of the owner ended in a traceback.
# Run hostile/setup.sh first; run from a directory holding new1.jsonl (any JSONL of key/text).
export SIMHASH_STORE_URL=postgresql://h15r_owner@127.0.0.1:5432/h15r_db
S=${S:-.venv/bin/simhash-store}
W="psql -h 127.0.0.1 -U h15r_wad -d h15r_db -q -c"
R="psql -h 127.0.0.1 -U root -d h15r_db -q -c"
$R "CREATE TABLE IF NOT EXISTS public.h15_saved AS SELECT * FROM simhash.store_info"
for v in "'{\"name\": \"multi-v2\", \"version\": ' || repeat('9',5000) || '}'" \
         "'{\"name\": ' || repeat('[', 5000) || repeat(']', 5000) || '}'" \
         "'{\"name\": \"mine\", \"tokenizer\": \"jieba\", \"user_dict\": 5, \"user_dict_sha256\": \"' || repeat('a',64) || '\"}'" \
         "'{\"name\": \"mine\", \"tokenizer\": \"jieba\", \"top_k\": 2.5}'"; do
  $W "UPDATE simhash.store_info SET scheme = ($v)::jsonb"
  for c in stats "query -f 0000000000000005" "add --jsonl new1.jsonl"; do $S $c 2>&1 | tail -2; done
done
$R "UPDATE simhash.store_info s SET scheme = h.scheme FROM public.h15_saved h"
# before: ValueError (4300 digits), RecursionError, TypeError tracebacks; after: one line each
