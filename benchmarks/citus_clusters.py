"""Adding into a store that keeps persistent clusters: one node against a Citus coordinator with two
workers, in the same run, on this machine.

Starts its own cluster (tests/distributed/cluster.py) and on it a plain database (one node) and a
distributed store. Each gets the same documents: random fingerprints, a quarter of them near
copies (1 to 4 bits) of earlier ones. Measured the same way on both:

* ``Store.add`` into a store without clusters (the baseline of each layout);
* ``Store.add`` into a store that keeps clusters (``recluster`` first), with the representatives
  compared in memory (the path up to 100,000 clusters), and with them searched in SQL (the path
  beyond, forced here by ``clusters.IN_MEMORY_REPRESENTATIVES = 0``) on a smaller share;
* ``Store.memberships`` of 1,000 keys, and ``Store.stored_clusters()``.

The two layouts' clusters are checked equal. All three servers share this machine's cores.

    python benchmarks/citus_clusters.py --size 20000
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simhash_store import clusters  # noqa: E402
from simhash_store.store import NewDocument, Store  # noqa: E402
from tests.distributed.cluster import Cluster, unavailable  # noqa: E402

K = 11


def make_documents(count: int, seed: int, prefix: str) -> list[NewDocument]:
    rng = random.Random(seed)
    values: list[int] = []
    for _ in range(count):
        if values and rng.random() < 0.25:
            value = rng.choice(values)
            for bit in rng.sample(range(64), rng.randint(1, 4)):
                value ^= 1 << bit
        else:
            value = rng.getrandbits(64)
        values.append(value)
    return [NewDocument(f"{prefix}/{i:07}", v) for i, v in enumerate(values)]


def rate(store: Store, documents: list[NewDocument], batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(documents), batch):
        store.add(documents[start : start + batch])
    return len(documents) / (time.perf_counter() - started)


def timed(work) -> tuple[float, object]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def measure(url: str, distributed: bool, size: int, batch: int) -> dict[str, object]:
    plain, clustered = make_documents(size, 1, "plain"), make_documents(size, 2, "doc")
    sql_share = clustered[size * 4 // 5 :]
    found: dict[str, object] = {}
    with Store(url) as store:
        store.init(distributed=distributed)
        found["add, no clusters (docs/s)"] = rate(store, plain, batch)
        store.remove([d.key for d in plain])
        store.recluster(K)
        found["add, clusters in memory (docs/s)"] = rate(store, clustered[: size * 4 // 5], batch)
        saved = clusters.IN_MEMORY_REPRESENTATIVES
        clusters.IN_MEMORY_REPRESENTATIVES = 0
        try:
            found["add, clusters in SQL (docs/s)"] = rate(store, sql_share, batch)
        finally:
            clusters.IN_MEMORY_REPRESENTATIVES = saved
        keys = [d.key for d in clustered[:: max(1, size // 1000)]][:1000]
        seconds, _ = timed(lambda: store.memberships(keys))
        found["memberships of 1,000 keys (ms)"] = seconds * 1000
        seconds, stored = timed(lambda: store.stored_clusters())
        found["stored_clusters (ms)"] = seconds * 1000
        found["clusters"] = stored
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=2_000)
    arguments = parser.parse_args()
    reason = unavailable()
    if reason:
        raise SystemExit(f"no Citus cluster here: {reason}")
    with Cluster.start() as cluster:
        cluster.execute('CREATE DATABASE "one_node"')
        one = measure(cluster.url("one_node"), False, arguments.size, arguments.batch)
        citus = measure(cluster.create_database("citus_store"), True, arguments.size, arguments.batch)
    assert one.pop("clusters") == citus.pop("clusters"), "the two layouts clustered differently"
    print(f"{arguments.size:,} documents a layout, batches of {arguments.batch:,}, k = {K}; same clusters on both\n")
    print(f"| {'what':<36} | {'one node':>10} | {'Citus':>10} | {'Citus / one node':>16} |")
    print(f"|{'-' * 38}|{'-' * 12}|{'-' * 12}|{'-' * 18}|")
    for name in one:
        print(f"| {name:<36} | {one[name]:>10,.1f} | {citus[name]:>10,.1f} | {citus[name] / one[name]:>16.2f} |")


if __name__ == "__main__":
    main()
