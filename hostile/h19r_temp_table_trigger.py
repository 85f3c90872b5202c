"""The owner's default privileges (global: no IN SCHEMA) give another role TRIGGER on new tables, temporary
ones included (add's pg_temp.simhash_incoming, ON COMMIT DELETE ROWS, kept for the session): can that
role put a trigger of its own function on the owner's temporary table, which the owner's next COPY runs?"""

import psycopg

DB = "h19r_db"
with psycopg.connect(f"postgresql://root@127.0.0.1:5432/{DB}", autocommit=True) as root:
    root.execute("ALTER DEFAULT PRIVILEGES FOR ROLE h19r_owner GRANT TRIGGER, SELECT, INSERT ON TABLES TO h19r_app")
    try:
        with psycopg.connect(f"postgresql://h19r_owner@127.0.0.1:5432/{DB}", autocommit=True) as owner:
            owner.execute("CREATE TEMP TABLE t (k text)")
            table = owner.execute("SELECT 'pg_temp_' || pg_my_temp_schema()::regnamespace::text").fetchone()
            schema = owner.execute("SELECT pg_my_temp_schema()::regnamespace::text").fetchone()[0]
            with psycopg.connect(f"postgresql://h19r_app@127.0.0.1:5432/{DB}", autocommit=True) as app:
                app.execute("CREATE SCHEMA IF NOT EXISTS app")
                app.execute(
                    "CREATE OR REPLACE FUNCTION app.tmp() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$BEGIN RAISE NOTICE 'ran as %', current_user; RETURN NEW; END$$"
                )
                for statement in (
                    f"SELECT has_table_privilege('{schema}.t', 'TRIGGER')",
                    f"CREATE TRIGGER x BEFORE INSERT ON {schema}.t FOR EACH ROW EXECUTE FUNCTION app.tmp()",
                    f"SELECT count(*) FROM {schema}.t",
                ):
                    try:
                        cursor = app.execute(statement)
                        print(statement, "->", cursor.fetchall() if cursor.description else "ok")
                    except psycopg.Error as exc:
                        print(statement, "->", type(exc).__name__, str(exc).strip())
    finally:
        root.execute(
            "ALTER DEFAULT PRIVILEGES FOR ROLE h19r_owner REVOKE TRIGGER, SELECT, INSERT ON TABLES FROM h19r_app"
        )
