"""Where the driver's time goes when ``dedup_dataset`` decides in memory (keep first, an empty store).

Starts its own Ray cluster (a head and ``--workers`` worker nodes of one CPU each, stopped at the
end), fingerprints the records of ``ray_speed.py`` on it once (materialized, as ``dedup_dataset``
holds them), then runs the in-memory decisions into a fresh database with each stage timed (a
wrapper around the function that does it): the records checked on the workers and the decisions'
columns read from the cluster (keys, fingerprints, digests, lengths), the documents to store built,
the pairs within k, the leader pass, the store's transaction (COPY of the keys to number, of the
documents, of the heads), the store's upkeep after it (ANALYZE/VACUUM), and the annotations added
on the workers (the Dataset ``dedup_dataset`` returns). The baseline is the whole path, timed
around it in the same run. Run:

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

spent: dict[str, float] = defaultdict(float)  # wall time
busy: dict[str, float] = defaultdict(float)  # the driver's CPU time (this process; not the workers', not the server's)


def timed(owner: object, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper that adds its time to ``spent[label]`` and ``busy[label]``."""
    function = getattr(owner, name)

    def wrapper(*arguments, **options):
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*arguments, **options)
        finally:
            spent[label] += time.perf_counter() - started
            busy[label] += time.process_time() - cpu

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
        labels = {
            "columns": "records checked on the workers, the decisions' columns read by the driver (`_decision_columns`)",
            "documents": "the documents to store built from the columns (`_documents`)",
            "pairs": "pairs within k (`pairs.near_pairs`)",
            "leaders": "leader pass over the pairs (`clusters.leaders_with_copies` less the pairs)",
            "transaction": "store: one transaction, COPY of keys, documents and heads (`writes.add_decided`)",
            "upkeep": "store: upkeep after it (ANALYZE/VACUUM, `Store.add_decided` less the transaction)",
            "annotations": "annotations added on the workers, the result a Dataset (`_annotated_dataset`)",
        }
        timed(ray_data, "_decision_columns", "columns")
        timed(ray_data, "_documents", "documents")
        timed(clusters, "near_pairs", "pairs")
        timed(clusters, "leaders_with_copies", "leaders")
        timed(writes, "add_decided", "transaction")
        timed(Store, "add_decided", "storing")
        timed(ray_data, "_annotated_dataset", "annotations")
        name, url = fresh_database(options.db)
        started, cpu = time.perf_counter(), time.process_time()
        with Store(url) as store:
            result = _dedup_fingerprinted(fingerprinted, store, store.init(), options.k, join=False)
        total = time.perf_counter() - started  # the Dataset dedup_dataset returns, made
        total_cpu = time.process_time() - cpu
        print(f"load average {os.getloadavg()[0]:.1f}")

        def stages(measured: dict[str, float], whole: float) -> dict[str, float]:
            # The leader pass includes the pairs; the store's part, its transaction.
            out = {
                **measured,
                "leaders": measured["leaders"] - measured["pairs"],
                "upkeep": measured["storing"] - measured["transaction"],
            }
            parts = ("columns", "documents", "leaders", "storing", "annotations")
            out["rest"] = whole - sum(measured[name] for name in parts)
            return out

        wall, driver = stages(spent, total), stages(busy, total_cpu)
        labels["rest"] = "the rest: repeated keys, the decisions' arrays, the store's checks"
        print(f"| in-memory decisions, {len(data):,} records, k = {options.k} | wall s | share | driver CPU s |")
        print("|---|--:|--:|--:|")
        for name, label in labels.items():
            print(f"| {label} | {wall[name]:.1f} | {wall[name] / total:.0%} | {driver[name]:.1f} |")
        print(f"| **the whole path** (baseline) | {total:.1f} | 100% | {total_cpu:.1f} |")
        print(f"driver CPU {total_cpu / len(data) * 1e6:.0f} us a record")
        rows = result.select_columns(["duplicate_of"]).take_all()
        print(f"{len(data) / total:,.0f} records/s; duplicates {sum(1 for r in rows if r['duplicate_of']):,}")
    finally:
        if name is not None:
            drop_database(options.db, name)
        ray.shutdown()
        stop_cluster(temp)


if __name__ == "__main__":
    main()
