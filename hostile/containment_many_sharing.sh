#!/bin/sh
# Hostile input: 3,000 records of one identical 120-word paragraph (2.4 MB JSONL) into a store
# with segments, then `dups --containment`. Every two documents hold each other: 4.5 million
# pairs, none grouped (plain `dups` prints identical fingerprints as one group line).
# Measured: killed by timeout at 300 s with 2.07 million lines (55 MB) written, 3.0 GB RSS.
# Usage: hostile/containment_many_sharing.sh postgresql://.../EMPTY_DB
set -e
simhash-store init --segments --db "$1"
python3 -c "
import json, random
r = random.Random(1)
para = ' '.join(f'p{r.randrange(9000)}' for _ in range(120))
for i in range(3000): print(json.dumps({'key': f's{i}', 'text': para}))
" > "${TMPDIR:-/tmp}/seg3k.jsonl"
simhash-store add --jsonl "${TMPDIR:-/tmp}/seg3k.jsonl" -q --db "$1"
/usr/bin/time -f "dups --containment: %e s, %M KB" timeout 300 simhash-store dups --containment --db "$1" | wc -l
