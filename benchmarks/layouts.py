"""The two block layouts of ``init --layout`` as a user gets them: four16 against wide3, through the library.

For each ``--sizes`` value, two stores of the same fingerprints, each made by the library
(``Store.init(layout=...)``, ``Store.load``, which builds the layout's indexes after the COPY
and runs ANALYZE): four16 (the default, the baseline) and wide3. Then, the stores alternated
query by query so that the machine's load falls on both:

* ``simhash.near`` at k = 3 and k = 11 (``--distances``): p50 and p99 of one call with its
  round trip (the statement ``Store.query`` sends), each layout on query points of its own;
* ``simhash.near_many`` batches (``--batch`` points at k = 3, a tenth of that at larger k):
  queries/s at the batch p50;
* the ratio of each wide3 figure to four16's from the same run; the load and index build
  times, the bytes of each layout's search indexes per document;
* a sample of every layout's answers against numpy brute force (``--checked`` points).

The fingerprints are random, with ``--planted`` near copies (1..11 bits) of each query point,
so that the searches have answers.

    python benchmarks/layouts.py --sizes 2000000
    python benchmarks/layouts.py --sizes 2000000,10000000 --queries 200
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

from simhash_store.bits import to_signed  # noqa: E402
from simhash_store.config import normalize_url  # noqa: E402
from simhash_store.store import NewDocument, Store  # noqa: E402
from simhash_store.store.layout import INDEXES, LAYOUTS  # noqa: E402

from store_speed import admin_execute, load_now, machine  # noqa: E402

NEAR = "SELECT id, key, fingerprint, distance FROM simhash.near(%s::bigint, %s::integer)"
NEAR_MANY = "SELECT query_index, id, key, fingerprint, distance FROM simhash.near_many(%s::bigint[], %s::integer)"


def url_of(admin_url: str, database: str) -> str:
    return (
        normalize_url(admin_url).set(database=database, drivername="postgresql").render_as_string(hide_password=False)
    )


def fingerprints(size: int, points: list[int], planted: int, rng: np.random.Generator) -> np.ndarray:
    """Random fingerprints, the first rows near copies of ``points`` (1..11 bits away)."""
    stored = rng.integers(0, 2**64, size=size, dtype=np.uint64)
    row = 0
    for point in points:
        for _ in range(planted):
            if row >= size:
                return stored
            flips = rng.choice(64, size=int(rng.integers(1, 12)), replace=False)
            stored[row] = np.uint64(point ^ sum(1 << int(b) for b in flips))
            row += 1
    return stored


def build(url: str, layout: str, stored: np.ndarray) -> tuple[float, int]:
    """A store of ``layout`` holding ``stored`` (keys k0, k1, ...), made by the library; (seconds, index bytes)."""
    started = time.perf_counter()
    with Store(url) as store:
        store.init(layout=layout)
        store.load(NewDocument(f"k{i}", v) for i, v in enumerate(stored.tolist()))
    seconds = time.perf_counter() - started
    with psycopg.connect(url) as connection:
        size = sum(
            connection.execute("SELECT pg_relation_size(%s::regclass)", [f"simhash.{name}"]).fetchone()[0]
            for name in INDEXES[layout]
        )
    return seconds, size


def brute_force(stored: np.ndarray, point: int, k: int) -> set[str]:
    distances = np.bitwise_count(stored ^ np.uint64(point))
    return {f"k{i}" for i in np.flatnonzero(distances <= k)}


def timed(connection: psycopg.Connection, sql: str, parameters: list) -> tuple[float, list]:
    started = time.perf_counter()
    rows = connection.execute(sql, parameters, prepare=True).fetchall()
    return (time.perf_counter() - started) * 1e3, rows


def measure(size: int, args: argparse.Namespace, rng: np.random.Generator) -> None:
    distances = [int(k) for k in args.distances.split(",")]
    batch_sizes = {k: args.batch if k <= 3 else max(args.batch // 10, 1) for k in distances}
    single = {(layout, k): [] for layout in LAYOUTS for k in distances}
    batches = {(layout, k): [] for layout in LAYOUTS for k in distances}
    # Query points of their own for every measurement, drawn before the store so their copies are in it.
    for key in single:
        single[key] = [int(p) for p in rng.integers(0, 2**64, size=args.queries, dtype=np.uint64)]
    for layout, k in batches:
        count = batch_sizes[k] * args.batches
        batches[layout, k] = [int(p) for p in rng.integers(0, 2**64, size=count, dtype=np.uint64)]
    points = [p for group in [*single.values(), *batches.values()] for p in group]
    stored = fingerprints(size, points, args.planted, rng)

    print(
        f"\n## {size:,} fingerprints (start: load {load_now()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n"
    )
    databases = {layout: f"{args.database}_{layout}_{size}" for layout in LAYOUTS}
    urls = {layout: url_of(args.admin_url, database) for layout, database in databases.items()}
    built: dict[str, tuple[float, int]] = {}
    try:
        for layout, url in urls.items():
            admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{databases[layout]}" WITH (FORCE)')
            admin_execute(args.admin_url, f'CREATE DATABASE "{databases[layout]}"')
            built[layout] = build(url, layout, stored)
        print("| layout | Store.init + Store.load | per 1M rows | search indexes, bytes a document | load |")
        print("|---|--:|--:|--:|---|")
        for layout, (seconds, index_bytes) in built.items():
            print(
                f"| {layout} | {seconds:.1f} s | {seconds / size * 1e6:.1f} s | {index_bytes / size:.1f} | {load_now()} |"
            )

        connections = {layout: psycopg.connect(url, autocommit=True) for layout, url in urls.items()}
        try:
            print(
                "\n| k | simhash.near | four16 p50 | four16 p99 | wide3 p50 | wide3 p99 | wide3 / four16 (p50) | "
                "answers checked | load |"
            )
            print("|--:|---|--:|--:|--:|--:|--:|---|---|")
            for k in distances:
                times: dict[str, list[float]] = {layout: [] for layout in LAYOUTS}
                wrong = dict.fromkeys(LAYOUTS, 0)
                for i in range(args.queries):
                    for layout in LAYOUTS:
                        point = single[layout, k][i]
                        taken, rows = timed(connections[layout], NEAR, [to_signed(point), k])
                        times[layout].append(taken)
                        if i < args.checked:
                            wrong[layout] += {row[1] for row in rows} != brute_force(stored, point, k)
                p50 = {layout: statistics.median(times[layout]) for layout in LAYOUTS}
                p99 = {layout: float(np.percentile(times[layout], 99)) for layout in LAYOUTS}
                checked = ", ".join(f"{layout} {args.checked - wrong[layout]}/{args.checked}" for layout in LAYOUTS)
                print(
                    f"| {k} | one call, round trip | {p50['four16']:.3f} ms | {p99['four16']:.3f} ms | "
                    f"{p50['wide3']:.3f} ms | {p99['wide3']:.3f} ms | {p50['wide3'] / p50['four16']:.2f}x | "
                    f"{checked} equal to brute force | {load_now()} |",
                    flush=True,
                )

            print(
                "\n| k | simhash.near_many | batch | four16 queries/s | wide3 queries/s | wide3 / four16 (speed) | "
                "answers checked | load |"
            )
            print("|--:|---|--:|--:|--:|--:|---|---|")
            for k in distances:
                size_of_batch = batch_sizes[k]
                times = {layout: [] for layout in LAYOUTS}
                wrong = dict.fromkeys(LAYOUTS, 0)
                for n in range(args.batches):
                    for layout in LAYOUTS:
                        batch = batches[layout, k][n * size_of_batch : (n + 1) * size_of_batch]
                        taken, rows = timed(connections[layout], NEAR_MANY, [[to_signed(p) for p in batch], k])
                        times[layout].append(taken)
                        if n == 0:
                            found: dict[int, set[str]] = {}
                            for row in rows:
                                found.setdefault(row[0], set()).add(row[2])
                            for i, point in enumerate(batch[: args.checked], start=1):
                                wrong[layout] += found.get(i, set()) != brute_force(stored, point, k)
                speed = {layout: size_of_batch / statistics.median(times[layout]) * 1e3 for layout in LAYOUTS}
                checked = ", ".join(f"{layout} {args.checked - wrong[layout]}/{args.checked}" for layout in LAYOUTS)
                print(
                    f"| {k} | batches, p50 | {size_of_batch:,} | {speed['four16']:,.0f} | {speed['wide3']:,.0f} | "
                    f"{speed['wide3'] / speed['four16']:.2f}x | {checked} equal to brute force | {load_now()} |",
                    flush=True,
                )
        finally:
            for connection in connections.values():
                connection.close()
    finally:
        if not args.keep:
            for database in databases.values():
                admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000000")
    parser.add_argument("--distances", default="3,11")
    parser.add_argument("--queries", type=int, default=300, help="simhash.near calls per layout and k")
    parser.add_argument("--batch", type=int, default=1000, help="near_many batch at k = 3 (a tenth at larger k)")
    parser.add_argument("--batches", type=int, default=8, help="batches per layout and k")
    parser.add_argument("--planted", type=int, default=8, help="near copies stored per query point")
    parser.add_argument("--checked", type=int, default=20, help="answers per row checked against brute force")
    parser.add_argument("--admin-url", default="postgresql://root@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default="layouts_bench")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(args.seed)
    for size in (int(s) for s in args.sizes.split(",")):
        measure(size, args, rng)
    print(f"\nend: load {load_now()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


if __name__ == "__main__":
    main()
