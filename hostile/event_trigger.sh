#!/bin/bash
# An event trigger made by a superuser at another role's request, whose function is that role's: it runs
# in the owner's grant-read, init --layout, migrations and bulk-load rebuilds, with the owner's rights.
DB=${1:-h16r_b}
R="psql -q -h 127.0.0.1 -U root -d $DB"
psql -q -h 127.0.0.1 -U h16_crt -d $DB <<'SQL'
CREATE SCHEMA IF NOT EXISTS app;
CREATE TABLE IF NOT EXISTS app.stolen (who text, tag text);
GRANT USAGE ON SCHEMA app TO PUBLIC; GRANT INSERT ON app.stolen TO PUBLIC;
CREATE OR REPLACE FUNCTION app.on_ddl() RETURNS event_trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO app.stolen VALUES (current_user, tg_tag); END$$;
SQL
$R -c "CREATE EVENT TRIGGER h16_et ON ddl_command_end EXECUTE FUNCTION app.on_ddl()"
S=/work/wt-h16-roles/.venv/bin/simhash-store
$S --db postgresql://h16_owner@127.0.0.1:5432/$DB grant-read h16_reader | tail -1
$S --db postgresql://h16_owner@127.0.0.1:5432/$DB init --layout lean | tail -1
$S --db postgresql://h16_owner@127.0.0.1:5432/$DB init --layout four16 | tail -1
$R -Atc "SELECT who, tag, count(*) FROM app.stolen GROUP BY 1, 2"
$R -c "DROP EVENT TRIGGER h16_et; DROP SCHEMA app CASCADE"
