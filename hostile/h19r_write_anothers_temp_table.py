"""A member of pg_write_all_data (USAGE on every schema) writes into the owner's temporary staging table
(rows it could slip into the owner's next upsert)."""

import psycopg

DB = "h19r_db3"
with psycopg.connect(f"postgresql://h19r_owner@127.0.0.1:5432/{DB}", autocommit=True) as owner:
    owner.execute("CREATE TEMP TABLE simhash_incoming (k text)")
    schema = owner.execute("SELECT pg_my_temp_schema()::regnamespace::text").fetchone()[0]
    with psycopg.connect(f"postgresql://h19r_writeall@127.0.0.1:5432/{DB}", autocommit=True) as other:
        for statement in (
            f"INSERT INTO {schema}.simhash_incoming VALUES ('planted')",
            f"COPY {schema}.simhash_incoming FROM STDIN",
            f"TRUNCATE {schema}.simhash_incoming",
        ):
            try:
                if statement.startswith("COPY"):
                    with other.cursor().copy(statement) as copy:
                        copy.write("planted\n")
                else:
                    other.execute(statement)
                print(statement, "-> ok")
            except psycopg.Error as exc:
                print(statement, "->", type(exc).__name__, str(exc).strip().splitlines()[0])
    print("owner sees:", owner.execute("SELECT * FROM pg_temp.simhash_incoming").fetchall())
