#!/bin/bash
# `dedup IN -o /dev/stdout --format jsonl > FILE` as root replaced the machine's /dev/stdout (a link to
# /proc/self/fd/1) with a regular file holding the output; FILE stayed empty. Reproduced here with the
# same link in a scratch directory (never run it on /dev itself). Usage: output_through_proc_link.sh DB_URL
S=${S:-$(dirname "$0")/../.venv/bin/simhash-store}
dir=$(mktemp -d)
printf '{"key":"a","text":"今天天气很好我们去公园散步吧"}\n{"key":"b","text":"明天下雨我们在家里看书学习"}\n' > "$dir/in.jsonl"
ln -s /proc/self/fd/1 "$dir/stdout.jsonl"
"$S" --db "$1" dedup "$dir/in.jsonl" -o "$dir/stdout.jsonl" > "$dir/captured"; echo "exit $?"
ls -l "$dir/stdout.jsonl"; echo "captured: $(wc -c < "$dir/captured") bytes"
rm -rf "$dir"
