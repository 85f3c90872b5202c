"""A member of pg_read_all_data (USAGE on every schema, pg_temp_N too) locks the owner's temporary staging
table (add's pg_temp.simhash_incoming, ON COMMIT DELETE ROWS, kept for the session): does the owner's
next commit (which empties it, taking ACCESS EXCLUSIVE) wait, and for how long?"""

import os
import time

import psycopg

os.environ.setdefault("SIMHASH_STORE_LOCK_TIMEOUT", "3")
DB = os.environ.get("DB", "h19r_db3")
with psycopg.connect(
    f"postgresql://h19r_owner@127.0.0.1:5432/{DB}", autocommit=True, options="-c lock_timeout=3s"
) as owner:
    owner.execute("CREATE TEMP TABLE simhash_incoming (k text) ON COMMIT DELETE ROWS")
    schema = owner.execute("SELECT pg_my_temp_schema()::regnamespace::text").fetchone()[0]
    with psycopg.connect(f"postgresql://h19r_readall@127.0.0.1:5432/{DB}") as reader:
        for statement in (
            f"LOCK TABLE {schema}.simhash_incoming IN ACCESS SHARE MODE",
            f"SELECT count(*) FROM {schema}.simhash_incoming",
        ):
            try:
                reader.execute(statement)
                print(statement, "-> ok")
            except psycopg.Error as exc:
                print(statement, "->", type(exc).__name__, str(exc).strip())
                reader.rollback()
        reader.execute(f"LOCK TABLE {schema}.simhash_incoming IN ACCESS SHARE MODE")
        start = time.monotonic()
        try:
            with owner.transaction():
                owner.execute("INSERT INTO pg_temp.simhash_incoming VALUES ('a')")
            print("owner's commit -> ok", f"after {time.monotonic() - start:.1f}s")
        except psycopg.Error as exc:
            print("owner's commit ->", type(exc).__name__, f"after {time.monotonic() - start:.1f}s:", str(exc).strip())
