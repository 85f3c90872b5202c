"""One node against a Citus coordinator with two workers, on the same data, on this machine.

Starts its own cluster (tests/distributed/cluster.py: three PostgreSQL 15 servers with
Citus from ../shared/citus, same settings each), and on it two databases: a plain one
on the coordinator's server (one node, no Citus) and a distributed store
(``Store.init(distributed=True)``). Both get the same fingerprints (store_speed's data:
random, with planted neighbours at distances 1..10 of each query point) and are measured
the same way, in the same run:

* bulk load through ``Store.load`` into the empty store, then ``Store.optimize``;
* ``Store.query`` p50 / p99 at k = 3 and k = 11 (answers checked against brute force);
* ``Store.query_many`` throughput, 1,000 fingerprints a call, k = 3;
* ``Store.add`` rate of new documents into the loaded store;
* ``Store.pairs(3)`` (``dups -k 3``);
* the fan-out overhead: the same queries against a store of one row;
* per shard: rows, table and block-index bytes (the plan in docs/scale-out.md uses them).

    python benchmarks/distributed.py --size 1000000
    python benchmarks/distributed.py --size 100000 --shards 4     # a quick run

All three nodes share this machine's cores, so the cluster cannot be faster here: the
figures give the per-node cost and the overhead of spreading, not a speed-up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from simhash_store.store import NewDocument, Store  # noqa: E402
from tests.distributed.cluster import Cluster, unavailable  # noqa: E402

from store_speed import key_of, load_now, machine, make_data, percentile  # noqa: E402


def documents(values: np.ndarray, start: int = 0) -> list[NewDocument]:
    return [NewDocument(key_of(start + i), int(v)) for i, v in enumerate(values.tolist())]


def brute(stored: np.ndarray, point: int, k: int) -> list[int]:
    distances = np.bitwise_count(stored ^ np.uint64(point))
    return sorted(distances[distances <= k].tolist())


def timed_queries(store: Store, points: np.ndarray, k: int) -> tuple[list[float], list]:
    times, results = [], []
    for point in points.tolist():
        started = time.perf_counter()
        results.append(store.query(int(point), k))
        times.append(time.perf_counter() - started)
    return times, results


def shard_figures(url: str) -> dict[str, float]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            """
            SELECT s.shardid, p.nodeport,
                   (SELECT result::bigint FROM run_command_on_placements(
                        'simhash.documents', 'SELECT count(*) FROM %s') r WHERE r.shardid = s.shardid) AS rows,
                   (SELECT result::bigint FROM run_command_on_placements(
                        'simhash.documents', 'SELECT pg_table_size(''%s'')') r WHERE r.shardid = s.shardid) AS heap,
                   (SELECT result::bigint FROM run_command_on_placements(
                        'simhash.documents', 'SELECT pg_indexes_size(''%s'')') r WHERE r.shardid = s.shardid) AS indexes
            FROM pg_dist_shard s JOIN pg_dist_placement pl USING (shardid) JOIN pg_dist_node p ON p.groupid = pl.groupid
            WHERE s.logicalrelid = 'simhash.documents'::regclass
            """
        ).fetchall()
    counts = [r[2] for r in rows]
    return {
        "shards": len(rows),
        "workers": len({r[1] for r in rows}),
        "rows_min": min(counts),
        "rows_max": max(counts),
        "heap_bytes": sum(r[3] for r in rows),
        "index_bytes": sum(r[4] for r in rows),
    }


def single_node_sizes(url: str) -> dict[str, float]:
    with psycopg.connect(url) as connection:
        heap, indexes, blocks = connection.execute(
            "SELECT pg_table_size('simhash.documents'), pg_indexes_size('simhash.documents'), "
            "(SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = 'simhash.documents'::regclass "
            " AND indexrelid::regclass::text LIKE 'simhash.ix_documents_block%')"
        ).fetchone()
    return {"heap_bytes": heap, "index_bytes": indexes, "block_index_bytes": blocks}


def bench(url: str, distributed: bool, stored: np.ndarray, points: np.ndarray, args) -> dict[str, float]:
    figures: dict[str, float] = {}
    with Store(url) as store:
        store.init(distributed=distributed)
        # Fan-out overhead first: the same queries against one stored row.
        store.add([NewDocument("only", int(points[0]))])
        for k in (3, 11):
            times, _ = timed_queries(store, points[: args.queries], k)
            figures[f"empty k={k} p50"] = statistics.median(times)
        store.remove(["only"])

        batch = documents(stored)
        started = time.perf_counter()
        store.load(batch)
        store.optimize()
        figures["load rate"] = len(stored) / (time.perf_counter() - started)
        del batch

        checked = 0
        for k in (3, 11):
            store.query(int(points[0]), k)  # warm the connection
            times, results = timed_queries(store, points[: args.queries], k)
            figures[f"k={k} p50"] = statistics.median(times)
            figures[f"k={k} p99"] = percentile(times, 0.99)
            for point, matches in list(zip(points.tolist(), results))[:20]:
                assert sorted(m.distance for m in matches) == brute(stored, point, k), (k, point)
                checked += 1
        figures["checked"] = checked

        many = points[:1000] if len(points) >= 1000 else np.resize(points, 1000)
        started = time.perf_counter()
        rounds = 0
        while rounds < 2 or time.perf_counter() - started < 3:
            store.query_many([int(v) for v in many.tolist()], 3)
            rounds += 1
        figures["near_many q/s"] = rounds * len(many) / (time.perf_counter() - started)

        extra = np.random.default_rng(args.seed + 1).integers(0, 2**64, size=args.add, dtype=np.uint64)
        batch = documents(extra, start=len(stored))
        started = time.perf_counter()
        result = store.add(batch)
        figures["add rate"] = result.added / (time.perf_counter() - started)

        started = time.perf_counter()
        pairs = store.pairs(3)
        figures["dups -k 3 s"] = time.perf_counter() - started
        figures["pairs"] = len(pairs)
    figures.update(shard_figures(url) if distributed else single_node_sizes(url))
    return figures


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--add", type=int, default=20_000, help="documents added through Store.add after the load")
    parser.add_argument("--shards", type=int, default=8, help="shards of simhash.documents (citus.shard_count)")
    parser.add_argument(
        "--cached-connections",
        type=int,
        default=None,
        help="citus.max_cached_conns_per_worker on the coordinator (default: shards per worker; Citus's own default is 1)",
    )
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()
    reason = unavailable()
    if reason:
        raise SystemExit(f"no cluster here: {reason}")
    stored, points = make_data(args.size, max(args.queries, 1000), args.seed)
    print(f"machine: {machine()}; load before: {load_now()}")
    cached = args.cached_connections or max(1, args.shards // 2)
    print(f"citus.shard_count = {args.shards}, citus.max_cached_conns_per_worker = {cached}")
    settings = {
        "citus.shard_count": str(args.shards),
        "shared_buffers": "'1GB'",
        "citus.max_cached_conns_per_worker": str(cached),
    }
    with Cluster.start(settings=settings) as cluster:
        cluster.execute('CREATE DATABASE "single"')
        single = bench(cluster.url("single"), False, stored, points, args)
        print(f"one node done; load {load_now()}", flush=True)
        distributed = bench(cluster.create_database("spread"), True, stored, points, args)
        print(f"cluster done; load {load_now()}", flush=True)

    rows = [
        ("bulk load (Store.load + optimize), fp/s", "load rate", lambda v: f"{v:,.0f}"),
        ("query k=3 p50", "k=3 p50", ms),
        ("query k=3 p99", "k=3 p99", ms),
        ("query k=11 p50", "k=11 p50", ms),
        ("query k=11 p99", "k=11 p99", ms),
        ("near_many k=3, queries/s", "near_many q/s", lambda v: f"{v:,.0f}"),
        ("add into the loaded store, docs/s", "add rate", lambda v: f"{v:,.0f}"),
        ("dups -k 3 (Store.pairs)", "dups -k 3 s", lambda v: f"{v:.2f} s"),
        ("fan-out only: k=3 p50 on 1 row", "empty k=3 p50", ms),
        ("fan-out only: k=11 p50 on 1 row", "empty k=11 p50", ms),
    ]
    print(
        f"\n{args.size:,} fingerprints, {args.queries} queries each; coordinator + {distributed['workers']} workers, "
        f"{distributed['shards']} shards ({distributed['rows_min']:,}-{distributed['rows_max']:,} rows each)\n"
    )
    print("| measure | one node | Citus (coordinator + 2 workers) | cluster / one node |")
    print("|---|--:|--:|--:|")
    for label, name, fmt in rows:
        ratio = distributed[name] / single[name] if single[name] else float("nan")
        print(f"| {label} | {fmt(single[name])} | {fmt(distributed[name])} | {ratio:.2f} |")
    print(
        f"\npairs within 3: one node {single['pairs']:,}, cluster {distributed['pairs']:,}; "
        f"answers checked against brute force: {single['checked']} + {distributed['checked']}"
    )
    per_row = single["block_index_bytes"] / args.size
    print(
        f"one node: heap {single['heap_bytes'] / 2**20:.0f} MiB, indexes {single['index_bytes'] / 2**20:.0f} MiB "
        f"(block indexes {per_row:.1f} bytes a row)"
    )
    print(
        f"cluster: heap {distributed['heap_bytes'] / 2**20:.0f} MiB, indexes {distributed['index_bytes'] / 2**20:.0f} MiB "
        f"over {distributed['shards']} shards ({distributed['index_bytes'] / distributed['shards'] / 2**20:.1f} MiB of "
        f"indexes a shard)"
    )
    print(f"load after: {load_now()}")


if __name__ == "__main__":
    main()
