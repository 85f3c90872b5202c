#!/bin/sh
# The database's owner (not the store's) sets client_encoding for every session of its database.
# Before the fix: SQL_ASCII made psycopg read every text as bytes (every command a TypeError traceback,
# `query` called revision b'0013' a newer version's); LATIN1 made Chinese keys a UnicodeEncodeError.
# Needs hostile/h18r_setup.sh and a store: simhash-store --db $O init && add examples/corpus.
O=postgresql://h18r_owner@127.0.0.1:5432/h18r_db
for enc in SQL_ASCII LATIN1; do
  psql -h 127.0.0.1 -U h18r_dbowner h18r_db -qc "ALTER DATABASE h18r_db SET client_encoding = '$enc'"
  for c in stats "query examples/query/library-repost.txt" "dups -k 40" "remove nosuch"; do
    echo "== $enc: $c"; simhash-store --db $O $c 2>&1 | tail -1
  done
done
psql -h 127.0.0.1 -U h18r_dbowner h18r_db -qc "ALTER DATABASE h18r_db RESET ALL"
