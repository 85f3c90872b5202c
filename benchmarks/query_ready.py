"""Is the store query-ready the moment a write returns? (issue 15)

Writes N random fingerprints into two fresh databases (autovacuum off, so that it cannot tidy
up first), runs an explicit ``VACUUM ANALYZE`` on the second (the baseline), and times
``Store.query`` p50 at k = 3 and k = 11 in new connections to both, rounds interleaved so that
a busy machine slows both alike. Two writes:

- ``Store.load``;
- a COPY by another application, with no library call in between.

    python benchmarks/query_ready.py --db postgresql://localhost/postgres --rows 1000000

Targets: after the load at most 1.3x the baseline; after the foreign COPY at most 3x at k = 3.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import numpy as np
import psycopg
from sqlalchemy.engine import make_url

from simhash_store.bits import to_signed
from simhash_store.store import NewDocument, Store

QUERIES = 400


def _plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def p50_ms(url, queries: list[int], k: int) -> float:
    """Median ``Store.query`` time in a new store (a new connection: no plan cached from before)."""
    with Store(url) as store:
        store.query(queries[0], k)  # connect
        times = []
        for value in queries[1:]:
            started = time.perf_counter()
            store.query(value, k)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure_side_by_side(fresh, baseline, queries: list[int], rounds: int = 5) -> dict[str, dict[int, float]]:
    """p50 in each database, rounds interleaved so that a busy machine slows both alike; median of the rounds."""
    times: dict[str, dict[int, list[float]]] = {"fresh": {3: [], 11: []}, "baseline": {3: [], 11: []}}
    for _ in range(rounds):
        for k in (3, 11):
            for name, url in (("fresh", fresh), ("baseline", baseline)):
                times[name][k].append(p50_ms(url, queries, k))
    return {name: {k: statistics.median(values) for k, values in by_k.items()} for name, by_k in times.items()}


def vacuum_analyze(url) -> None:
    with psycopg.connect(_plain(url), autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE simhash.documents")


def write(url, how: str, values: list[int]) -> float:
    """A fresh store with autovacuum off (it must not tidy up before we measure), then the write; seconds."""
    with Store(url) as store:
        store.init()
        with psycopg.connect(_plain(url), autocommit=True) as connection:
            connection.execute("ALTER TABLE simhash.documents SET (autovacuum_enabled = off)")
        started = time.perf_counter()
        if how == "Store.load":
            store.load(NewDocument(f"k{i}", v) for i, v in enumerate(values))
        else:
            with psycopg.connect(_plain(url)) as connection, connection.cursor() as cursor:
                with cursor.copy("COPY simhash.documents (key, fingerprint) FROM STDIN") as copy:
                    for i, v in enumerate(values):
                        copy.write_row((f"k{i}", to_signed(v)))
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a server URL; the benchmark creates and drops its own databases")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    admin_url = make_url(args.db).set(drivername="postgresql+psycopg")
    rng = np.random.default_rng(args.seed)
    values = [int(v) for v in rng.integers(0, 2**64 - 1, args.rows, dtype=np.uint64)]
    queries = [int(v) for v in rng.integers(0, 2**64 - 1, QUERIES, dtype=np.uint64)]
    queries[::2] = values[: len(queries[::2])]  # half of them hit a stored fingerprint
    rows = []
    with psycopg.connect(_plain(admin_url), autocommit=True) as admin:
        for how in ("Store.load", "COPY by another application"):
            names = [f"query_ready_{uuid.uuid4().hex[:8]}" for _ in range(2)]
            try:
                for name in names:
                    admin.execute(f'CREATE DATABASE "{name}"')
                fresh, baseline = (admin_url.set(database=name) for name in names)
                seconds = write(fresh, how, values)
                write(baseline, how, values)
                vacuum_analyze(baseline)
                measured = measure_side_by_side(fresh, baseline, queries)
                rows.append((how, seconds, measured["fresh"], measured["baseline"]))
            finally:
                for name in names:
                    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    with psycopg.connect(_plain(admin_url)) as connection:
        version = connection.execute("SHOW server_version").fetchone()[0]
    print(
        f"{args.rows:,} random fingerprints, PostgreSQL {version}: p50 of {QUERIES - 1} Store.query calls in a new "
        "connection, median of 5 interleaved rounds"
    )
    print()
    print("| right after | write s | k=3 ms | baseline | ratio | k=11 ms | baseline | ratio |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for how, seconds, after, base in rows:
        print(
            f"| {how} | {seconds:.1f} | {after[3]:.2f} | {base[3]:.2f} | {after[3] / base[3]:.2f}x "
            f"| {after[11]:.2f} | {base[11]:.2f} | {after[11] / base[11]:.2f}x |"
        )
    print()
    print(
        "baseline: the same database after an explicit VACUUM ANALYZE; targets 1.3x after Store.load, 3x at k=3 after COPY"
    )


if __name__ == "__main__":
    main()
