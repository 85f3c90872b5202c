#!/bin/sh
# A private PostgreSQL 15 with pg_stat_statements and log_statement = 'ddl' (port 55439), a store,
# grant-read --password as the superuser root, then a role in pg_read_all_stats reads the verifier.
set -e
D=/tmp/h9pg
mkdir -p $D && chown postgres $D
su postgres -c "/usr/lib/postgresql/15/bin/initdb -D $D/data -A trust -U root >/dev/null"
cat >> $D/data/postgresql.conf <<CONF
port = 55439
listen_addresses = '127.0.0.1'
unix_socket_directories = '$D'
shared_preload_libraries = 'pg_stat_statements'
log_statement = 'ddl'
CONF
su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D $D/data -l $D/log -w start"
P="psql -h 127.0.0.1 -p 55439 -U root -At"
$P -d postgres -c "create database st"
$P -d st -c "create extension pg_stat_statements" -c "create role mon login in role pg_read_all_stats" -c "create role victim login"
export SIMHASH_STORE_URL=postgresql://root@127.0.0.1:55439/st
simhash-store init
simhash-store grant-read victim --password >/dev/null
psql -h 127.0.0.1 -p 55439 -U mon -d st -Atc "select query from pg_stat_statements where query like '%SCRAM%'"
grep SCRAM $D/log || true
# before the fix: the ALTER ROLE ... PASSWORD 'SCRAM-SHA-256$...' in both; after: neither
su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D $D/data -m fast stop"
