"""What pinning the search_path costs a query: the library's own engine, and an engine the caller made.

The library's own engine pins ``search_path`` (and ``lock_timeout``) when each session
starts, so a query stays one prepared statement in one round trip. An engine the caller
made keeps its sessions as the caller set them: each library read then runs as
``BEGIN; set_config(...); query; COMMIT`` down one psycopg pipeline (``Store._read``).
Both are timed here, side by side in the same run, against the same store, over TCP
to the machine's PostgreSQL, alternating so that load on the shared machine hits both.

    python benchmarks/pinned_path.py                          # 100,000 fingerprints, 3,000 queries each
    python benchmarks/pinned_path.py --documents 1000000 --queries 5000
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid

import numpy as np
from sqlalchemy import create_engine, text

from simhash_store.config import normalize_url
from simhash_store.store import NewDocument, Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--admin-url", default=os.environ.get("SIMHASH_STORE_BENCH_URL", "postgresql://root@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=3000)
    arguments = parser.parse_args()

    admin_url = normalize_url(arguments.admin_url)
    name = f"simhash_bench_pin_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.set(database=name)
    try:
        rng = np.random.default_rng(7)
        values = rng.integers(0, 2**63, size=arguments.documents, dtype=np.int64).astype(np.uint64) * 2 + 1
        with Store(url) as store:
            store.load(NewDocument(f"k{i}", int(v)) for i, v in enumerate(values))
            store.optimize()
        caller_engine = create_engine(url)
        stores = {
            "library's engine (pinned at connect)": Store(url),
            "caller's engine (SET LOCAL, pipelined)": Store(caller_engine),
        }
        timings: dict[str, list[float]] = {label: [] for label in stores}
        for k in (3, 7):
            for label in timings:
                timings[label] = []
            for store in stores.values():
                store.query(int(values[0]), k)  # warm up: connect, prepare
            for i in range(arguments.queries):
                probe = int(values[i % len(values)])
                for label, store in stores.items() if i % 2 else reversed(stores.items()):
                    started = time.perf_counter()
                    store.query(probe, k)
                    timings[label].append(time.perf_counter() - started)
            baseline = statistics.median(timings["library's engine (pinned at connect)"])
            print(
                f"\nk={k}, {arguments.documents:,} fingerprints, {arguments.queries:,} queries each, load {os.getloadavg()[0]:.1f}"
            )
            print(f"{'engine':<42} {'p50 ms':>8} {'p90 ms':>8} {'vs library':>11}")
            for label, values_ in timings.items():
                p50 = statistics.median(values_)
                p90 = statistics.quantiles(values_, n=10)[-1]
                print(f"{label:<42} {p50 * 1000:>8.3f} {p90 * 1000:>8.3f} {p50 / baseline:>10.2f}x")
        for store in stores.values():
            store.close()
        caller_engine.dispose()
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
