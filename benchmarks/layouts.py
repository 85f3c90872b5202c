"""The block layouts of ``init --layout`` as a user gets them: four16 against wide3 and lean, through the library.

For each ``--sizes`` value, one store per layout (``--layouts``) of the same fingerprints
(10-character keys), each made by the library (``Store.init(layout=...)``, ``Store.load``,
which builds the layout's indexes after the COPY and runs ANALYZE): four16 (the default, the
baseline), wide3 and lean. Then, the stores alternated query by query (or batch by batch) so
that the machine's load falls on all of them:

* bytes per document of the table and all its indexes (main forks), and of its parts;

* ``simhash.near`` at k = 3 and k = 11 (``--distances``): p50 and p99 of one call with its
  round trip (the statement ``Store.query`` sends), each layout on query points of its own;
* ``simhash.near_many`` batches (``--batch`` points at k = 3, a tenth of that at larger k):
  queries/s at the batch p50;
* ``Store.add`` of ``--add-rows`` new documents into each store (chunks of ``--add-chunk``,
  the layouts alternated chunk by chunk): rows/s and the WAL written per row (server-wide
  LSN: on a shared server other databases' writes count too; the background WAL rate
  measured just before is printed beside it);
* the ratio of each figure to four16's from the same run; the load and index build times;
* a sample of every layout's answers against numpy brute force (``--checked`` points).

The fingerprints are random, with ``--planted`` near copies (1..11 bits) of each query point,
so that the searches have answers.

    python benchmarks/layouts.py --sizes 2000000
    python benchmarks/layouts.py --sizes 1000000 --layouts four16,lean
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
from simhash_store.store.layout import INDEXES  # noqa: E402

from store_speed import admin_execute, load_now, machine  # noqa: E402

NEAR = "SELECT id, key, fingerprint, distance FROM simhash.near(%s::bigint, %s::integer)"
NEAR_MANY = "SELECT query_index, id, key, fingerprint, distance FROM simhash.near_many(%s::bigint[], %s::integer)"
BASELINE = "four16"
# The documents table's relations, main forks: the heap, its TOAST table and every index of either.
RELATIONS = """
SELECT c.relname, pg_catalog.pg_relation_size(c.oid)
FROM pg_catalog.pg_class c
WHERE c.oid = 'simhash.documents'::regclass
   OR c.oid IN (SELECT indexrelid FROM pg_catalog.pg_index WHERE indrelid = 'simhash.documents'::regclass)
   OR c.oid = (SELECT reltoastrelid FROM pg_catalog.pg_class WHERE oid = 'simhash.documents'::regclass)
   OR c.oid IN (SELECT indexrelid FROM pg_catalog.pg_index
                WHERE indrelid = (SELECT reltoastrelid FROM pg_catalog.pg_class WHERE oid = 'simhash.documents'::regclass))
