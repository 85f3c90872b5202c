#!/bin/sh
# dedup - -o IN < IN replaced IN with the records kept (exit 0).
set -e
S=${S:-simhash-store}
cp "$1" /tmp/h15-in.jsonl
$S dedup - -o /tmp/h15-in.jsonl < /tmp/h15-in.jsonl; echo "exit $?"
wc -l "$1" /tmp/h15-in.jsonl
