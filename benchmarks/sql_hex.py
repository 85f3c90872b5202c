"""What simhash.to_hex and simhash.from_hex cost in SQL, beside the same conversion written inline.

A store at head in a database of its own; ``--rows`` random fingerprints in a temporary
table, with their hex. Each statement converts every row (``count(...)`` of the result, so
nothing crosses the wire) and is timed ``--repeat`` times; the table gives the median. The
baselines are the expressions an application would write by hand, in the same run:
``lpad(to_hex(f), 16, '0')`` for ``to_hex`` and ``('x' || lpad(h, 16, '0'))::bit(64)::bigint``
for ``from_hex`` (which checks nothing).

    python benchmarks/sql_hex.py                       # 1M rows, the machine's PostgreSQL
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid

import psycopg
from sqlalchemy import create_engine

from simhash_store import migrate

STATEMENTS = (
    (
        "to_hex",
        "inline lpad(to_hex(f), 16, '0')",
        "SELECT count(pg_catalog.lpad(pg_catalog.to_hex(f), 16, '0')) FROM hex_bench",
    ),
    ("to_hex", "simhash.to_hex(f)", "SELECT count(simhash.to_hex(f)) FROM hex_bench"),
    (
        "from_hex",
        "inline ('x' || lpad(h, 16, '0'))::bit(64)::bigint",
        "SELECT count(('x' || lpad(h, 16, '0'))::bit(64)::bigint) FROM hex_bench",
    ),
    ("from_hex", "simhash.from_hex(h)", "SELECT count(simhash.from_hex(h)) FROM hex_bench"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--admin-url", default=os.environ.get("SIMHASH_STORE_BENCH_URL", "postgresql://root@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    database = f"simhash_hex_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(arguments.admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    url = arguments.admin_url.rsplit("/", 1)[0] + f"/{database}"
    try:
        engine = create_engine(url.replace("postgresql:", "postgresql+psycopg:", 1))
        migrate.upgrade(engine)
        engine.dispose()
        with psycopg.connect(url) as connection:
            version = connection.execute("SHOW server_version").fetchone()[0]
            connection.execute(
                "CREATE TEMPORARY TABLE hex_bench AS SELECT f, pg_catalog.lpad(pg_catalog.to_hex(f), 16, '0') AS h "
                "FROM (SELECT hashtextextended(i::text, 7) AS f FROM generate_series(1, %s) AS i) s",
                (arguments.rows,),
            )
            connection.execute("ANALYZE hex_bench")
            print(
                f"PostgreSQL {version}, {arguments.rows:,} rows, median of {arguments.repeat}, load average {os.getloadavg()[0]:.1f}"
            )
            print("| function | statement | total (ms) | per row (us) |\n|---|---|---|---|")
            for function, label, statement in STATEMENTS:
                times = []
                for _ in range(arguments.repeat):
                    started = time.perf_counter()
                    connection.execute(statement).fetchone()
                    times.append(time.perf_counter() - started)
                median = statistics.median(times)
                print(f"| {function} | `{label}` | {median * 1000:.0f} | {median * 1e6 / arguments.rows:.2f} |")
    finally:
        with psycopg.connect(arguments.admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


if __name__ == "__main__":
    main()
