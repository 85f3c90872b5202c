"""What the schema check costs each open: the trust query (trust.py) against the query it replaced.

Every open of the store (a read, a write, ``init``) asks, before anything else, whether the
``simhash`` schema can be changed by a role the session does not trust; the same query says
whether the version table exists, which the revision check asked before with
``SELECT to_regclass('simhash.alembic_version') IS NOT NULL``. So an open pays the difference
between the two, not a new round trip. Both run on one connection, taking turns, each
--runs times after a warm-up; medians in microseconds. The catalog scans grow with the
database's own objects, so the run is repeated after --extra-functions functions and tables
are created in another schema (a database with PostGIS holds about 1,000 functions more).

    python benchmarks/open_check.py
    python benchmarks/open_check.py --admin-url postgresql://root@127.0.0.1:5432/postgres --runs 3000

The script creates and drops its own database.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import uuid

import psycopg

from simhash_store import migrate
from simhash_store.config import trusted_owners
from simhash_store.trust import _CHECK, LIBRARY_FUNCTIONS

OLD = "SELECT to_regclass(%s) IS NOT NULL"


def timed(connection: psycopg.Connection, statement: str, parameters) -> float:
    started = time.perf_counter()
    connection.execute(statement, parameters).fetchall()
    return (time.perf_counter() - started) * 1e6


def compare(connection: psycopg.Connection, runs: int) -> tuple[float, float]:
    old_parameters = ("simhash.alembic_version",)
    new_parameters = {
        "schema": "simhash",
        "trusted": trusted_owners(),
        "version_table": "simhash.alembic_version",
        "functions": list(LIBRARY_FUNCTIONS),
    }
    for _ in range(20):
        timed(connection, OLD, old_parameters)
        timed(connection, _CHECK, new_parameters)
    old, new = [], []
    for _ in range(runs):
        old.append(timed(connection, OLD, old_parameters))
        new.append(timed(connection, _CHECK, new_parameters))
    return statistics.median(old), statistics.median(new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--admin-url", default="postgresql://root@127.0.0.1:5432/postgres")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--extra-functions", type=int, default=5000)
    options = parser.parse_args()

    name = f"simhash_open_check_{uuid.uuid4().hex[:8]}"
    base = options.admin_url.rpartition("/")[0]
    with psycopg.connect(options.admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        from sqlalchemy import create_engine

        engine = create_engine(f"{base.replace('postgresql:', 'postgresql+psycopg:', 1)}/{name}")
        migrate.upgrade(engine)
        engine.dispose()
        print(
            f"machine: {platform.machine()}, {os.cpu_count()} cores, load average "
            f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; {options.runs} runs each, taking turns, one connection"
        )
        print()
        print("| database | to_regclass (before), µs | trust check (after), µs | added per open, µs |")
        print("|---|--:|--:|--:|")
        with psycopg.connect(
            f"{base}/{name}", autocommit=True, options="-c search_path=pg_catalog,pg_temp"
        ) as connection:
            functions = connection.execute("SELECT count(*) FROM pg_catalog.pg_proc").fetchone()[0]
            old, new = compare(connection, options.runs)
            print(f"| a fresh store ({functions:,} functions in pg_proc) | {old:.0f} | {new:.0f} | {new - old:+.0f} |")
            if options.extra_functions:
                connection.execute("CREATE SCHEMA other_application")
                with connection.transaction():
                    for i in range(options.extra_functions):
                        connection.execute(
                            f"CREATE FUNCTION other_application.f{i}(integer) RETURNS integer "
                            "LANGUAGE sql IMMUTABLE RETURN $1 + 1"
                        )
                        if i % 10 == 0:
                            connection.execute(f"CREATE TABLE other_application.t{i} (a integer)")
                connection.execute("ANALYZE pg_catalog.pg_proc")
                connection.execute("ANALYZE pg_catalog.pg_class")
                connection.execute("ANALYZE pg_catalog.pg_type")
                functions = connection.execute("SELECT count(*) FROM pg_catalog.pg_proc").fetchone()[0]
                old, new = compare(connection, options.runs)
                print(
                    f"| the same, {options.extra_functions:,} functions and {options.extra_functions // 10:,} tables "
                    f"more elsewhere ({functions:,} in pg_proc) | {old:.0f} | {new:.0f} | {new - old:+.0f} |"
                )
    finally:
        with psycopg.connect(options.admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
