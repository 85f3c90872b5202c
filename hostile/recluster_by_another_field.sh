#!/bin/bash
# recluster --keep field:y on a store kept by field:x ranked the documents by the stored x values,
# and recorded field:y. Usage: recluster_by_another_field.sh DB_URL (a database without a store)
S=${S:-$(dirname "$0")/../.venv/bin/simhash-store}
dir=$(mktemp -d)
T="中华人民共和国保护人民的合法权益，维护社会秩序，保障公民的基本权利和自由。"
printf '{"key":"a","text":"%s","x":1,"y":3}\n{"key":"b","text":"%s（转载）","x":2,"y":1}\n' "$T" "$T" > "$dir/in.jsonl"
"$S" --db "$1" dedup "$dir/in.jsonl" -o "$dir/out.jsonl" --keep field:x
"$S" --db "$1" recluster --keep field:y; echo "exit $?"
"$S" --db "$1" query --key b --json   # before the fix: a stays the representative although y says b
rm -rf "$dir"
