#!/bin/sh
# Roles and a database for the h18r hostile pass (run as root, a superuser of the local PostgreSQL 15).
set -e
P="psql -h 127.0.0.1 -U root -v ON_ERROR_STOP=1 -q"
$P postgres <<SQL
DROP DATABASE IF EXISTS h18r_db;
DO \$\$ DECLARE r text; BEGIN
  FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'h18r_%' LOOP EXECUTE format('DROP ROLE %I', r); END LOOP;
END \$\$;
CREATE ROLE h18r_owner LOGIN;
CREATE ROLE h18r_creator LOGIN;     -- CREATE on the database
CREATE ROLE h18r_reader LOGIN;      -- grant-read
CREATE ROLE h18r_wall LOGIN;        -- pg_write_all_data + pg_read_all_data
CREATE ROLE h18r_plain LOGIN;       -- nothing but CONNECT (PUBLIC)
CREATE ROLE h18r_dbowner LOGIN;     -- owns the database, not the store
GRANT pg_write_all_data, pg_read_all_data TO h18r_wall;
CREATE DATABASE h18r_db OWNER h18r_dbowner;
GRANT CREATE ON DATABASE h18r_db TO h18r_owner, h18r_creator;
SQL
