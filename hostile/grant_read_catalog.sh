#!/bin/sh
# grant-read accepted a role that reads pg_authid (SCRAM verifiers) or server files through direct
# grants on pg_catalog. Usage: sh hostile/grant_read_catalog.sh postgresql://root@127.0.0.1:5432/DB (a store)
set -x
U=$1
psql "$U" -qc "create role h10_a login; grant select on pg_catalog.pg_authid to h10_a" \
  -c "create role h10_b login; grant execute on function pg_catalog.pg_read_file(text) to h10_b" \
  -c "create role h10_pw password 'not-a-real-secret'"
simhash-store --db "$U" grant-read h10_a   # before the fix: "... it cannot write", exit 0
simhash-store --db "$U" grant-read h10_b
psql "${U%/*}/$(basename "$U")" -U h10_a -qAtc "select rolname, left(rolpassword, 14) from pg_authid where rolpassword is not null"
psql "$U" -qc "drop owned by h10_a, h10_b cascade" -c "drop role h10_a" -c "drop role h10_b" -c "drop role h10_pw"
