#!/bin/sh
# Throwaway database and roles for the h15 roles pass. Re-run to reset.
P="psql -h 127.0.0.1 -U root -d postgres -v ON_ERROR_STOP=1 -q"
$P -c "DROP DATABASE IF EXISTS h15r_db"
for r in h15r_owner h15r_writer h15r_wad h15r_plain h15r_reader h15r_rad; do
  $P -c "DROP ROLE IF EXISTS $r"
  $P -c "CREATE ROLE $r LOGIN"
done
$P -c "CREATE DATABASE h15r_db"
$P -c "GRANT CREATE ON DATABASE h15r_db TO h15r_owner, h15r_plain"
$P -c "GRANT pg_write_all_data TO h15r_wad"
$P -c "GRANT pg_read_all_data TO h15r_rad"
