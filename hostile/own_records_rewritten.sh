#!/bin/sh
# A writer granted ALL on the store's tables, and a member of pg_write_all_data (no grant at all), rewrite the
# store's own records: the block masks (searches miss), the wide masks, the scheme (add fingerprints with another).
# Before the fix every command below ran (exit 0) and answered wrongly; after, each is one line, exit 1.
DB=${DB:-h14r_db}
U=postgresql://h14r_owner@127.0.0.1:5432/$DB
SS=${SS:-$(dirname "$0")/../.venv/bin/simhash-store}
AS() { psql -h 127.0.0.1 -U "$1" -d $DB -qX -c "$2"; }
printf '{"key":"g0v1","text":"hello world this is a text"}\n' | $SS --db $U add --jsonl - >/dev/null
echo "== ALL granted to h14r_allw:"; AS h14r_owner "GRANT USAGE ON SCHEMA simhash TO h14r_allw; GRANT ALL ON ALL TABLES IN SCHEMA simhash TO h14r_allw"
$SS --db $U stats; echo "exit $?"
AS h14r_owner "REVOKE ALL ON ALL TABLES IN SCHEMA simhash FROM h14r_allw; GRANT SELECT, INSERT, UPDATE, DELETE ON simhash.documents TO h14r_allw; GRANT UPDATE (highest_retired_id) ON simhash.store_info TO h14r_allw"
echo "== narrowed grants:"; $SS --db $U stats >/dev/null; echo "exit $?"
echo "== UPDATE (scheme) on store_info:"; AS h14r_owner "GRANT UPDATE (scheme) ON simhash.store_info TO h14r_allw"
$SS --db $U stats; echo "exit $?"; AS h14r_owner "REVOKE UPDATE (scheme) ON simhash.store_info FROM h14r_allw"
echo "== pg_write_all_data deletes the masks of weight 1:"; AS h14r_pwad "DELETE FROM simhash.block_masks WHERE weight = 1"
$SS --db $U query -k 3 -f 0000000000000000; echo "exit $?"
AS root "INSERT INTO simhash.block_masks SELECT m, bit_count(m::bit(16)) FROM generate_series(0,65535) m ON CONFLICT DO NOTHING"
echo "== pg_write_all_data reweighs a wide mask:"; AS h14r_pwad "UPDATE simhash.wide_masks SET weight = 6 WHERE mask = 1"
$SS --db $U query -k 3 -f 0000000000000000; echo "exit $?"; AS root "UPDATE simhash.wide_masks SET weight = 1 WHERE mask = 1"
ORIG=$(psql -h 127.0.0.1 -U root -d $DB -qXAt -c "SELECT scheme FROM simhash.store_info")
echo "== pg_write_all_data writes scheme {\"name\": \"zz\"}:"; AS h14r_pwad "UPDATE simhash.store_info SET scheme = '{\"name\": \"zz\"}'"
printf '{"key":"x","text":"hello"}\n' | $SS --db $U add --jsonl -; echo "exit $?"
echo "== pg_write_all_data sets ngram 3 in the multi-v2 record:"
AS h14r_pwad "UPDATE simhash.store_info SET scheme = jsonb_set('$ORIG'::jsonb, '{ngram}', '3')"
printf '{"key":"x","text":"hello"}\n' | $SS --db $U add --jsonl -; echo "exit $?"
AS root "UPDATE simhash.store_info SET scheme = '$ORIG'"
