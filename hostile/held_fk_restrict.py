"""Held check: a writer's foreign key ON DELETE RESTRICT to simhash.documents(key) (REFERENCES is
part of ALL): the owner's remove and dedup's representative changes fail in one line, nothing lost."""

from roles_common import admin, as_role, cli, say, scenario, url

with scenario("fkr", ["owner", "w"]) as (db, (owner, w)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}", "{w}"')
    cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    with as_role(owner, db) as c:
        c.execute(f'GRANT USAGE ON SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT SELECT, REFERENCES ON ALL TABLES IN SCHEMA simhash TO "{w}"')
    with as_role(w, db) as c:
        c.execute("CREATE SCHEMA ws")
        c.execute(
            "CREATE TABLE ws.ref (k text REFERENCES simhash.documents(key) ON DELETE RESTRICT ON UPDATE RESTRICT)"
        )
        c.execute("INSERT INTO ws.ref VALUES ('a')")
    rc, out, err = cli("remove", "a", db=url(owner, db))
    say("owner's remove:", rc, (out + err).strip()[:400])
    rc, out, err = cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "changed text now"}\n')
    say("owner's add over the key:", rc, (out + err).strip()[:400])
    with as_role(owner, db) as c:
        say("documents:", c.execute("SELECT key FROM simhash.documents").fetchall())
