"""Fingerprinting and dedup on a local Ray cluster against the single-machine code, in the same run.

Starts its own Ray cluster (a head and ``--workers`` worker nodes of one CPU each, in a temp dir
of its own, stopped at the end), then measures:

1. fingerprinting throughput per core: the library (``ingest.prepare``, what ``add`` and
   ``dedup`` run in each worker process) on one core of this process, against
   ``ray_data.fingerprint_dataset`` on the cluster, divided by the cluster's CPUs;
2. dedup: ``dedup.dedup`` (the ``dedup`` command's code, one process) against
   ``ray_data.dedup_dataset``'s ways of deciding, each into a fresh database: batch by batch
   through the store (``in_memory=False``), finding the representatives near each record by the
   per-batch search (every representative compared in memory per batch up to 100,000 of them,
   beyond a radius search per record) or by the block-key join on the workers (the representatives
   named by the join read by key); and in memory over the run's pairs (keep first into an empty
   store: ``clusters.leaders``, the pairs found on the driver or by the workers' join), the
   documents and clusters stored in one COPY. The records are fingerprinted on the cluster once for
   all; the table gives the decisions' time of each and its ratio to the batches' current path,
   and whether the annotated outputs and the stored clusters are identical to ``dedup``'s.
   ``--skip-batches`` leaves out the two batch rows (at 1M records they take half an hour each),
   ``--skip-join`` the rows with the join; the ratio is then to one machine's ``dedup``.

Records: the shared corpus's wiki paragraphs and laws, cut into pieces of about
``--chars`` characters, and one edited copy of every third piece (near-duplicates), until
``--records``; past the corpus's pieces, each new text is the first half of one piece and the
second half of another (far from every other text). Run:

    python benchmarks/ray_speed.py --db postgresql://root@127.0.0.1:5432/postgres --records 20000 -k 4
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import ray
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from simhash_store import clusters, dedup
from simhash_store.corpus import Source
from simhash_store.ingest import prepare
from simhash_store.ray_data import (
    SIMHASH,
    FingerprintBatch,
    _dedup_fingerprinted,
    _materialized,
    fingerprint_dataset,
    near_fingerprints,
)
from simhash_store.scheme import DEFAULT
from simhash_store.store import Store

from shared_corpus import load_laws, load_wiki

RAY = str(Path(sys.executable).with_name("ray"))


def _free_ports(count: int) -> list[int]:
    """Different free ports, all held while chosen (one at a time, the same one came back twice)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def _free_port() -> int:
    return _free_ports(1)[0]


def _ports() -> list[str]:
    names = (
        "--node-manager-port",
        "--object-manager-port",
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--metrics-export-port",
        "--runtime-env-agent-port",
    )
    return [f"{name}={port}" for name, port in zip(names, _free_ports(len(names)))]


class Timed(FingerprintBatch):
    """FingerprintBatch that also reports the CPU time it spent, spread over its rows: of the worker
    process (Ray's own threads in it included), and of the thread that ran the batch."""

    def __call__(self, batch: dict) -> dict:
        cpu, thread = time.process_time(), time.thread_time()
        out = super().__call__(batch)
        rows = len(out[SIMHASH])
        out["_cpu"] = [(time.process_time() - cpu) / max(rows, 1)] * rows
        out["_thread"] = [(time.thread_time() - thread) / max(rows, 1)] * rows
        return out


