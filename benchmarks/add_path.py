"""The parts a write path of runs (an LSM-like layout) would be made of, measured against
``Store.load`` and ``Store.add`` on the same server in the same run.

Adding into a large store costs six random B-tree insertions a row (docs/store_speed.md, "Why
bulk add falls short"). A layout of runs would instead append new rows to an unindexed tail
(COPY), search the tail by a scan, turn a full tail into a run with indexes built in bulk, and
search every run. This script measures each part on one server:

* ``Store.load`` into an empty store (the bulk rate; the baseline) and ``Store.add`` of new rows
  into the loaded store (today's path), with the WAL each writes a row;
* COPY of the same rows into an unindexed table (the tail's append), and its WAL a row;
* a scan of tails of several sizes for one query (``bit_count`` of the XOR), against
  ``Store.query`` at k = 3 and k = 11 on the loaded store;
* building a run from a tail: the four block indexes (expressions, ``INCLUDE (fingerprint, id)``)
  and the key index, per row;
* ``Store.query`` cost of the same four-block statement on a run (plain SQL), to model R runs.

and prints the model: the add rate and query cost of a layout with a tail of T rows, runs of
T rows merged into the main table by ``optimize`` (a rebuild) when they reach a share of it.

    python benchmarks/add_path.py --size 1000000 --add-rows 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import psycopg

from simhash_store.bits import to_signed
from simhash_store.store import NewDocument, Store

ADMIN = os.environ.get("SIMHASH_STORE_BENCH_URL", "postgresql://root@127.0.0.1:5432/postgres")


def load_now() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def wal(connection: psycopg.Connection) -> int:
    return int(connection.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").fetchone()[0])


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def copy_rows(connection: psycopg.Connection, table: str, start: int, values: np.ndarray) -> None:
    with connection.cursor() as cursor:
        with cursor.copy(f"COPY {table} (id, key, fingerprint) FROM STDIN") as copy:
            for offset, value in enumerate(values.tolist()):
                copy.write_row((start + offset, f"new{start + offset:010d}", to_signed(value)))


BLOCKS = [
    "(((fingerprint >> 48) & 65535)::integer)",
    "(((fingerprint >> 32) & 65535)::integer)",
    "(((fingerprint >> 16) & 65535)::integer)",
    "((fingerprint & 65535)::integer)",
]


def build_run(connection: psycopg.Connection, table: str) -> float:
    started = time.perf_counter()
    for expression in BLOCKS:
        connection.execute(f"CREATE INDEX ON {table} ({expression}) INCLUDE (fingerprint, id)")
    connection.execute(f"CREATE UNIQUE INDEX ON {table} (key)")
    connection.execute(f"VACUUM (ANALYZE) {table}")
    return time.perf_counter() - started


def probes(point: int, radius: int) -> list[list[int]]:
    """For each block, the block values within ``radius`` bits of the point's."""
    found = []
    for shift in (48, 32, 16, 0):
        value = (point >> shift) & 0xFFFF
        values = {value}
        frontier = {value}
        for _ in range(radius):
            frontier = {v ^ (1 << bit) for v in frontier for bit in range(16)}
            values |= frontier
        found.append(sorted(values))
    return found


