#!/bin/sh
# A member of pg_write_all_data (with pg_read_all_data, for its WHERE) sets every representative's
# keep value to a 20 MB string (9 MB in the table for 40, compressed); the owner's next one-document
# add read them all: 1.8 GB and 9-11 s before the fix (keep values longer than can compare are
# never sent now). Run hostile/h20r_setup.sh first; needs `simhash-store` on PATH.
set -e
O=postgresql://h20r_owner@127.0.0.1:5432/h20r_db
W=postgresql://h20r_writeall@127.0.0.1:5432/h20r_db
psql -h 127.0.0.1 -U root -d postgres -qc "GRANT pg_read_all_data TO h20r_writeall"
python hostile/h20r_records.py /tmp/h20r_recs.jsonl
simhash-store init --db $O >/dev/null
simhash-store dedup --db $O --keep field:published_at:desc /tmp/h20r_recs.jsonl -o /tmp/h20r_out.jsonl
psql "$W" -c "UPDATE simhash.documents SET keep_value = to_jsonb(repeat('x', 20000000) || id) WHERE id IN (SELECT representative_id FROM simhash.cluster_heads)"
echo '{"key":"new1","text":"完全不同的一段文字，讲述了一个关于山川河流的故事，以及人们如何在其中生活和劳作。","published_at":"2025-01-01"}' > /tmp/h20r_one.jsonl
/usr/bin/time -f "%e s, %M KB peak" simhash-store add --db $O /tmp/h20r_one.jsonl
/usr/bin/time -f "%e s, %M KB peak" simhash-store recluster --db $O
