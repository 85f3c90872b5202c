#!/bin/sh
for db in h14r_db h14r_db2; do psql -h 127.0.0.1 -U root -d postgres -qX -c "DROP DATABASE IF EXISTS $db"; done
for r in h14r_app h14r_owner h14r_allw h14r_pwad; do psql -h 127.0.0.1 -U root -d postgres -qX -c "DROP ROLE IF EXISTS $r"; done
