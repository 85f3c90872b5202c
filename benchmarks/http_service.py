"""The fingerprint service (`simhash-store serve --http`) on a warm server, against fingerprinting
the same texts in the benchmark's own process (the library) and with `simhash-store fingerprint`.

Two figures, each with its same-run baseline:

1. POST /fingerprint of one 2 KB Chinese text: p50 and p95 of --requests sequential requests on
   one keep-alive connection (target: p50 under 5 ms), beside the library's time for the same text.
2. 100 texts of 2 KB per request: texts per second over --batches requests, against the library
   fingerprinting the same texts one by one in this process, and against `simhash-store
   fingerprint` on the same texts as files (process start included, its default worker
   processes) (target: the service at least 0.8x the library).

The texts are 2 KB pieces (UTF-8) of the shared corpus's laws. The service runs as users run it,
`simhash-store --db URL serve --http` in a process of its own, as a role that is no superuser
(the script creates a database and such a role, and drops both).

    python benchmarks/http_service.py                      # 127.0.0.1:5432 as root
    python benchmarks/http_service.py --admin-url postgresql://me@localhost/postgres --requests 500
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

from simhash_store.fingerprint import fingerprint_if_any
from simhash_store.scheme import DEFAULT
from simhash_store.store import Store

from shared_corpus import load_laws


def pieces(size: int, count: int) -> list[str]:
    """``count`` pieces of about ``size`` UTF-8 bytes from the laws, each cut at a character boundary."""
    found: list[str] = []
    for law in load_laws():
        data = law.text.encode("utf-8")
        for start in range(0, len(data) - size, size):
            found.append(data[start : start + size].decode("utf-8", "ignore"))
            if len(found) == count:
                return found
    raise SystemExit(f"the corpus holds fewer than {count} pieces of {size} bytes")


def simhash_store_command() -> list[str]:
    script = Path(sys.executable).parent / "simhash-store"
    return [str(script)] if script.exists() else [sys.executable, "-m", "simhash_store.cli"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc): what a request costs the server,
    which a machine busy with other work changes less than the wall clock."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--admin-url", default="postgresql://root@127.0.0.1:5432/postgres")
    parser.add_argument("--requests", type=int, default=300, help="single-text requests timed")
    parser.add_argument("--batches", type=int, default=int(os.environ.get("B", 20)), help="100-text requests timed")
    parser.add_argument("--port", type=int, default=18_765)
    arguments = parser.parse_args()

    one = pieces(2048, 1)[0]
    batch_texts = pieces(2048, 100 * arguments.batches)
    batches = [batch_texts[i : i + 100] for i in range(0, len(batch_texts), 100)]

    admin = create_engine(arguments.admin_url, isolation_level="AUTOCOMMIT")
    database = f"simhash_bench_http_{uuid.uuid4().hex[:8]}"
    role = f"simhash_bench_http_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{database}"'))
    url = admin.url.set(database=database)
    process = None
    try:
        with Store(url) as store:
            store.init()
        owner = create_engine(url, isolation_level="AUTOCOMMIT")
        with owner.connect() as connection:
            connection.execute(text(f'CREATE ROLE "{role}" LOGIN'))
            connection.execute(text(f'GRANT USAGE ON SCHEMA simhash TO "{role}"'))
            # What a writer needs, never writes on the masks, the revision or the scheme (docs/operations.md).
            connection.execute(text(f'GRANT SELECT ON ALL TABLES IN SCHEMA simhash TO "{role}"'))
            connection.execute(
                text(
                    f'GRANT INSERT, UPDATE, DELETE ON simhash.documents, simhash.segments, simhash.cluster_heads TO "{role}"'
                )
            )
            connection.execute(
                text(
                    f'GRANT INSERT, UPDATE (highest_retired_id, cluster_max_distance, keep_policy) ON simhash.store_info TO "{role}"'
                )
            )
        owner.dispose()
        service_url = url.set(username=role, password=None).render_as_string(hide_password=False)
        home = tempfile.mkdtemp(prefix="simhash-bench-http-")
        command = [
            *simhash_store_command(),
            "--db",
            service_url,
            "serve",
            "--http",
            f"127.0.0.1:{arguments.port}",
            "--print-tokens",
        ]
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            env={**os.environ, "SIMHASH_STORE_DATA_DIR": home},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = process.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise SystemExit(f"serve --http did not start: {process.stderr.read()}")  # type: ignore[union-attr]
        ready = time.perf_counter() - started
        announced = json.loads(line)
        headers = {"Authorization": f"Bearer {announced['read_only_token']}"}

        with httpx.Client(base_url=announced["url"], headers=headers, timeout=60) as client:
            # 1. one 2 KB text, sequential requests on one connection, after a warm-up
            for _ in range(20):
                client.post("/fingerprint", json={"texts": [one]}).raise_for_status()
            walls = []
            cpu_before = cpu_seconds(process.pid)
            for _ in range(arguments.requests):
                begun = time.perf_counter()
                answer = client.post("/fingerprint", json={"texts": [one]})
                walls.append(time.perf_counter() - begun)
                answer.raise_for_status()
            server_cpu = (cpu_seconds(process.pid) - cpu_before) / arguments.requests
            health = []
            cpu_before = cpu_seconds(process.pid)
            for _ in range(arguments.requests):
                begun = time.perf_counter()
                client.get("/health").raise_for_status()
                health.append(time.perf_counter() - begun)
            health_cpu = (cpu_seconds(process.pid) - cpu_before) / arguments.requests
            fingerprint_if_any(one, DEFAULT)  # the library warm too
            library_one = []
            for _ in range(arguments.requests):
                begun = time.perf_counter()
                fingerprint_if_any(one, DEFAULT)
                library_one.append(time.perf_counter() - begun)

            # 2. 100 texts per request, against the library on the same texts (turns taken twice)
            served_seconds = library_seconds = 0.0
            served: list[str | None] = []
            for round_number in range(2):
                begun = time.perf_counter()
                for texts in batches:
                    answer = client.post("/fingerprint", json={"texts": texts})
                    answer.raise_for_status()
                    if round_number == 0:
                        served += [result["fingerprint"] for result in answer.json()["results"]]
                served_seconds += time.perf_counter() - begun
                begun = time.perf_counter()
                computed = [fingerprint_if_any(t, DEFAULT) for t in batch_texts]
                library_seconds += time.perf_counter() - begun
            assert served == [None if v is None else format(v, "016x") for v in computed], "the service disagrees"

        # `simhash-store fingerprint` on the same texts, as files (process start included)
        folder = Path(home) / "texts"
        folder.mkdir()
        for number, piece in enumerate(batch_texts):
            (folder / f"{number:05d}.txt").write_text(piece, encoding="utf-8")
        begun = time.perf_counter()
        done = subprocess.run([*simhash_store_command(), "fingerprint", str(folder)], capture_output=True, text=True)
        cli_seconds = time.perf_counter() - begun
        if done.returncode != 0:
            raise SystemExit(done.stderr)
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
            connection.execute(text(f'DROP ROLE IF EXISTS "{role}"'))
        admin.dispose()

    texts = len(batch_texts)
    rounds = 2
    served_rate = rounds * texts / served_seconds
    library_rate = rounds * texts / library_seconds
    cli_rate = texts / cli_seconds
    p50, p95 = percentile(walls, 0.5) * 1000, percentile(walls, 0.95) * 1000
    library_p50 = percentile(library_one, 0.5) * 1000
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {os.getloadavg()[0]:.1f}; serve --http ready in {ready:.1f} s (process start, store check, "
        "dictionaries loaded)"
    )
    print()
    print("| measure | service | baseline (same run) | ratio | target |")
    print("|---|---:|---:|---:|---|")
    print(
        f"| POST /fingerprint, one 2 KB text, p50 ({arguments.requests} requests) | {p50:.2f} ms | "
        f"library {library_p50:.2f} ms | {p50 / library_p50:.2f}x | p50 < 5 ms: {'met' if p50 < 5 else 'MISSED'} |"
    )
    print(
        f"| the same, the server's CPU time per request | {server_cpu * 1000:.2f} ms | library "
        f"{library_p50:.2f} ms (p50 wall) | {server_cpu * 1000 / library_p50:.2f}x | |"
    )
    print(
        f"| the same, p95 | {percentile(walls, 0.95) * 1000:.2f} ms | library "
        f"{percentile(library_one, 0.95) * 1000:.2f} ms | {p95 / (percentile(library_one, 0.95) * 1000):.2f}x | |"
    )
    print(
        f"| GET /health (no body, no thread), p50; server CPU per request | {percentile(health, 0.5) * 1000:.2f} ms; "
        f"{health_cpu * 1000:.2f} ms | | | |"
    )
    print(
        f"| 100 texts of 2 KB per request ({texts:,} texts, twice) | {served_rate:,.0f} texts/s | library "
        f"{library_rate:,.0f} texts/s | {served_rate / library_rate:.2f}x | >= 0.8x: "
        f"{'met' if served_rate >= 0.8 * library_rate else 'MISSED'} |"
    )
    print(
        f"| the same texts, `simhash-store fingerprint DIR` (default jobs, start included) | | "
        f"{cli_rate:,.0f} texts/s | {served_rate / cli_rate:.2f}x | |"
    )


if __name__ == "__main__":
    main()
