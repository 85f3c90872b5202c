"""Where the time of an exact search goes: index entries read, and what each one costs.

Issue 12 asks for k = 11 at 10M fingerprints in at most 10 ms and for ``simhash.near_many``
at k = 3 to reach 10,000 queries/s. This script measures why a search costs what it does,
on a store of random fingerprints of its own (``Store.init``, then rows COPYed in and VACUUM
ANALYZE, as ``benchmarks/store_speed.py`` loads them):

* the probe plan ``simhash.near`` uses (the thresholds per block, the probes they make);
* the index entries those probes read per query (counted: the branches without the
  distance filter, ``UNION ALL``), against the N/65,536 per bucket that four 16-bit blocks
  give on uniform fingerprints;
* each timing on query points of its own, never measured before in the run (a point
  measured twice in a row finds its pages in the CPU's caches the second time);
* the p50 execution time of the search statement itself (``near``'s branches, with the
  ``bit_count`` filter), as EXPLAIN ANALYZE reports it (no planning, no round trip);
* the same for the probes without the filter (the index walk alone), so that the two parts
  of the cost per entry show separately;
* ``simhash.near`` itself, round trip included, for comparison with the bare statement.

    python benchmarks/search_cost.py --size 10000000        # the docs/store_speed.md figures
    python benchmarks/search_cost.py --size 1000000 --queries 100
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simhash_store.bits import probes  # noqa: E402
from simhash_store.config import normalize_url  # noqa: E402
from simhash_store.store import Store  # noqa: E402

from store_speed import admin_execute, bulk_load, load_now, machine  # noqa: E402


def _near_thresholds() -> list[tuple[int, int, int, int]]:
    """The thresholds simhash.near uses per k (generalised pigeonhole; revision 0004's table)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "migrations" / "versions" / "0004_near_v2.py"
    spec = importlib.util.spec_from_file_location("revision_0004", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cheapest_thresholds()


THRESHOLDS = _near_thresholds()


def branches(point: int, k: int, filtered: bool) -> tuple[str, list]:
    """``near``'s probe statement for ``point`` at ``k``: with the distance filter, or without it (every entry read)."""
    blocks = [(point >> shift) & 0xFFFF for shift in (48, 32, 16, 0)]
    signed = point - (1 << 64) if point >= 1 << 63 else point
    parts, parameters = [], []
    for number, (block, radius) in enumerate(zip(blocks, THRESHOLDS[k])):
        wanted = probes(block, radius)
        if filtered:
            parts.append(
                f"SELECT c.id FROM simhash.documents c WHERE c.block{number} = ANY (%s) "
                f"AND bit_count((c.fingerprint # %s)::bit(64)) <= %s"
            )
            parameters += [wanted, signed, k]
        else:
            parts.append(f"SELECT c.fingerprint FROM simhash.documents c WHERE c.block{number} = ANY (%s)")
            parameters.append(wanted)
    joiner = " UNION " if filtered else " UNION ALL "
    return f"SELECT count(*) FROM ({joiner.join(parts)}) s", parameters


def p50(connection: psycopg.Connection, statements: list[tuple[str, list]]) -> float:
    """Median execution time in the server (EXPLAIN ANALYZE's, without planning or the round trip)."""
    times = []
    for statement, parameters in statements:
        plan = connection.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + statement, parameters).fetchone()[0]
        times.append(plan[0]["Execution Time"] / 1e3)
    return statistics.median(times)


def counted(connection: psycopg.Connection, statements: list[tuple[str, list]]) -> list[int]:
    return [connection.execute(statement, parameters).fetchone()[0] for statement, parameters in statements]


def round_trip_p50(connection: psycopg.Connection, statements: list[tuple[str, list]]) -> float:
    times = []
    for statement, parameters in statements:
        started = time.perf_counter()
        connection.execute(statement, parameters).fetchall()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--admin-url", default="postgresql://root@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default="simhash_search_cost")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()

    print(machine())
    database = f"{args.database}_{args.size}"
    admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    admin_execute(args.admin_url, f'CREATE DATABASE "{database}"')
    url = (
        normalize_url(args.admin_url)
        .set(database=database, drivername="postgresql")
        .render_as_string(hide_password=False)
    )
    try:
        Store(url).init()
        rng = np.random.default_rng(args.seed)
        stored = rng.integers(0, 2**64, size=args.size, dtype=np.uint64)
        seconds = bulk_load(url, stored)
        print(f"{args.size:,} random fingerprints loaded in {seconds:.0f} s (load {load_now()})\n")
        per_bucket = args.size / 65536
        print(
            "| k | thresholds | probes | entries read per query (expected) | statement p50 | "
            "without the filter | ns per entry | simhash.near p50 | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        with psycopg.connect(url, autocommit=True) as connection:
            # Index-only scans of the block indexes in this process, as inside simhash.near (not a
            # bitmap, a sequential scan, or parallel workers whose start-up would dominate).
            connection.execute("SET enable_seqscan = off")
            connection.execute("SET enable_bitmapscan = off")
            connection.execute("SET max_parallel_workers_per_gather = 0")
            for k in (3, 7, 11):
                # Query points of their own for each measurement: a point measured twice in a row finds
                # its index pages in the CPU's caches the second time (10.7 against 17.8 ms at k = 11).
                counting, bare_points, full_points, near_points = (
                    [int(p) for p in rng.integers(0, 2**64, size=args.queries, dtype=np.uint64)] for _ in range(4)
                )
                entries = counted(connection, [branches(p, k, False) for p in counting])
                bare = p50(connection, [branches(p, k, False) for p in bare_points])
                full = p50(connection, [branches(p, k, True) for p in full_points])
                near = [
                    ("SELECT * FROM simhash.near(%s, %s)", [p - (1 << 64) if p >= 1 << 63 else p, k])
                    for p in near_points
                ]
                near_p50 = round_trip_p50(connection, near)
                count = sum(len(probes(0, r)) for r in THRESHOLDS[k])
                print(
                    f"| {k} | {THRESHOLDS[k]} | {count} | {statistics.mean(entries):,.0f} ({count * per_bucket:,.0f}) | "
                    f"{full * 1e3:.2f} ms | {bare * 1e3:.2f} ms | {full / statistics.mean(entries) * 1e9:.0f} | "
                    f"{near_p50 * 1e3:.2f} ms | {load_now()} |"
                )
    finally:
        if not args.keep:
            admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


if __name__ == "__main__":
    main()
