-- Run as h14r_app while it holds REFERENCES on simhash.documents (then revoked by the owner): foreign keys
-- whose checks or actions might run its code as the owner of simhash.documents. app.stolen records who ran it.
CREATE TABLE IF NOT EXISTS app.stolen (who text, via text);
GRANT USAGE ON SCHEMA app TO PUBLIC; GRANT INSERT ON app.stolen TO PUBLIC;
CREATE OR REPLACE FUNCTION app.note(via text) RETURNS boolean LANGUAGE sql VOLATILE
  AS $$ INSERT INTO app.stolen VALUES (current_user, via) RETURNING true $$;
CREATE OR REPLACE FUNCTION app.dflt() RETURNS bigint LANGUAGE sql VOLATILE
  AS $$ INSERT INTO app.stolen VALUES (current_user, 'set default') RETURNING NULL::bigint $$;
-- 1. ON DELETE SET DEFAULT, the default an expression of its own
CREATE TABLE app.sd (k bigint DEFAULT app.dflt() REFERENCES simhash.documents (id) ON DELETE SET DEFAULT);
-- 2. a domain over bigint whose CHECK calls its function
CREATE DOMAIN app.dom AS bigint CHECK (app.note('domain check'));
CREATE TABLE app.dm (k app.dom REFERENCES simhash.documents (id) MATCH FULL ON DELETE CASCADE);
-- 3. a partitioned referencing table, a trigger of its own on the partition
CREATE TABLE app.pt (k bigint REFERENCES simhash.documents (id) ON DELETE CASCADE) PARTITION BY RANGE (k);
CREATE TABLE app.pt1 PARTITION OF app.pt FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
CREATE OR REPLACE FUNCTION app.trg() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN PERFORM app.note('trigger on ' || TG_TABLE_NAME); RETURN OLD; END $$;
CREATE TRIGGER t BEFORE DELETE ON app.pt1 FOR EACH ROW EXECUTE FUNCTION app.trg();
-- 4. a column collation of its own on a key column
CREATE COLLATION app.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE app.co (k text COLLATE app.ci REFERENCES simhash.documents (key) ON DELETE CASCADE);