def start_cluster(workers: int, temp: str) -> str:
    address = f"127.0.0.1:{_free_port()}"
    common = ["--num-cpus=1", "--object-store-memory=500000000", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    subprocess.run(
        [
            RAY,
            "start",
            "--head",
            f"--port={address.split(':')[1]}",
            f"--temp-dir={temp}",
            "--include-dashboard=false",
            *common,
            *_ports(),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    for _ in range(workers):
        subprocess.run(
            [RAY, "start", f"--address={address}", *common, *_ports()], check=True, capture_output=True, timeout=180
        )
    return address


def stop_cluster(temp: str) -> None:
    """Only this cluster's processes: those whose command line names its temp dir."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if temp in (entry / "cmdline").read_bytes().decode("utf-8", "replace"):
                        os.kill(int(entry.name), sig)
                except (OSError, ProcessLookupError):
                    continue
        time.sleep(2)


def records(count: int, chars: int) -> list[dict]:
    pieces = [d.text[i : i + chars] for d in load_wiki() + load_laws() for i in range(0, len(d.text), chars)]
    pieces = [p for p in pieces if len(p) >= chars // 4]
    rng = random.Random(25)
    out: list[dict] = []
    n = 0
    while len(out) < count:
        piece = pieces[n % len(pieces)]
        lap = n // len(pieces)
        if lap:  # later laps: new texts, far from every other (half of this piece, half of another)
            other = pieces[(n * 7919 + lap) % len(pieces)]
            piece = piece[: len(piece) // 2] + other[len(other) // 2 :]
        body = piece
        out.append({"key": f"r{n}", "text": body})
        if n % 3 == 0 and len(out) < count:
            position = rng.randrange(len(body))
            out.append({"key": f"r{n}-copy", "text": body[:position] + "的" + body[position + 1 :]})
        n += 1
    return out


def fresh_database(admin: str) -> tuple[str, str]:
    name = f"ray_speed_{uuid.uuid4().hex[:8]}"
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return name, make_url(admin).set(database=name).render_as_string(hide_password=False)


def drop_database(admin: str, name: str) -> None:
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    engine.dispose()


def clusters_of(url: str) -> str:
    """What a store keeps, as text to compare: every document (id, key, fingerprint, digest, length,
    cluster, arrival, keep value), and the heads."""
    engine = create_engine(url)
    with engine.connect() as connection:
        documents = connection.execute(
            text(
                "SELECT id, key, fingerprint, digest, length, cluster, arrival, keep_value "
                "FROM simhash.documents ORDER BY id"
            )
        ).all()
        heads = connection.execute(text("SELECT * FROM simhash.cluster_heads ORDER BY cluster")).all()
    engine.dispose()
    return repr((documents, heads))


def lines(rows) -> list[str]:
    return sorted(json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--db", required=True, help="admin URL of a PostgreSQL server (databases are created and dropped)"
    )
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--chars", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2, help="worker nodes beside the head, one CPU each")
    parser.add_argument(
        "-k", type=int, default=4, help="the dedup distance (the join needs exact-match tables: k <= 4)"
    )
    parser.add_argument("--skip-fingerprinting", action="store_true", help="measure dedup only")
    parser.add_argument("--skip-dedup", action="store_true", help="measure fingerprinting only")
    parser.add_argument(
        "--skip-join", action="store_true", help="no block-key join on the workers (pairs on the driver)"
    )
    parser.add_argument(
        "--skip-batches", action="store_true", help="dedup on Ray in memory only (not batch by batch through the store)"
    )
    parser.add_argument(
        "--citus",
        action="store_true",
        help="dedup on Ray into stores on a Citus cluster (tests/distributed/cluster.py)",
    )
    parser.add_argument(
        "--in-memory-representatives",
        type=int,
        default=clusters.IN_MEMORY_REPRESENTATIVES,
        help="clusters up to which a batch compares every representative in memory (beyond: a search per record)",
    )
    options = parser.parse_args()
    clusters.IN_MEMORY_REPRESENTATIVES = options.in_memory_representatives
    citus = None
    if options.citus:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.distributed.cluster import Cluster, unavailable

        reason = unavailable()
        if reason:
            sys.exit(f"no Citus cluster: {reason}")
        citus = Cluster.start()

    data = records(options.records, options.chars)
    megabytes = sum(len(r["text"].encode()) for r in data) / 1e6
    print(f"{len(data):,} records, {megabytes:.1f} MB; load average {os.getloadavg()[0]:.1f}")

    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    try:
        address = start_cluster(options.workers, temp)
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        cpus = int(ray.cluster_resources()["CPU"])

        if not options.skip_fingerprinting:
            # 1. Per core: the library on this process's one core, then the cluster.
            # On a shared machine the cluster's "CPUs" are processes contending for the same cores:
            # MB per CPU-second (time.process_time in the worker) is the per-core figure; wall time too.
            prepare(Source("w", text="预热", size=6), None, DEFAULT)

            def library() -> tuple[dict, float, float]:
                started, cpu = time.perf_counter(), time.process_time()
                found = {
                    r["key"]: prepare(Source(r["key"], text=r["text"], size=0), None, DEFAULT).fingerprint for r in data
                }
                return found, time.perf_counter() - started, time.process_time() - cpu

            # The library before and after the cluster: the machine's load moves meanwhile.
            local, local_seconds, local_cpu = library()
            print(f"load average {os.getloadavg()[0]:.1f}")
            ds = ray.data.from_items(data).repartition(cpus * 4)

            def timed(part: ray.data.Dataset) -> ray.data.Dataset:
                return part.map_batches(
                    Timed,
                    fn_constructor_args=(DEFAULT.name, "text", "key"),
                    batch_size=500,
                    batch_format="numpy",
                    concurrency=(1, cpus),
                )

            timed(ds.limit(cpus * 50)).take_all()  # actors started, dictionaries loaded
            started = time.perf_counter()
            remote = timed(ds).take_all()
            ray_seconds = time.perf_counter() - started
            ray_cpu = sum(r["_cpu"] for r in remote)
            ray_thread = sum(r["_thread"] for r in remote)
            same = {r["key"]: None if r["simhash"] is None else int(r["simhash"], 16) for r in remote} == local
            print(f"load average {os.getloadavg()[0]:.1f}")
            _, again_seconds, again_cpu = library()
            print(f"load average {os.getloadavg()[0]:.1f}")
            baseline = megabytes / ((local_cpu + again_cpu) / 2)  # MB per CPU-second, mean of the two
            print("| fingerprinting | wall s | CPU s | MB/s wall | MB per CPU-second | ratio per core |")
            print("|---|--:|--:|--:|--:|--:|")
            for label, seconds, cpu in (
                ("library, this process (prepare), before", local_seconds, local_cpu),
                ("library, this process (prepare), after", again_seconds, again_cpu),
                (f"fingerprint_dataset, {cpus} Ray CPUs (worker processes' CPU)", ray_seconds, ray_cpu),
                ("the same, CPU of the threads that ran the batches only", ray_seconds, ray_thread),
            ):
                print(
                    f"| {label} | {seconds:.1f} | {cpu:.1f} | {megabytes / seconds:.2f} | {megabytes / cpu:.2f} "
                    f"| {(megabytes / cpu) / baseline:.2f} |"
                )
            print(f"ratio per core: against the mean of the library's two runs; fingerprints identical: {same}")

        if options.skip_dedup:
            return
        # 2. Dedup, each into a fresh database: on Ray, batch by batch and in memory; one machine.
        results: dict[str, tuple[float, list]] = {}
        names = []
        stored = []
        try:
            started = time.perf_counter()
            fingerprinted = _materialized(fingerprint_dataset(ray.data.from_items(data)))
            fingerprint_seconds = time.perf_counter() - started
            print(f"Ray: fingerprinted in {fingerprint_seconds:.1f} s", flush=True)
            if not options.skip_join:
                started = time.perf_counter()
                near = near_fingerprints(fingerprinted, options.k)
                print(
                    f"the join alone {time.perf_counter() - started:.1f} s "
                    f"({sum(map(len, near.values())) // 2:,} pairs of distinct fingerprints within {options.k})",
                    flush=True,
                )
            paths = [
                ("dedup_dataset decisions, batches, current path", False, False),
                ("dedup_dataset decisions, batches, block-key join", True, False),
                ("dedup_dataset decisions in memory, pairs on the driver, one COPY", False, True),
                ("dedup_dataset decisions in memory, pairs by the block-key join, one COPY", True, True),
            ]
            for label, join, in_memory in paths[2 if options.skip_batches else 0 :]:
                if join and options.skip_join:
                    continue
                if citus is not None:  # a distributed store on the Citus cluster
                    name = f"ray_speed_{uuid.uuid4().hex[:8]}"
                    url = citus.create_database(name)
                    with Store(url) as store:
                        store.init(distributed=True)
                else:
                    name, url = fresh_database(options.db)
                    names.append(name)
                started = time.perf_counter()
                with Store(url) as store:
                    rows = _dedup_fingerprinted(
                        fingerprinted, store, store.init(), options.k, join=join, in_memory=in_memory
                    )
                results[label] = (time.perf_counter() - started, rows)
                stored.append(clusters_of(url))
                print(f"{label}: {results[label][0]:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
            # One machine last: a run stopped before the end has the figures of the paths on Ray.
            name, url = fresh_database(options.db)
            names.append(name)
            started = time.perf_counter()
            with Store(url) as store:
                rows = [{**r, **v.annotation()} for r, v in dedup(data, store=store, max_distance=options.k, jobs=1)]
            results = {"dedup (one machine, one process)": (time.perf_counter() - started, rows), **results}
            stored.insert(0, clusters_of(url))
            print(f"one machine: {results['dedup (one machine, one process)'][0]:.1f} s", flush=True)
        finally:
            for name in names:
                drop_database(options.db, name)
        where = "a Citus store (coordinator and 2 workers)" if citus else "a one-node store"
        print(
            f"dedup on Ray into {where}; representatives compared in memory up to {options.in_memory_representatives:,}"
        )
        print(f"| dedup, k = {options.k}, {len(data):,} records | seconds | records/s | duplicates | ratio |")
        print("|---|--:|--:|--:|--:|")
        # The ratio to the batches' current path; without it (--skip-batches), to one machine's dedup.
        baseline = results["dedup (one machine, one process)" if options.skip_batches else paths[0][0]][0]
        for label, (seconds, rows) in results.items():
            duplicates = sum(1 for r in rows if r["duplicate_of"])
            ratio = f"{baseline / seconds:.2f}x" if label.startswith("dedup_dataset") or options.skip_batches else ""
            print(f"| {label} | {seconds:.1f} | {len(rows) / seconds:,.0f} | {duplicates:,} | {ratio} |")
        print("ratio: " + ("to one machine's dedup" if options.skip_batches else "to the batches' current path"))
        outputs = [lines(rows) for _, rows in results.values()]
        for (label, _), output, clusters_stored in zip(results.items(), outputs, stored):
            print(
                f"{label}: annotated output identical to dedup's after ordering: {output == outputs[0]}; "
                f"stored clusters identical: {clusters_stored == stored[0]}"
            )
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        ray.shutdown()
        stop_cluster(temp)
        if citus is not None:
            citus.stop()


if __name__ == "__main__":
    main()
