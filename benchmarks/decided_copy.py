"""The store's part of the in-memory decisions against a bulk load of the same rows, in the same run.

``Store.add_decided`` (what ``dedup_dataset`` and ``dedup --ray`` call once, into an empty store:
one COPY with ids, clusters and arrivals, and one of the heads) written into the indexed table
(what it does when another session holds the table: the baseline) and into the bare table with
its indexes built after (what it does otherwise), against ``Store.load`` of the same documents
(COPY FREEZE into the bare table, then the key, id and block indexes built over the rows), each
into a fresh database, alternated.
The documents: real fingerprints are not needed for the write, so ``--records`` random 64-bit
values, a third of them one-bit copies of another (clusters to store), keys ``r<n>``, 32-byte
digests. Run:

    python benchmarks/decided_copy.py --db postgresql://root@127.0.0.1:5432/postgres --records 200000
"""

from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np

from simhash_store.clusters import leaders_with_copies
from simhash_store.store import NewDocument, Store, writes

from ray_speed import drop_database, fresh_database


def documents(count: int) -> list[NewDocument]:
    rng = random.Random(7)
    values: list[int] = []
    for n in range(count):
        values.append(values[rng.randrange(n)] ^ (1 << rng.randrange(64)) if n and n % 3 == 0 else rng.getrandbits(64))
    return [NewDocument(f"r{n}", value, rng.randbytes(32), 300) for n, value in enumerate(values)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="admin URL of a PostgreSQL server (databases are made and dropped)")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("-k", type=int, default=4)
    options = parser.parse_args()
    docs = documents(options.records)
    batches = [n // 1000 for n in range(len(docs))]
    leaders = leaders_with_copies(np.array([d.fingerprint for d in docs], dtype=np.uint64), options.k).tolist()
    times: dict[str, list[float]] = {"indexed": [], "bare": [], "load": []}
    may_rebuild = writes._may_rebuild
    print(f"{len(docs):,} documents, {len(set(leaders)):,} clusters; load average {os.getloadavg()[0]:.1f}", flush=True)
    for _ in range(options.runs):
        for way in times:
            name, url = fresh_database(options.db)
            try:
                with Store(url) as store:
                    store.init()
                    store.recluster(options.k)
                    started = time.perf_counter()
                    if way != "load":
                        # The indexed table: as if another session held it (no wait measured).
                        writes._may_rebuild = (lambda cursor: False) if way == "indexed" else may_rebuild
                        assert store.add_decided(docs, batches, leaders, options.k) is not None
                    else:
                        store.load(docs)
                    times[way].append(time.perf_counter() - started)
            finally:
                drop_database(options.db, name)
            print(f"{way}: {times[way][-1]:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
    baseline = min(times["indexed"])
    print(f"| {len(docs):,} documents into an empty store | seconds (best of {options.runs}) | rows/s | ratio |")
    print("|---|--:|--:|--:|")
    for way, label in (
        ("indexed", "`Store.add_decided` into the indexed table, with clusters (baseline)"),
        ("bare", "`Store.add_decided` into the bare table, indexes built after, with clusters"),
        ("load", "`Store.load`: COPY FREEZE into the bare table, indexes built after"),
    ):
        best = min(times[way])
        print(f"| {label} | {best:.1f} | {len(docs) / best:,.0f} | {baseline / best:.2f}x |")


if __name__ == "__main__":
    main()
