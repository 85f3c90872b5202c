"""Where the driver's time goes when ``dedup_dataset`` decides in memory (keep first, an empty store).

Starts its own Ray cluster (a head and ``--workers`` worker nodes of one CPU each, stopped at the
end), fingerprints the records of ``ray_speed.py`` on it once, then runs the in-memory decisions
into a fresh database with each stage timed (a wrapper around the function that does it): reading
the fingerprinted records from the cluster, checking them and building the documents, the pairs
within k, the leader pass, the store's transaction (COPY of the keys to number, of the documents,
of the heads), the store's upkeep after it (ANALYZE/VACUUM), the annotations, and the Dataset made
of the result. The baseline is the whole path, timed around it in the same run. Run:

    python benchmarks/ray_driver.py --db postgresql://root@127.0.0.1:5432/postgres --records 200000 -k 4
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict

import ray

from simhash_store import clusters, ray_data
from simhash_store.ray_data import _dedup_fingerprinted, _materialized, fingerprint_dataset
from simhash_store.store import Store, writes

from ray_speed import drop_database, fresh_database, records, start_cluster, stop_cluster

spent: dict[str, float] = defaultdict(float)


def timed(owner: object, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper that adds its time to ``spent[label]``."""
    function = getattr(owner, name)

    def wrapper(*arguments, **options):
        started = time.perf_counter()
        try:
            return function(*arguments, **options)
        finally:
            spent[label] += time.perf_counter() - started

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="admin URL of a PostgreSQL server (a database is made and dropped)")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--chars", type=int, default=300)
    parser.add_argument("--workers", type=int, default=1, help="worker nodes beside the head, one CPU each")
    parser.add_argument("-k", type=int, default=4)
    options = parser.parse_args()
    data = records(options.records, options.chars)
    print(f"{len(data):,} records; load average {os.getloadavg()[0]:.1f}", flush=True)
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    name = None
    try:
        ray.init(address=start_cluster(options.workers, temp), log_to_driver=False, logging_level="ERROR")
        started = time.perf_counter()
        fingerprinted = _materialized(fingerprint_dataset(ray.data.from_items(data)))
        print(f"fingerprinted on the cluster in {time.perf_counter() - started:.1f} s", flush=True)
        timed(ray_data, "_rows_of", "reading the fingerprinted records from the cluster (_rows_of)")
        timed(clusters, "near_pairs", "pairs within k (pairs.near_pairs)")
        timed(clusters, "leaders_with_copies", "leader pass (clusters.leaders_with_copies, pairs included)")
        timed(writes, "add_decided", "store: one transaction, COPY of keys, documents, heads (writes.add_decided)")
        timed(Store, "add_decided", "store: transaction and upkeep after it (Store.add_decided)")
        timed(ray.data, "from_items", "the result as a Dataset (ray.data.from_items)")
        name, url = fresh_database(options.db)
        started = time.perf_counter()
        with Store(url) as store:
            rows = _dedup_fingerprinted(fingerprinted, store, store.init(), options.k, join=False)
        ray.data.from_items(rows)  # what dedup_dataset returns
        total = time.perf_counter() - started
        print(f"load average {os.getloadavg()[0]:.1f}")
        reading = spent["reading the fingerprinted records from the cluster (_rows_of)"]
        leaders = spent["leader pass (clusters.leaders_with_copies, pairs included)"]
        pairs = spent["pairs within k (pairs.near_pairs)"]
        transaction = spent["store: one transaction, COPY of keys, documents, heads (writes.add_decided)"]
        storing = spent["store: transaction and upkeep after it (Store.add_decided)"]
        dataset = spent["the result as a Dataset (ray.data.from_items)"]
        stages = [
            ("reading the fingerprinted records from the cluster (`_rows_of`)", reading),
            ("pairs within k (`pairs.near_pairs`)", pairs),
            ("leader pass over the pairs (`clusters.leaders_with_copies` less the pairs)", leaders - pairs),
            ("store: one transaction, COPY of keys, documents and heads (`writes.add_decided`)", transaction),
            (
                "store: upkeep after it (ANALYZE/VACUUM, `Store.add_decided` less the transaction)",
                storing - transaction,
            ),
            ("the result as a Dataset (`ray.data.from_items`)", dataset),
            (
                "the rest: checking the records, building the documents and the annotations, the store's checks",
                total - reading - leaders - storing - dataset,
            ),
        ]
        print(f"| in-memory decisions, {len(data):,} records, k = {options.k} | seconds | share |")
        print("|---|--:|--:|")
        for label, seconds in stages:
            print(f"| {label} | {seconds:.1f} | {seconds / total:.0%} |")
        print(f"| **the whole path** (baseline) | {total:.1f} | 100% |")
        print(f"{len(data) / total:,.0f} records/s; duplicates {sum(1 for r in rows if r['duplicate_of']):,}")
    finally:
        if name is not None:
            drop_database(options.db, name)
        ray.shutdown()
        stop_cluster(temp)


if __name__ == "__main__":
    main()
