"""Where the driver's time goes when ``dedup_dataset`` decides in memory (keep first, an empty store).

Starts its own Ray cluster (a head and ``--workers`` worker nodes of one CPU each, stopped at the
end), fingerprints the records of ``ray_speed.py`` on it once (materialized, as ``dedup_dataset``
holds them), then runs the in-memory decisions into fresh databases both ways, alternated
(``--rounds``): the driver writing the documents (one COPY, ``writes.add_decided``: the baseline)
and the workers writing them (a staging table, moved into the store in one transaction), each
stage timed by a wrapper around the function that does it, in wall time and in the driver's CPU
time: the records checked on the workers and the decisions' columns read from the cluster, the
pairs within k, the leader pass, the store's part (the driver's COPY; or the order of the ids asked
of the database, the workers' writes and the move), the store's upkeep after it (ANALYZE/VACUUM),
and the annotations added on the workers (the Dataset ``dedup_dataset`` returns). Run:

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
    parser.add_argument("--rounds", type=int, default=1, help="runs of each path, alternated")
    parser.add_argument("-k", type=int, default=4)
    options = parser.parse_args()
    data = records(options.records, options.chars)
    print(f"{len(data):,} records; load average {os.getloadavg()[0]:.1f}", flush=True)
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    try:
        ray.init(address=start_cluster(options.workers, temp), log_to_driver=False, logging_level="ERROR")
        started = time.perf_counter()
        fingerprinted = _materialized(fingerprint_dataset(ray.data.from_items(data)))
        print(f"fingerprinted on the cluster in {time.perf_counter() - started:.1f} s", flush=True)
        timed(ray_data, "_decision_columns", "columns")
        timed(ray_data, "_documents", "documents")
        timed(clusters, "distinct_pairs", "pairs")
        timed(clusters, "leaders_with_copies", "leaders")
        timed(writes, "add_decided", "transaction")
        timed(Store, "add_decided", "storing")
        timed(writes, "decided_order", "order")
        timed(ray_data, "_stored_from_the_workers", "workers")
        timed(writes, "move_staged", "move")
        timed(Store, "move_staged", "moving")
        timed(ray_data, "_annotated_dataset", "annotations")
        results = []
        for _ in range(options.rounds):
            for workers_write in (False, True):
                results.append(run(options, fingerprinted, workers_write, len(data)))
        for workers_write, wall, driver, total, total_cpu, duplicates, load in results:
            print_table(options, len(data), workers_write, wall, driver, total, total_cpu, duplicates, load)
    finally:
        ray.shutdown()
        stop_cluster(temp)


def run(options, fingerprinted, workers_write: bool, count: int):
    """One run of the in-memory decisions into a fresh database: the driver writes the documents
    (``workers_write`` False: ``writes.add_decided``, one COPY) or the workers do (a staging table)."""
    spent.clear()
    busy.clear()
    name, url = fresh_database(options.db)
    loads = [os.getloadavg()[0]]
    try:
        started, cpu = time.perf_counter(), time.process_time()
        with Store(url) as store:
            result = _dedup_fingerprinted(
                fingerprinted, store, store.init(), options.k, join=False, url=url if workers_write else None
            )
        total = time.perf_counter() - started  # the Dataset dedup_dataset returns, made
        total_cpu = time.process_time() - cpu
        loads.append(os.getloadavg()[0])
        rows = result.select_columns(["duplicate_of"]).take_all()
        duplicates = sum(1 for r in rows if r["duplicate_of"])
    finally:
        drop_database(options.db, name)
    assert spent["transaction" if not workers_write else "move"] > 0, "the path asked for was not taken"

    def stages(measured: dict[str, float], whole: float) -> dict[str, float]:
        # The leader pass includes the pairs; the store's part: its transaction, then its upkeep.
        out = dict(measured)
        out["leaders"] = measured["leaders"] - measured["pairs"]
        if workers_write:
            out["upkeep"] = measured["moving"] - measured["move"]
            out["staged"] = measured["workers"] - measured["order"] - measured["moving"]
            parts = ("columns", "leaders", "workers", "annotations")
        else:
            out["upkeep"] = measured["storing"] - measured["transaction"]
            parts = ("columns", "documents", "leaders", "storing", "annotations")
        out["rest"] = whole - sum(measured[name] for name in parts)
        return out

    return workers_write, stages(spent, total), stages(busy, total_cpu), total, total_cpu, duplicates, loads


def print_table(options, count, workers_write, wall, driver, total, total_cpu, duplicates, loads) -> None:
    labels = {
        "columns": "records checked on the workers, the decisions' columns read by the driver (`_decision_columns`)"
    }
    if workers_write:
        labels.update(
            {
                "pairs": "pairs within k (`pairs.distinct_pairs`)",
                "leaders": "leader pass over the pairs (`clusters.leaders_with_copies` less the pairs)",
                "order": "ids: the documents' order asked of the database (`writes.decided_order`, one COPY of keys)",
                "staged": "the workers write the documents into the staging table (the driver waits)",
                "move": "store: one transaction, staged rows moved, heads (`writes.move_staged`)",
                "upkeep": "store: upkeep after it (ANALYZE/VACUUM, `Store.move_staged` less the transaction)",
            }
        )
    else:
        labels.update(
            {
                "documents": "the documents to store built from the columns (`_documents`)",
                "pairs": "pairs within k (`pairs.distinct_pairs`)",
                "leaders": "leader pass over the pairs (`clusters.leaders_with_copies` less the pairs)",
                "transaction": "store: one transaction, COPY of keys, documents and heads (`writes.add_decided`)",
                "upkeep": "store: upkeep after it (ANALYZE/VACUUM, `Store.add_decided` less the transaction)",
            }
        )
    labels["annotations"] = "annotations added on the workers, the result a Dataset (`_annotated_dataset`)"
    labels["rest"] = "the rest: repeated keys, the decisions' arrays, the store's checks"
    who = "the workers write the documents" if workers_write else "the driver writes the documents (one COPY)"
    print(f"\n| {count:,} records, k = {options.k}, {who} | wall s | share | driver CPU s |")
    print("|---|--:|--:|--:|")
    for name, label in labels.items():
        print(f"| {label} | {wall[name]:.1f} | {wall[name] / total:.0%} | {driver[name]:.1f} |")
    print(f"| **the whole path** | {total:.1f} | 100% | {total_cpu:.1f} |")
    print(
        f"driver CPU {total_cpu / count * 1e6:.1f} us a record ({count / total_cpu:,.0f} records a CPU-second); "
        f"{count / total:,.0f} records/s wall; duplicates {duplicates:,}; load {loads[0]:.1f} -> {loads[1]:.1f}"
    )


if __name__ == "__main__":
    main()
