"""grant-read passes a role granted EXECUTE on an extension's C function outside pg_catalog that
PUBLIC may not call: dblink_connect_u (dblink, installed in public) connects without a password
check as any role the server trusts; on this trust-auth server the "read-only" role becomes root
(a superuser) and deletes the store. pageinspect's get_raw_page would read pg_authid's pages.
"""

from roles_common import admin, as_role, cli, say, scenario, url

with scenario("dblink", ["owner", "reader"]) as (db, (owner, reader)):
    with admin() as c:
        c.execute(f'GRANT CREATE ON DATABASE "{db}" TO "{owner}"')
    with admin(db) as c:
        c.execute("CREATE EXTENSION dblink")  # its *_u functions are revoked from PUBLIC
        c.execute(f'GRANT EXECUTE ON FUNCTION public.dblink_connect_u(text, text) TO "{reader}"')
    cli("add", "--jsonl", "-", db=url(owner, db), input='{"key": "a", "text": "hello world text"}\n')
    rc, out, err = cli("grant-read", reader, db=url(owner, db))
    say("grant-read:", rc, out.strip(), err.strip())
    if rc == 0:
        with as_role(reader, db) as c:
            c.execute("SELECT public.dblink_connect_u('x', %s)", (f"host=127.0.0.1 user=root dbname={db}",))
            say("as:", c.execute("SELECT * FROM public.dblink('x', 'SELECT current_user') AS t(u name)").fetchall())
            say(c.execute("SELECT public.dblink_exec('x', 'DELETE FROM simhash.documents')").fetchall())
        with as_role(owner, db) as c:
            say("documents left:", c.execute("SELECT count(*) FROM simhash.documents").fetchone())
