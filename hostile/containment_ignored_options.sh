#!/bin/bash
# dups --containment -o FILE and query --containment ... -o FILE, --jsonl, --key, -k, --limit were
# accepted and ignored: FILE kept an earlier run's content, exit 0. Usage: DB_URL of a store made
# with init --segments.
S=${S:-$(dirname "$0")/../.venv/bin/simhash-store}
dir=$(mktemp -d)
echo '{"inner": "yesterday", "outer": "old"}' > "$dir/pairs.jsonl"
"$S" --db "$1" dups --containment -o "$dir/pairs.jsonl"; echo "exit $?"; cat "$dir/pairs.jsonl"
printf '{"key":"s","text":"some text"}\n' > "$dir/in.jsonl"
"$S" --db "$1" query --containment --jsonl "$dir/in.jsonl"; echo "exit $? (nothing looked up before the fix)"
rm -rf "$dir"
