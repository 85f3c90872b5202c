"""Held checks: what a writer granted ALL on the store's tables (and CREATE on the database, so
a schema of its own) may attach to them besides triggers (fixed: see trigger_when.py)."""

from roles_common import admin, as_role, cli, say, scenario, url

with scenario("wddl", ["owner", "w"]) as (db, (owner, w)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}", "{w}"')
    cli("init", db=url(owner, db))
    with as_role(owner, db) as c:
        c.execute(f'GRANT USAGE ON SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT ALL ON ALL FUNCTIONS IN SCHEMA simhash TO "{w}"')
    with as_role(w, db) as c:
        c.execute("CREATE SCHEMA ws")
        c.execute("CREATE FUNCTION ws.f(bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT $1'")
        for ddl in (
            "CREATE STATISTICS ws.st (dependencies) ON block0, block1 FROM simhash.documents",
            "CREATE STATISTICS ws.st2 ON (ws.f(fingerprint)) FROM simhash.documents",
            "CREATE RULE r AS ON INSERT TO simhash.documents DO ALSO NOTIFY x",
            "CREATE POLICY p ON simhash.documents USING (true)",
            "ALTER TABLE simhash.documents ENABLE ROW LEVEL SECURITY",
            "CREATE INDEX ON simhash.documents (ws.f(fingerprint))",
            "COMMENT ON TABLE simhash.documents IS 'x'",
            "CREATE PUBLICATION pb FOR TABLE simhash.documents",
            "CREATE PUBLICATION pb2 FOR TABLES IN SCHEMA simhash",
            "ALTER TABLE simhash.documents ALTER COLUMN key SET DEFAULT ws.f(1)::text",
            "ALTER FUNCTION simhash.near_many(bigint[], integer, text, integer) SET search_path = ws",
            "CREATE OR REPLACE FUNCTION simhash.to_hex(fingerprint bigint) RETURNS text LANGUAGE sql AS 'SELECT 1::text'",
            "CREATE OPERATOR CLASS ws.oc DEFAULT FOR TYPE bigint USING btree AS OPERATOR 1 <",
            "CREATE CAST (text AS bigint) WITH FUNCTION ws.f(bigint)",
            "ALTER DEFAULT PRIVILEGES FOR ROLE h11r_owner IN SCHEMA simhash GRANT ALL ON TABLES TO h11r_w",
            "SECURITY LABEL ON TABLE simhash.documents IS 'x'",
            "CREATE CONSTRAINT TRIGGER ct AFTER INSERT ON simhash.documents DEFERRABLE FOR EACH ROW "
            "EXECUTE FUNCTION pg_catalog.suppress_redundant_updates_trigger()",
        ):
            try:
                c.execute(ddl)
                say("ALLOWED:", ddl)
            except Exception as e:
                say("refused:", ddl[:60], "->", str(e).splitlines()[0])
    rc, out, err = cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    say("owner's add afterwards:", rc, (out + err).strip()[:300])
