#!/bin/bash
# Row security on simhash.documents hiding some rows from a writer (a policy of the owner's own):
# the writer's --skip-near-duplicates stores a copy of a hidden document, silently.
DB=${1:-h16r_b}
O=postgresql://h16_owner@127.0.0.1:5432/$DB
W=postgresql://h16_writer@127.0.0.1:5432/$DB
S=/work/wt-h16-roles/.venv/bin/simhash-store
export SIMHASH_STORE_TRUSTED_OWNERS=h16_owner
echo '{"key": "hidden-1", "text": "the quick brown fox jumps over the lazy dog again and again in the park today"}' | $S --db $O add --jsonl - -q
psql -q -h 127.0.0.1 -U h16_owner -d $DB -c "CREATE POLICY h16_tenant ON simhash.documents USING (key NOT LIKE 'hidden-%'); ALTER TABLE simhash.documents ENABLE ROW LEVEL SECURITY"
echo '{"key": "copy-1", "text": "the quick brown fox jumps over the lazy dog again and again in the park today"}' | $S --db $W add --jsonl - --skip-near-duplicates
$S --db $W query --jsonl - <<< '{"key": "q", "text": "the quick brown fox jumps over the lazy dog again and again in the park today"}'
psql -q -h 127.0.0.1 -U h16_owner -d $DB -c "DROP POLICY h16_tenant ON simhash.documents; ALTER TABLE simhash.documents DISABLE ROW LEVEL SECURITY"
$S --db $O remove hidden-1 copy-1
