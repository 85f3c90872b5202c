#!/bin/bash
# Interrupt dedup -o (each output format) with SIGINT, SIGTERM, SIGKILL at several moments: no file
# under the output's name but a whole one, no .partial or .lock left (but after SIGKILL, until the
# next run), and the re-run's output equal to an uninterrupted run's. Usage: DB_NAME_PREFIX INPUT
S=${S:-$(dirname "$0")/../.venv/bin/simhash-store}
P=$1; F=$2
dir=$(mktemp -d)
set -m
fresh() { psql -qh 127.0.0.1 -U root -d postgres -c "drop database if exists ${P}_x" -c "create database ${P}_x" >/dev/null; }
for fmt in jsonl parquet csv; do
  fresh; "$S" --db "postgresql://root@127.0.0.1:5432/${P}_x" dedup "$F" -o "$dir/ref.$fmt" -q -j 1
  for sig in INT TERM KILL; do
    for t in 1 2.5 4; do
      fresh; rm -f "$dir/out.$fmt"
      "$S" --db "postgresql://root@127.0.0.1:5432/${P}_x" dedup "$F" -o "$dir/out.$fmt" -q -j 1 2>"$dir/err" &
      pid=$!; sleep "$t"; kill -$sig $pid 2>/dev/null; wait $pid; rc=$?
      left=$(ls -A "$dir" | grep -v "^ref\.\|^err$" | tr '\n' ' ')
      "$S" --db "postgresql://root@127.0.0.1:5432/${P}_x" dedup "$F" -o "$dir/out.$fmt" -q -j 1 2>>"$dir/err"; rerun=$?
      same=$(cmp -s "$dir/ref.$fmt" "$dir/out.$fmt" && echo same || echo DIFFERENT)
      echo "$fmt $sig t=$t rc=$rc left=[$left] rerun=$rerun $same $(head -c 150 "$dir/err" | tr '\n' '|')"
    done
  done
done
psql -qh 127.0.0.1 -U root -d postgres -c "drop database if exists ${P}_x"
rm -rf "$dir"
