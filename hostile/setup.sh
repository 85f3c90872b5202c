#!/bin/sh
# Roles and a database for the fourteenth hostile pass over roles (dropped by hostile/teardown.sh).
DB=${DB:-h14r_db}
psql -h 127.0.0.1 -U root -d postgres -qX -c "DROP DATABASE IF EXISTS $DB"
for r in h14r_owner h14r_allw h14r_pwad; do psql -h 127.0.0.1 -U root -d postgres -qX -c "DROP ROLE IF EXISTS $r" 2>/dev/null; done
psql -h 127.0.0.1 -U root -d postgres -qX -c "CREATE ROLE h14r_owner LOGIN" -c "CREATE ROLE h14r_allw LOGIN" \
  -c "CREATE ROLE h14r_pwad LOGIN IN ROLE pg_write_all_data, pg_read_all_data" -c "CREATE DATABASE $DB OWNER h14r_owner"
