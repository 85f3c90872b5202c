"""The residual case of trigger_when.py: a trigger left by a role whose TRIGGER was revoked
afterwards, whose WHEN reaches its function through a built-in that runs SQL text
(query_to_xml): no dependency is recorded, so the schema check cannot see the function."""

from roles_common import admin, as_role, cli, say, scenario, url

with scenario("trigxml", ["owner", "w"]) as (db, (owner, w)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}"')
    with admin(db) as c:
        c.execute(f'CREATE SCHEMA wschema AUTHORIZATION "{w}"')
    cli("init", db=url(owner, db))
    with as_role(owner, db) as c:
        c.execute(f'GRANT USAGE ON SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA simhash TO "{w}"')
    with as_role(w, db) as c:
        c.execute("CREATE TABLE wschema.loot (who text)")
        c.execute(f'GRANT INSERT ON wschema.loot TO "{owner}"')
        c.execute("GRANT USAGE ON SCHEMA wschema TO PUBLIC")
        c.execute(
            "CREATE FUNCTION wschema.harmless() RETURNS boolean LANGUAGE plpgsql VOLATILE "
            "AS $$ BEGIN INSERT INTO wschema.loot VALUES (current_user); RETURN false; END $$"
        )
        c.execute(
            "CREATE TRIGGER zz_when BEFORE INSERT ON simhash.documents FOR EACH ROW "
            "WHEN (pg_catalog.query_to_xml('SELECT wschema.harmless()', false, false, '') IS NULL) "
            "EXECUTE FUNCTION pg_catalog.suppress_redundant_updates_trigger()"
        )
    with as_role(owner, db) as c:
        c.execute(f'REVOKE TRIGGER ON ALL TABLES IN SCHEMA simhash FROM "{w}"')
    rc, out, err = cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    say("owner's add after REVOKE TRIGGER:", rc, (out + err).strip()[:300])
    with as_role(w, db) as c:
        say("w's loot:", c.execute("SELECT * FROM wschema.loot").fetchall())

# The same through a view of w's named as a regclass constant (table_to_xml): the view is a
# dependency of the trigger, so the check sees it (refused).
with scenario("trigview", ["owner", "w"]) as (db, (owner, w)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}"')
    with admin(db) as c:
        c.execute(f'CREATE SCHEMA wschema AUTHORIZATION "{w}"')
    cli("init", db=url(owner, db))
    with as_role(owner, db) as c:
        c.execute(f'GRANT USAGE ON SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA simhash TO "{w}"')
    with as_role(w, db) as c:
        c.execute("CREATE TABLE wschema.loot (who text)")
        c.execute(f'GRANT INSERT ON wschema.loot TO "{owner}"')
        c.execute("GRANT USAGE ON SCHEMA wschema TO PUBLIC")
        c.execute(
            "CREATE FUNCTION wschema.harmless() RETURNS boolean LANGUAGE plpgsql VOLATILE "
            "AS $$ BEGIN INSERT INTO wschema.loot VALUES (current_user); RETURN false; END $$"
        )
        c.execute("CREATE VIEW wschema.v AS SELECT wschema.harmless() AS x")
        c.execute("GRANT SELECT ON wschema.v TO PUBLIC")
        c.execute(
            "CREATE TRIGGER zz_when BEFORE INSERT ON simhash.documents FOR EACH ROW "
            "WHEN (pg_catalog.table_to_xml('wschema.v'::regclass, false, false, '') IS NULL) "
            "EXECUTE FUNCTION pg_catalog.suppress_redundant_updates_trigger()"
        )
    with as_role(owner, db) as c:
        c.execute(f'REVOKE TRIGGER ON ALL TABLES IN SCHEMA simhash FROM "{w}"')
    rc, out, err = cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    say("owner's add (view named in the condition):", rc, (out + err).strip()[:400])
    with as_role(w, db) as c:
        say("w's loot:", c.execute("SELECT * FROM wschema.loot").fetchall())
