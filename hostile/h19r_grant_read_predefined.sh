#!/bin/sh
# grant-read of PostgreSQL's predefined roles themselves, whose members grant-read refuses as readers.
U=postgresql://h19r_owner@127.0.0.1:5432/${DB:-h19r_db}
for r in pg_signal_backend pg_execute_server_program pg_database_owner pg_checkpoint pg_stat_scan_tables public; do
  echo "== $r: $(.venv/bin/simhash-store --db $U grant-read "$r" 2>&1 | tail -1 | cut -c1-250)"
done
