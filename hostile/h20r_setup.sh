#!/bin/sh
# Playground for the pass as other roles: database h20r_db owned by h20r_dbowner (not the
# store's owner), store owned by h20r_owner (no superuser), and the other roles.
P="psql -h 127.0.0.1 -U root -v ON_ERROR_STOP=1 -q"
$P -d postgres <<SQL
DROP DATABASE IF EXISTS h20r_db;
DROP DATABASE IF EXISTS h20r_copy;
DO \$\$ DECLARE r text; BEGIN
  FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'h20r\_%' LOOP EXECUTE format('DROP ROLE %I', r); END LOOP;
END \$\$;
CREATE ROLE h20r_owner LOGIN;
CREATE ROLE h20r_dbowner LOGIN;
CREATE ROLE h20r_reader LOGIN;
CREATE ROLE h20r_writeall LOGIN IN ROLE pg_write_all_data;
CREATE ROLE h20r_readall LOGIN IN ROLE pg_read_all_data;
CREATE ROLE h20r_monitor LOGIN IN ROLE pg_monitor;
CREATE ROLE h20r_signal LOGIN IN ROLE pg_signal_backend;
CREATE ROLE h20r_app LOGIN;
CREATE ROLE h20r_plain LOGIN;
CREATE DATABASE h20r_db OWNER h20r_dbowner;
GRANT CREATE ON DATABASE h20r_db TO h20r_owner;
SQL
