#!/bin/sh
# Records named as a FIFO or a device: add/query/import/calibrate waited (FIFO) or read (/dev/zero) for ever.
S=${S:-simhash-store}
d=$(mktemp -d); mkfifo "$d/pipe.jsonl"; ln -s /dev/zero "$d/zero.jsonl"
timeout 20 $S add "$d/pipe.jsonl"; echo "exit $? (124: waited)"
timeout 20 $S import "$d/zero.jsonl" --scheme multi-v2; echo "exit $? (124: read for ever)"
rm -f "$d/pipe.jsonl" "$d/zero.jsonl"; rmdir "$d"
