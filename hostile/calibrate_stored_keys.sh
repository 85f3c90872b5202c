#!/bin/sh
# calibrate without PATHS reads the files stored keys name: keys /dev/zero and a FIFO hung it (12 GB after 30 s).
S=${S:-simhash-store}
mkfifo /tmp/h15-cal.fifo
t='alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau'
printf '{"key":"/dev/zero","text":"%s one"}\n{"key":"/tmp/h15-cal.fifo","text":"%s two"}\n' "$t" "$t" | $S add --jsonl - -q
timeout 30 $S calibrate --sample 2; echo "exit $? (124: hung)"
rm -f /tmp/h15-cal.fifo
