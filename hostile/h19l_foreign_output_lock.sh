#!/bin/sh
# As root: h19l_mallory leaves a lock file of hers (0666, not held) at /tmp/h19l_lock/.out.jsonl.lock.
# h19l_victim starts `dedup in2.jsonl -o out.jsonl` there (it takes her lock file); mallory removes
# it; a second run of the victim's writing the same output makes its own lock, goes ahead, and
# removes the first run's temporary file: before the fix the first run failed at its end, its output
# lost. After it, the first run is refused in one line before any work.
set -u
D=/tmp/h19l_lock
rm -rf "$D"; mkdir -m 1777 "$D"
for s in 2 3; do
    /usr/bin/python3 -c "
import json, random
random.seed($s)
words = [''.join(random.choice('abcdefghij') for _ in range(5)) for _ in range(5000)]
with open('$D/in$s.jsonl', 'w') as f:
    for i in range(40000):
        f.write(json.dumps({'key': f'k$s-{i}', 'text': ' '.join(random.choice(words) for _ in range(60))}) + '\n')
"
    chmod 644 "$D/in$s.jsonl"
done
runuser -u h19l_mallory -- sh -c "touch $D/.out.jsonl.lock; chmod 666 $D/.out.jsonl.lock"
victim() {
    (cd "$D" && runuser -u h19l_victim -- env -i HOME=/home/h19l_victim PATH=/home/h19l_victim/venv/bin:/usr/bin:/bin \
        simhash-store dedup "$1" -o out.jsonl)
}
victim in2.jsonl > "$D.A" 2>&1 &
A=$!
sleep 4
runuser -u h19l_mallory -- rm -f "$D/.out.jsonl.lock"
victim in3.jsonl > "$D.B" 2>&1 &
B=$!
wait $A; echo "first run: exit $?: $(tail -1 "$D.A")"
wait $B; echo "second run: exit $?: $(tail -1 "$D.B")"
rm -rf "$D" "$D.A" "$D.B"
