#!/bin/sh
# add --metadata-field on a rerun of records already stored (or with a field corrected, the text
# the same): reported "unchanged", the metadata never stored. Usage: hostile/metadata_on_a_rerun.sh DB_URL
set -e
dir=$(mktemp -d)
t='中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验及实际情况，制定本法。'
printf '{"key": "a", "text": "%s", "url": "http://old"}\n' "$t" > "$dir/m1.jsonl"
printf '{"key": "a", "text": "%s", "url": "http://new"}\n' "$t" > "$dir/m2.jsonl"
simhash-store --db "$1" add --jsonl "$dir/m1.jsonl"
simhash-store --db "$1" add --jsonl "$dir/m1.jsonl" --metadata-field url
psql "$1" -Atc "select key, metadata from simhash.documents where key = 'a'"   # must hold http://old
simhash-store --db "$1" add --jsonl "$dir/m2.jsonl" --metadata-field url
psql "$1" -Atc "select key, metadata from simhash.documents where key = 'a'"   # must hold http://new
rm -r "$dir"
