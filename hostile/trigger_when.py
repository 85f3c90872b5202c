"""A writer with TRIGGER on simhash.documents runs its own code as the store's owner, through a
trigger's WHEN condition: the schema check looks at the trigger's function only.

Roles: owner (creates the store; CREATE on the database), w (a writer the owner granted ALL on
the store's tables, as `GRANT ALL ON ALL TABLES IN SCHEMA simhash` does; w has a schema of its own).
The owner also keeps a private table w may not read. After w's trigger, the owner's next `add`
copies that table into w's schema and hands w CREATE on nothing: nothing is refused.
"""

from roles_common import admin, as_role, cli, say, scenario, url

with scenario("trigwhen", ["owner", "w"]) as (db, (owner, w)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}"')
    with admin(db) as c:
        c.execute(f'CREATE SCHEMA wschema AUTHORIZATION "{w}"')
    rc, out, err = cli("init", db=url(owner, db))
    say("init:", rc, err.strip())
    with as_role(owner, db) as c:
        c.execute("CREATE SCHEMA private")
        c.execute("CREATE TABLE private.secret (s text)")
        c.execute("INSERT INTO private.secret VALUES ('the owner''s secret')")
        c.execute(f'GRANT USAGE ON SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA simhash TO "{w}"')
    with as_role(w, db) as c:
        try:
            c.execute("SELECT * FROM private.secret")
        except Exception as e:
            say("w reads private.secret directly:", type(e).__name__, str(e).splitlines()[0])
        c.execute("CREATE TABLE wschema.loot (who text, s text)")
        c.execute(f'GRANT INSERT ON wschema.loot TO "{owner}"')
        c.execute("""
            CREATE FUNCTION wschema.harmless() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
            BEGIN
                INSERT INTO wschema.loot SELECT current_user, s FROM private.secret;
                RETURN false;
            EXCEPTION WHEN OTHERS THEN
                RETURN false;
            END $$""")
        c.execute("GRANT USAGE ON SCHEMA wschema TO PUBLIC")
        # The trigger's function is a built-in (owned by the bootstrap superuser): the check passes it.
        c.execute(
            "CREATE TRIGGER zz_when BEFORE INSERT OR UPDATE ON simhash.documents FOR EACH ROW "
            "WHEN (wschema.harmless()) EXECUTE FUNCTION pg_catalog.suppress_redundant_updates_trigger()"
        )
    rc, out, err = cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    say("owner's add:", rc, out.strip(), err.strip())
    with as_role(w, db) as c:
        say("w's loot:", c.execute("SELECT * FROM wschema.loot").fetchall())

# The same trigger left behind after the owner revoked TRIGGER: its condition is still w's code.
with scenario("trigwhen2", ["owner", "w"]) as (db, (owner, w)):
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
            "CREATE FUNCTION wschema.harmless() RETURNS boolean LANGUAGE sql VOLATILE "
            "AS $$ INSERT INTO wschema.loot VALUES (current_user) RETURNING false $$"
        )
        c.execute(
            "CREATE TRIGGER zz_when BEFORE INSERT ON simhash.documents FOR EACH ROW "
            "WHEN (wschema.harmless()) EXECUTE FUNCTION pg_catalog.suppress_redundant_updates_trigger()"
        )
    with as_role(owner, db) as c:
        c.execute(f'REVOKE TRIGGER ON ALL TABLES IN SCHEMA simhash FROM "{w}"')
    rc, out, err = cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    say("owner's add after REVOKE TRIGGER:", rc, out.strip(), err.strip())
    with as_role(w, db) as c:
        say("w's loot:", c.execute("SELECT * FROM wschema.loot").fetchall())
