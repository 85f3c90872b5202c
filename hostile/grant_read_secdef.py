"""Open (handed back): grant-read passes a role granted EXECUTE on a SECURITY DEFINER function in
SQL or PL/pgSQL of a superuser's (or of the store's owner) that PUBLIC may not call; through it
the "read-only" role writes the store. Only C functions outside pg_catalog are checked now."""

from roles_common import admin, as_role, cli, say, scenario, url

with scenario("secdef", ["owner", "reader"]) as (db, (owner, reader)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}"')
    cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    with admin(db) as c:
        c.execute("CREATE SCHEMA dba")
        c.execute(
            "CREATE FUNCTION dba.purge(k text) RETURNS void LANGUAGE sql SECURITY DEFINER "
            "SET search_path = pg_catalog AS 'DELETE FROM simhash.documents WHERE key = k'"
        )
        c.execute("REVOKE EXECUTE ON FUNCTION dba.purge(text) FROM PUBLIC")
        c.execute(f'GRANT USAGE ON SCHEMA dba TO "{reader}"')
        c.execute(f'GRANT EXECUTE ON FUNCTION dba.purge(text) TO "{reader}"')
    rc, out, err = cli("grant-read", reader, db=url(owner, db))
    say("grant-read:", rc, (out + err).strip())
    with as_role(reader, db) as c:
        c.execute("SELECT dba.purge('a')")
    with as_role(owner, db) as c:
        say("documents left:", c.execute("SELECT count(*) FROM simhash.documents").fetchone())