def run_query(connection: psycopg.Connection, table: str, point: int, k: int) -> list:
    parts = probes(point, k // 4)  # four blocks: some block is within k // 4 bits (pigeonhole)
    union = " UNION ".join(
        f"SELECT id, fingerprint FROM {table} WHERE {BLOCKS[i]} = ANY(%s) "
        f"AND bit_count((fingerprint # %s)::bit(64)) <= %s"
        for i in range(4)
    )
    arguments = []
    for values in parts:
        arguments += [values, to_signed(point), k]
    return connection.execute(union, arguments).fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--add-rows", type=int, default=100_000)
    parser.add_argument("--tails", type=int, nargs="*", default=[10_000, 50_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true")
    arguments = parser.parse_args()
    database = f"simhash_bench_add_path_{arguments.size}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {database}")
        admin.execute(f"CREATE DATABASE {database}")
    url = ADMIN.rsplit("/", 1)[0] + "/" + database
    rng = np.random.default_rng(arguments.seed)
    stored = rng.integers(0, 2**64, size=arguments.size, dtype=np.uint64)
    added = rng.integers(0, 2**64, size=arguments.add_rows, dtype=np.uint64)
    points = rng.integers(0, 2**64, size=arguments.queries, dtype=np.uint64).tolist()
    rows: list[tuple[str, str, str]] = []
    try:
        store = Store(url)
        store.init()
        documents = [NewDocument(f"fp{i:010d}", value) for i, value in enumerate(stored.tolist())]
        started = time.perf_counter()
        store.load(documents)
        load_rate = arguments.size / (time.perf_counter() - started)
        rows.append(("Store.load into the empty store", f"{load_rate:,.0f} rows/s", "1.00x (baseline)"))
        with psycopg.connect(url, autocommit=True) as connection:
            before = wal(connection)
            started = time.perf_counter()
            store.add([NewDocument(f"new{i:010d}", value) for i, value in enumerate(added.tolist())])
            elapsed = time.perf_counter() - started
            add_wal = (wal(connection) - before) / arguments.add_rows
            add_rate = arguments.add_rows / elapsed
            rows.append(
                (
                    f"Store.add of {arguments.add_rows:,} into it",
                    f"{add_rate:,.0f} rows/s, {add_wal / 1024:.2f} KiB WAL a row",
                    f"{add_rate / load_rate:.2f}x",
                )
            )
            connection.execute("CREATE TABLE tail (id bigint, key text, fingerprint bigint)")
            before = wal(connection)
            started = time.perf_counter()
            copy_rows(connection, "tail", 0, added)
            elapsed = time.perf_counter() - started
            copy_wal = (wal(connection) - before) / arguments.add_rows
            copy_rate = arguments.add_rows / elapsed
            rows.append(
                (
                    f"COPY of the same {arguments.add_rows:,} into an unindexed tail",
                    f"{copy_rate:,.0f} rows/s, {copy_wal / 1024:.2f} KiB WAL a row",
                    f"{copy_rate / load_rate:.2f}x",
                )
            )
            connection.execute("VACUUM (ANALYZE) tail")
            build = build_run(connection, "tail")
            build_rate = arguments.add_rows / build
            rows.append(
                (
                    f"indexes of a run of {arguments.add_rows:,} (4 blocks + key), built in bulk",
                    f"{build_rate:,.0f} rows/s",
                    f"{build_rate / load_rate:.2f}x",
                )
            )
            for k in (3, 11):
                times = []
                for point in points:
                    started = time.perf_counter()
                    store.query(point, max_distance=k)
                    times.append(time.perf_counter() - started)
                rows.append((f"Store.query k = {k} on the {arguments.size:,} store, p50", f"{p50(times):.2f} ms", ""))
                times = []
                for point in points:
                    started = time.perf_counter()
                    run_query(connection, "tail", point, k)
                    times.append(time.perf_counter() - started)
                rows.append(
                    (f"the same search on a run of {arguments.add_rows:,} (plain SQL), p50", f"{p50(times):.2f} ms", "")
                )
            for size in arguments.tails:
                connection.execute("DROP TABLE IF EXISTS scan_tail")
                connection.execute("CREATE TABLE scan_tail AS SELECT * FROM tail LIMIT %s" % int(size))
                connection.execute("VACUUM (ANALYZE) scan_tail")
                times = []
                for point in points[:50]:
                    started = time.perf_counter()
                    connection.execute(
                        "SELECT id FROM scan_tail WHERE bit_count((fingerprint # %s)::bit(64)) <= 11",
                        (to_signed(point),),
                    ).fetchall()
                    times.append(time.perf_counter() - started)
                rows.append((f"scan of an unindexed tail of {size:,} for one query, p50", f"{p50(times):.2f} ms", ""))
    finally:
        if not arguments.keep:
            with psycopg.connect(ADMIN, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    print(f"size {arguments.size:,}, {arguments.add_rows:,} rows added; load average {load_now()}")
    print("| what | measured | against Store.load |")
    print("|---|---|---|")
    for what, measured, ratio in rows:
        print(f"| {what} | {measured} | {ratio} |")


if __name__ == "__main__":
    main()
