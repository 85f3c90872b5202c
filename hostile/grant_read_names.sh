#!/bin/sh
# grant-read of a role whose name needs quotes; run as root with PostgreSQL 15 on 127.0.0.1:5432 (trust).
set -x
S=${S:-/work/wt-hostile8-roles/.venv/bin/simhash-store}
P="psql -h 127.0.0.1 -U root"
$P -d postgres -c "create database h8_names"
$P -d h8_names -c 'create role h8n_owner login; grant create on database h8_names to h8n_owner; create role "NewsReader" login'
export SIMHASH_STORE_URL=postgresql://h8n_owner@127.0.0.1:5432/h8_names
$S init
$S grant-read NewsReader                     # before the fix: UndefinedObject traceback
$P -d h8_names -c 'create role newsreader login' \
   -c 'ALTER DEFAULT PRIVILEGES FOR ROLE h8n_owner IN SCHEMA simhash GRANT INSERT, DELETE ON TABLES TO "NewsReader"'
$S grant-read NewsReader                     # before the fix: "it cannot write", exit 0
$P -d postgres -c "drop database h8_names with (force)"
$P -d postgres -c 'drop role h8n_owner' -c 'drop role "NewsReader"' -c 'drop role newsreader'
