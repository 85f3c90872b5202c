#!/bin/bash
# A policy on simhash.documents, made by a superuser at another role's request, whose expression calls
# that role's function: it runs in every session that reads or writes the table under row security
# (a writer's, a reader's; the owner's with FORCE ROW LEVEL SECURITY), with that session's rights.
DB=${1:-h16r_b}
R="psql -q -h 127.0.0.1 -U root -d $DB"
psql -q -h 127.0.0.1 -U h16_crt -d $DB <<'SQL'
CREATE SCHEMA IF NOT EXISTS app;
CREATE TABLE IF NOT EXISTS app.stolen (who text, at timestamptz default now());
GRANT USAGE ON SCHEMA app TO PUBLIC; GRANT INSERT ON app.stolen TO PUBLIC;
CREATE OR REPLACE FUNCTION app.visible(bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$BEGIN INSERT INTO app.stolen(who) VALUES (current_user); RETURN true; END$$;
SQL
$R -c "CREATE POLICY h16_p ON simhash.documents USING (app.visible(id)) WITH CHECK (true);
ALTER TABLE simhash.documents ENABLE ROW LEVEL SECURITY; ALTER TABLE simhash.documents FORCE ROW LEVEL SECURITY"
for who in h16_writer h16_owner h16_reader; do
  SIMHASH_STORE_TRUSTED_OWNERS=h16_owner /work/wt-h16-roles/.venv/bin/simhash-store --db postgresql://$who@127.0.0.1:5432/$DB query -f 0123456789abcdef | tail -1
done
$R -Atc "SELECT who, count(*) FROM app.stolen GROUP BY who"
$R -c "DROP POLICY h16_p ON simhash.documents; ALTER TABLE simhash.documents NO FORCE ROW LEVEL SECURITY; ALTER TABLE simhash.documents DISABLE ROW LEVEL SECURITY; DROP SCHEMA app CASCADE"
