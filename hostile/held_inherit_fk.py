"""Held checks: another role hangs tables off simhash.documents.

- a reader (grant-read) and a writer with ALL try CREATE TABLE ... INHERITS / PARTITION OF
  simhash.documents (an inheriting child's rows would show up in every search);
- a writer with REFERENCES adds a foreign key ON DELETE CASCADE from its own table, with a
  trigger on that table recording current_user: the owner's `remove` runs it as whom?
"""

from roles_common import admin, as_role, cli, say, scenario, url

with scenario("inherit", ["owner", "reader", "w"]) as (db, (owner, reader, w)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}"')
    with admin(db) as c:
        for r in (reader, w):
            c.execute(f'CREATE SCHEMA "s_{r}" AUTHORIZATION "{r}"')
    say("init:", cli("init", db=url(owner, db))[0])
    rc, out, err = cli("grant-read", reader, db=url(owner, db))
    say("grant-read:", rc, out.strip(), err.strip())
    with as_role(owner, db) as c:
        c.execute(f'GRANT USAGE ON SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA simhash TO "{w}"')
    for r in (reader, w):
        with as_role(r, db) as c:
            for ddl in (
                f'CREATE TABLE "s_{r}".child () INHERITS (simhash.documents)',
                f'CREATE TABLE "s_{r}".part PARTITION OF simhash.documents DEFAULT',
                f'ALTER TABLE simhash.documents INHERIT "s_{r}".x',
            ):
                try:
                    c.execute(ddl)
                    say(r, "ALLOWED:", ddl)
                except Exception as e:
                    say(r, "refused:", ddl.split(" simhash")[0][:40], "->", str(e).splitlines()[0])
    cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    with as_role(w, db) as c:
        c.execute(f'CREATE TABLE "s_{w}".log (who text)')
        c.execute(f'GRANT INSERT ON "s_{w}".log TO PUBLIC')
        c.execute(f'CREATE TABLE "s_{w}".ref (k text REFERENCES simhash.documents(key) ON DELETE CASCADE)')
        c.execute(f"INSERT INTO \"s_{w}\".ref VALUES ('a')")
        c.execute(
            f'CREATE FUNCTION "s_{w}".rec() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
            f'INSERT INTO "s_{w}".log VALUES (current_user); RETURN OLD; END $$'
        )
        c.execute(f'CREATE TRIGGER rec BEFORE DELETE ON "s_{w}".ref FOR EACH ROW EXECUTE FUNCTION "s_{w}".rec()')
    rc, out, err = cli("remove", "a", db=url(owner, db))
    say("owner's remove:", rc, out.strip(), err.strip())
    with as_role(w, db) as c:
        say("trigger on w's referencing table ran as:", c.execute(f'SELECT * FROM "s_{w}".log').fetchall())
