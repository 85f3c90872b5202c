"""Held checks on the layout switch: a writer (INSERT, UPDATE, DELETE on the tables, not the owner)
runs `init --layout wide3`; a writer rewrites store_info.layout under the owner, who then switches."""

from roles_common import admin, as_role, cli, say, scenario, url

with scenario("layout", ["owner", "w"]) as (db, (owner, w)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}"')
    cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    with as_role(owner, db) as c:
        c.execute(f'GRANT USAGE ON SCHEMA simhash TO "{w}"')
        c.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA simhash TO "{w}"')
    env = {"SIMHASH_STORE_TRUSTED_OWNERS": owner}
    rc, out, err = cli("init", "--layout", "wide3", db=url(w, db), env=env)
    say("writer's init --layout wide3:", rc, out.strip(), err.strip())
    with as_role(w, db) as c:
        c.execute("UPDATE simhash.store_info SET layout = 'wide3'")
    rc, out, err = cli("init", "--layout", "four16", db=url(owner, db))
    say("owner's init --layout four16 after the writer's lie:", rc, out.strip(), err.strip()[-300:])
    rc, out, err = cli("query", "-k", "3", "--json", "-", db=url(owner, db), input="hello world text\n")
    say("owner's query:", rc, out.strip()[:200], err.strip()[-200:])
