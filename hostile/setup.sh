#!/bin/sh
# Roles and database for the hostile pass over roles (thirteenth round). Run as root (superuser via trust).
P="psql -h 127.0.0.1 -U root -v ON_ERROR_STOP=1 -q"
$P -d postgres <<'SQL'
DROP DATABASE IF EXISTS h13r_db WITH (FORCE);
DO $$ DECLARE r text; BEGIN
  FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'h13r\_%' LOOP EXECUTE format('DROP ROLE %I', r); END LOOP; END $$;
CREATE ROLE h13r_owner LOGIN;
CREATE ROLE h13r_evil LOGIN;      -- plain login with CREATE on the database
CREATE ROLE h13r_reader LOGIN;    -- grant-read reader
CREATE ROLE h13r_writer LOGIN;    -- writer granted DML on the store's tables
CREATE ROLE h13r_allw LOGIN IN ROLE pg_write_all_data, pg_read_all_data, pg_monitor;
CREATE DATABASE h13r_db;
SQL
$P -d h13r_db <<'SQL'
GRANT CREATE ON DATABASE h13r_db TO h13r_owner, h13r_evil, h13r_writer, h13r_allw;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
SQL