"""
WAL_LSN = "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), '0/0')"


def key_of(i: int) -> str:
    """The key of row i: 10 characters."""
    return f"k{i:09d}"


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
        store.load(NewDocument(key_of(i), v) for i, v in enumerate(stored.tolist()))
    seconds = time.perf_counter() - started
    with psycopg.connect(url) as connection:
        size = sum(
            connection.execute("SELECT pg_relation_size(%s::regclass)", [f"simhash.{name}"]).fetchone()[0]
            for name in INDEXES[layout]
        )
    return seconds, size


def brute_force(stored: np.ndarray, point: int, k: int) -> set[str]:
    distances = np.bitwise_count(stored ^ np.uint64(point))
    return {key_of(int(i)) for i in np.flatnonzero(distances <= k)}


def timed(connection: psycopg.Connection, sql: str, parameters: list) -> tuple[float, list]:
    started = time.perf_counter()
    rows = connection.execute(sql, parameters, prepare=True).fetchall()
    return (time.perf_counter() - started) * 1e3, rows


def relation_bytes(url: str) -> dict[str, int]:
    """Bytes of each relation of the documents table (heap, TOAST, every index), main forks."""
    found: dict[str, int] = {}
    with psycopg.connect(url) as connection:
        for name, size in connection.execute(RELATIONS).fetchall():
            if name.startswith("pg_toast"):
                name = "TOAST index" if name.endswith("_index") else "TOAST"
            elif name.startswith(("ix_documents_block", "ix_documents_wide", "ix_documents_lean")):
                name = f"search index {name[-1]} (block{name[-1]}, wide{name[-1]}, lean{name[-1]})"
            found[name] = found.get(name, 0) + size
    return found


def without_block_columns(url: str) -> int:
    """Heap bytes of a copy of the table without the four block columns: what dropping them would save."""
    with psycopg.connect(url) as connection:
        columns = [
            row[0]
            for row in connection.execute(
                "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = 'simhash.documents'::regclass "
                "AND attnum > 0 AND NOT attisdropped AND attname NOT LIKE 'block_' ORDER BY attnum"
            )
        ]
        connection.execute(
            f"CREATE TEMPORARY TABLE lean_copy AS SELECT {', '.join(columns)} FROM simhash.documents ORDER BY id"
        )
        return connection.execute("SELECT pg_catalog.pg_relation_size('lean_copy')").fetchone()[0]


def wal_now(url: str) -> int:
    with psycopg.connect(url) as connection:
        return int(connection.execute(WAL_LSN).fetchone()[0])


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}x" if baseline else "-"


def measure(size: int, args: argparse.Namespace, rng: np.random.Generator) -> None:
    layouts = args.layouts.split(",")
    others = [layout for layout in layouts if layout != BASELINE]
    distances = [int(k) for k in args.distances.split(",")]
    batch_sizes = {k: args.batch if k <= 3 else max(args.batch // 10, 1) for k in distances}
    single = {(layout, k): [] for layout in layouts for k in distances}
    batches = {(layout, k): [] for layout in layouts for k in distances}
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
    databases = {layout: f"{args.database}_{layout}_{size}" for layout in layouts}
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

        parts = {layout: relation_bytes(url) for layout, url in urls.items()}
        totals = {layout: sum(found.values()) for layout, found in parts.items()}
        print(
            "\n| bytes a document | "
            + " | ".join(layouts)
            + " | "
            + " | ".join(f"{o} / {BASELINE}" for o in others)
            + " |"
        )
        print("|---|" + "--:|" * (len(layouts) + len(others)))
        for name in sorted({name for found in parts.values() for name in found}):
            print(
                f"| {name} | "
                + " | ".join(f"{parts[layout].get(name, 0) / size:.1f}" for layout in layouts)
                + " | "
                + " | ".join(ratio(parts[o].get(name, 0), parts[BASELINE].get(name, 0)) for o in others)
                + " |"
            )
        print(
            "| **table + indexes** | "
            + " | ".join(f"**{totals[layout] / size:.1f}**" for layout in layouts)
            + " | "
            + " | ".join(f"**{ratio(totals[o], totals[BASELINE])}**" for o in others)
            + " |"
        )
        heap = parts[BASELINE]["documents"]
        copy = without_block_columns(urls[BASELINE])
        print(
            f"\nThe heap without the four block columns (a copy): {copy / size:.1f} bytes a document against "
            f"{heap / size:.1f} with them ({(heap - copy) / size:.1f} saved)."
        )

        connections = {layout: psycopg.connect(url, autocommit=True) for layout, url in urls.items()}
        try:
            print(
                "\n| k | simhash.near | "
                + " | ".join(f"{layout} p50 | {layout} p99" for layout in layouts)
                + " | "
                + " | ".join(f"{o} / {BASELINE} (p50)" for o in others)
                + " | answers checked | load |"
            )
            print("|--:|---|" + "--:|" * (2 * len(layouts) + len(others)) + "---|---|")
            for k in distances:
                times: dict[str, list[float]] = {layout: [] for layout in layouts}
                wrong = dict.fromkeys(layouts, 0)
                for i in range(args.queries):
                    for layout in layouts:
                        point = single[layout, k][i]
                        taken, rows = timed(connections[layout], NEAR, [to_signed(point), k])
                        times[layout].append(taken)
                        if i < args.checked:
                            wrong[layout] += {row[1] for row in rows} != brute_force(stored, point, k)
                p50 = {layout: statistics.median(times[layout]) for layout in layouts}
                p99 = {layout: float(np.percentile(times[layout], 99)) for layout in layouts}
                checked = ", ".join(f"{layout} {args.checked - wrong[layout]}/{args.checked}" for layout in layouts)
                print(
                    f"| {k} | one call, round trip | "
                    + " | ".join(f"{p50[layout]:.3f} ms | {p99[layout]:.3f} ms" for layout in layouts)
                    + " | "
                    + " | ".join(ratio(p50[o], p50[BASELINE]) for o in others)
                    + f" | {checked} equal to brute force | {load_now()} |",
                    flush=True,
                )

            print(
                "\n| k | simhash.near_many | batch | "
                + " | ".join(f"{layout} queries/s" for layout in layouts)
                + " | "
                + " | ".join(f"{o} / {BASELINE} (speed)" for o in others)
                + " | answers checked | load |"
            )
            print("|--:|---|--:|" + "--:|" * (len(layouts) + len(others)) + "---|---|")
            for k in distances:
                size_of_batch = batch_sizes[k]
                times = {layout: [] for layout in layouts}
                wrong = dict.fromkeys(layouts, 0)
                for n in range(args.batches):
                    for layout in layouts:
                        batch = batches[layout, k][n * size_of_batch : (n + 1) * size_of_batch]
                        taken, rows = timed(connections[layout], NEAR_MANY, [[to_signed(p) for p in batch], k])
                        times[layout].append(taken)
                        if n == 0:
                            found: dict[int, set[str]] = {}
                            for row in rows:
                                found.setdefault(row[0], set()).add(row[2])
                            for i, point in enumerate(batch[: args.checked], start=1):
                                wrong[layout] += found.get(i, set()) != brute_force(stored, point, k)
                speed = {layout: size_of_batch / statistics.median(times[layout]) * 1e3 for layout in layouts}
                checked = ", ".join(f"{layout} {args.checked - wrong[layout]}/{args.checked}" for layout in layouts)
                print(
                    f"| {k} | batches, p50 | {size_of_batch:,} | "
                    + " | ".join(f"{speed[layout]:,.0f}" for layout in layouts)
                    + " | "
                    + " | ".join(ratio(speed[o], speed[BASELINE]) for o in others)
                    + f" | {checked} equal to brute force | {load_now()} |",
                    flush=True,
                )
        finally:
            for connection in connections.values():
                connection.close()

        if args.add_rows:
            add(size, args, urls, layouts, others, rng)
    finally:
        if not args.keep:
            for database in databases.values():
                admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def add(
    size: int,
    args: argparse.Namespace,
    urls: dict[str, str],
    layouts: list[str],
    others: list[str],
    rng: np.random.Generator,
) -> None:
    """Store.add of new documents into each store, the layouts alternated chunk by chunk; rows/s and WAL a row."""
    fresh = {layout: rng.integers(0, 2**64, size=args.add_rows, dtype=np.uint64).tolist() for layout in layouts}
    idle_started, idle_wal = time.perf_counter(), wal_now(urls[BASELINE])
    time.sleep(5)
    background = (wal_now(urls[BASELINE]) - idle_wal) / (time.perf_counter() - idle_started)
    seconds = dict.fromkeys(layouts, 0.0)
    wal = dict.fromkeys(layouts, 0)
    stores = {layout: Store(url) for layout, url in urls.items()}
    try:
        for start in range(0, args.add_rows, args.add_chunk):
            for layout in layouts:
                chunk = [
                    NewDocument(f"n{start + i:09d}", value)
                    for i, value in enumerate(fresh[layout][start : start + args.add_chunk])
                ]
                before = wal_now(urls[layout])
                started = time.perf_counter()
                result = stores[layout].add(chunk)
                seconds[layout] += time.perf_counter() - started
                wal[layout] += wal_now(urls[layout]) - before
                assert result.added == len(chunk), result
    finally:
        for store in stores.values():
            store.close()
    rate = {layout: args.add_rows / seconds[layout] for layout in layouts}
    per_row = {layout: wal[layout] / args.add_rows for layout in layouts}
    print(
        f"\n| Store.add of {args.add_rows:,} new documents into {size:,} (chunks of {args.add_chunk:,}) | "
        + " | ".join(layouts)
        + " | "
        + " | ".join(f"{o} / {BASELINE}" for o in others)
        + " | load |"
    )
    print("|---|" + "--:|" * (len(layouts) + len(others)) + "---|")
    print(
        "| rows/s | "
        + " | ".join(f"{rate[layout]:,.0f}" for layout in layouts)
        + " | "
        + " | ".join(ratio(rate[o], rate[BASELINE]) for o in others)
        + f" | {load_now()} |"
    )
    print(
        "| WAL a row (server-wide) | "
        + " | ".join(f"{per_row[layout] / 1024:.2f} KiB" for layout in layouts)
        + " | "
        + " | ".join(ratio(per_row[o], per_row[BASELINE]) for o in others)
        + " | |"
    )
    print(f"\nBackground WAL just before (other databases of the server): {background / 1024:.1f} KiB/s.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000000")
    parser.add_argument("--layouts", default="four16,wide3,lean", help="four16 (the baseline) first")
    parser.add_argument("--distances", default="3,11")
    parser.add_argument("--queries", type=int, default=300, help="simhash.near calls per layout and k")
    parser.add_argument("--batch", type=int, default=1000, help="near_many batch at k = 3 (a tenth at larger k)")
    parser.add_argument("--batches", type=int, default=8, help="batches per layout and k")
    parser.add_argument("--planted", type=int, default=8, help="near copies stored per query point")
    parser.add_argument("--checked", type=int, default=20, help="answers per row checked against brute force")
    parser.add_argument("--add-rows", type=int, default=100_000, help="new documents Store.add writes into each store")
    parser.add_argument("--add-chunk", type=int, default=10_000, help="documents a Store.add call")
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
