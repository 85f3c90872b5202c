"""Soak: 8 query clients for 60 s against 1M fingerprints while ``simhash-store add`` writes real text.

The store holds ``--documents`` random 64-bit fingerprints with planted neighbours
(``store_speed.make_data``), loaded with one binary COPY and the block indexes built
after it (``store_speed.bulk_load``: the fastest honest path; the add under test goes
through the CLI). Then three windows of ``--seconds`` each:

1. **clients + add**: ``--clients`` query processes, each with its own ``Store``, issue
   single ``Store.query`` calls as fast as they can, while a ``simhash-store add
   --jsonl -`` process is fed the shared corpus (600 laws and 1,104 Wikipedia paragraphs)
   over and over under new key prefixes, so that it fingerprints and writes for the
   whole window;
2. **add alone**: the same add goes on without the clients (the baseline of its rate);
3. **clients alone**: the same clients for the same time, without the add (the baseline
   of the queries).

The add's rate is what it committed in the window (rows and their characters), so it
runs with small batches (``--add-batch-size``, 100) to make that count fine-grained.

Queries (at ``--max-distance``, 3) are a mix: a third are planted points (stored neighbours
at distances 1 to 10), a third are stored fingerprints with 0 to k bits flipped, a third are random.
Every answer is compared with brute force over the bulk rows (computed with numpy
before the windows), so a wrong answer counts as well as an exception. After the
second window the add's input is closed; it must exit 0, and every record it was given must
be stored with the fingerprint the library computes for it (checked on a sample).

    python benchmarks/soak.py                                   # 1M documents, 3 x 60 s, 8 clients
    python benchmarks/soak.py --documents 100000 --seconds 10   # a quick run

The machine is shared: the load average before and during each window is printed
beside the numbers. The database is dropped at the end unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import psycopg

from reliability_common import (
    DEFAULT_ADMIN_URL,
    bulk_load,
    corpus_documents,
    fresh_database,
    load_now,
    machine,
    make_data,
    markdown_table,
    percentile,
    server_version,
)

# ------------------------------------------------------------------ queries and their answers


@dataclass
class Workload:
    max_distance: int
    fingerprints: list[int]
    kinds: list[str]
    expected: list[list[tuple[str, int]]]  # (key, distance) among the bulk rows, nearest first


def build_workload(stored: np.ndarray, points: np.ndarray, per_kind: int, max_distance: int, seed: int) -> Workload:
    from store_speed import key_of

    rng = np.random.default_rng(seed)
    planted = points[:per_kind].tolist()
    near_stored = []
    for index in rng.choice(len(stored), per_kind, replace=False).tolist():
        value = int(stored[index])
        for bit in rng.choice(64, int(rng.integers(0, max_distance + 1)), replace=False).tolist():
            value ^= 1 << bit
        near_stored.append(value)
    randoms = rng.integers(0, 2**64, size=per_kind, dtype=np.uint64).tolist()
    fingerprints = planted + near_stored + randoms
    kinds = ["planted"] * per_kind + ["near stored"] * per_kind + ["random"] * per_kind
    expected = []
    for value in fingerprints:
        distances = np.bitwise_count(stored ^ np.uint64(value))
        hits = np.flatnonzero(distances <= max_distance)
        expected.append(
            [(key_of(int(i)), int(distances[i])) for i in sorted(hits.tolist(), key=lambda i: (distances[i], i))]
        )
    return Workload(max_distance, fingerprints, kinds, expected)


# ------------------------------------------------------------------ one query client (its own process)


def client(number: int, url: str, workload: Workload, ready, go, deadline_holder, results) -> None:
    from simhash_store.store import Store

    rng = random.Random(number)
    order = list(range(len(workload.fingerprints)))
    latencies: list[float] = []
    errors: Counter = Counter()
    wrong = 0
    with Store(url) as store:
        for i in order[:50]:  # warm up: connection, prepared statement, function plans
            store.query(workload.fingerprints[i], workload.max_distance)
        ready.put(number)
        go.wait()
        deadline = deadline_holder.value
        while True:
            i = rng.choice(order)
            started = time.perf_counter()
            if started >= deadline:
                break
            try:
                matches = store.query(workload.fingerprints[i], workload.max_distance)
            except Exception as exc:  # noqa: BLE001 - counted and reported, never hidden
                errors[f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"] += 1
                latencies.append(time.perf_counter() - started)
                continue
            latencies.append(time.perf_counter() - started)
            # Rows the add writes meanwhile are real text, keyed text/...: compare the bulk rows only.
            got = [(m.key, m.distance) for m in matches if m.key.startswith("fp")]
            if got != workload.expected[i]:
                wrong += 1
    results.put((number, np.array(latencies), dict(errors), wrong))


# ------------------------------------------------------------------ the concurrent add


class Feeder:
    """A ``simhash-store add --jsonl -`` process fed the corpus over and over, under new prefixes."""

    def __init__(self, url: str, documents: list[tuple[str, str]], batch_size: int) -> None:
        environment = dict(os.environ, SIMHASH_STORE_URL=url)
        # Output to files, not pipes: nobody reads a pipe until the end, and a full one would stall the add.
        self.out, self.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "simhash_store.cli", "add", "--jsonl", "-", "--batch-size", str(batch_size)],
            stdin=subprocess.PIPE,
            stdout=self.out,
            stderr=self.err,
            env=environment,
        )
        self.documents = documents
        self.fed: dict[str, str] = {}
        self.fed_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self._thread.start()

    def _feed(self) -> None:
        repetition = 0
        try:
            while not self._stop.is_set():
                for key, text in self.documents:
                    if self._stop.is_set():
                        break
                    full_key = f"text/{repetition:04d}/{key}"
                    line = (json.dumps({"key": full_key, "text": text}, ensure_ascii=False) + "\n").encode()
                    self.process.stdin.write(line)  # blocks while the add is busy: back pressure
                    self.fed[full_key] = text
                    self.fed_bytes += len(line)
                repetition += 1
        except BrokenPipeError:
            pass
        finally:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass

    def finish(self, timeout: float = 900) -> tuple[int, str, str]:
        self._stop.set()
        self._thread.join()  # it closes the add's input
        code = self.process.wait(timeout=timeout)
        self.out.seek(0)
        self.err.seek(0)
        return code, self.out.read().decode(errors="replace"), self.err.read().decode(errors="replace")


def added_rows(url: str, bulk_rows: int) -> tuple[int, int]:
    """Documents the add has committed, and their characters."""
    with psycopg.connect(url) as connection:
        return connection.execute(
            "SELECT count(*), coalesce(sum(length), 0) FROM simhash.documents WHERE id > %s", (bulk_rows,)
        ).fetchone()


# ------------------------------------------------------------------ one window


@dataclass
class Window:
    name: str
    queries: int = 0
    seconds: float = 0.0
    latencies: np.ndarray = field(default_factory=lambda: np.array([]))
    errors: Counter = field(default_factory=Counter)
    wrong: int = 0
    load_before: str = ""
    load_during: list[tuple[float, float, float]] = field(default_factory=list)
    added: int | None = None
    add_rate: float | None = None
    add_characters_rate: float | None = None


def run_window(
    name: str, url: str, workload: Workload, args, bulk_rows: int, feeder: Feeder | None, clients_wanted: int
) -> Window:
    """``clients_wanted`` query processes for ``args.seconds`` (none: the add alone); rows the add committed meanwhile."""
    window = Window(name, load_before=load_now())
    context = multiprocessing.get_context("spawn")
    ready, results, go = context.Queue(), context.Queue(), context.Event()
    deadline = context.Value("d", 0.0)
    clients = [
        context.Process(target=client, args=(n, url, workload, ready, go, deadline, results), daemon=True)
        for n in range(clients_wanted)
    ]
    for process in clients:
        process.start()
    for _ in clients:
        ready.get(timeout=300)
    before = added_rows(url, bulk_rows) if feeder else (0, 0)
    started = time.perf_counter()
    deadline.value = started + args.seconds
    go.set()
    while time.perf_counter() < deadline.value:
        time.sleep(min(5.0, max(0.0, deadline.value - time.perf_counter())))
        window.load_during.append(os.getloadavg())
    if feeder:
        after, elapsed = added_rows(url, bulk_rows), time.perf_counter() - started
        window.added = after[0] - before[0]
        window.add_rate, window.add_characters_rate = window.added / elapsed, (after[1] - before[1]) / elapsed
    collected = [results.get(timeout=300) for _ in clients]
    for process in clients:
        process.join(timeout=60)
    window.latencies = np.concatenate([np.array([]), *(latencies for _, latencies, _, _ in collected)])
    for _, _, errors, wrong in collected:
        window.errors.update(errors)
        window.wrong += wrong
    window.queries = len(window.latencies)
    window.seconds = args.seconds  # every query counted started inside the window
    return window


def wait_for_first_batch(url: str, bulk_rows: int, feeder: Feeder, timeout: float = 300) -> None:
    """The window starts once the add is in its stride: dictionaries loaded, a batch committed."""
    deadline = time.time() + timeout
    while added_rows(url, bulk_rows)[0] == 0:
        if feeder.process.poll() is not None or time.time() > deadline:
            code, out, err = feeder.finish()
            raise SystemExit(f"the add stopped before its first batch (exit {code}): {err[-2000:]}")
        time.sleep(0.5)


def check_feeder(url: str, feeder: Feeder, sample: int) -> list[str]:
    """The add's exit status, and that every record it was given is stored with the right fingerprint."""
    from simhash_store import fingerprint
    from simhash_store.bits import from_signed

    code, out, err = feeder.finish()
    notes = [f"add exit status {code}; its summary: {out.strip().splitlines()[-1] if out.strip() else '(none)'}"]
    if code != 0 or "Traceback" in err or "failed" in err:
        notes.append(f"ADD FAILED: {err.strip()[-2000:]}")
    with psycopg.connect(url) as connection:
        stored = dict(
            connection.execute("SELECT key, fingerprint FROM simhash.documents WHERE key LIKE 'text/%'").fetchall()
        )
    missing = [key for key in feeder.fed if key not in stored]
    notes.append(
        f"records fed to the add: {len(feeder.fed):,} ({feeder.fed_bytes / 1e6:.1f} MB); stored: {len(stored):,}; "
        f"missing: {len(missing)}"
    )
    keys = random.Random(1).sample(sorted(feeder.fed), min(sample, len(feeder.fed)))
    differing = [key for key in keys if key in stored and from_signed(stored[key]) != fingerprint(feeder.fed[key])]
    notes.append(f"fingerprints recomputed for a sample of {len(keys)} stored records: {len(differing)} differ")
    return notes


def summarise(window: Window, query_baseline: Window | None, add_baseline: Window | None) -> list[str]:
    during = np.array(window.load_during) if window.load_during else np.zeros((1, 3))
    if window.queries:
        rate = window.queries / window.seconds
        p50, p99, worst = (percentile(window.latencies.tolist(), f) for f in (0.5, 0.99, 1.0))
        ratio = f" ({rate / (query_baseline.queries / query_baseline.seconds):.2f}x baseline)" if query_baseline else ""
        queries = [
            f"{window.queries:,}",
            f"{rate:,.0f}{ratio}",
            f"{p50 * 1000:.2f} ms",
            f"{p99 * 1000:.2f} ms",
            f"{worst * 1000:.0f} ms",
            str(sum(window.errors.values())),
            str(window.wrong),
        ]
    else:
        queries = ["-"] * 7
    if window.add_rate is not None:
        ratio = f" ({window.add_rate / add_baseline.add_rate:.2f}x add alone)" if add_baseline else ""
        add = (
            f"{window.add_rate:,.1f} docs/s{ratio}, {window.add_characters_rate / 1000:,.0f}k chars/s "
            f"({window.added:,} docs)"
        )
    else:
        add = "-"
    return [
        window.name,
        *queries,
        add,
        window.load_before,
        f"{during[:, 0].mean():.1f} (max {during[:, 0].max():.1f})",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=1_000_000, help="fingerprints in the store before the windows")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each window")
    parser.add_argument("--clients", type=int, default=8, help="query processes")
    parser.add_argument("--max-distance", "-k", type=int, default=3, help="the queries' max distance")
    parser.add_argument(
        "--queries-per-kind",
        type=int,
        default=1000,
        help="distinct queries of each kind (planted, near stored, random)",
    )
    parser.add_argument(
        "--add-batch-size",
        type=int,
        default=100,
        help="the add's --batch-size (small, so that its committed rows measure its rate within the window)",
    )
    parser.add_argument(
        "--check-sample", type=int, default=50, help="stored records of the add whose fingerprint is recomputed"
    )
    parser.add_argument(
        "--admin-url", default=DEFAULT_ADMIN_URL, help="a server where the script may create and drop databases"
    )
    parser.add_argument("--database", default="simhash_soak")
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()

    print(f"machine: {machine()}")
    print(f"server: PostgreSQL {server_version(args.admin_url)} at {args.admin_url}")
    print(f"load at start: {load_now()}", flush=True)
    with fresh_database(args.admin_url, args.database, keep=args.keep) as url:
        from simhash_store.store import Store

        with Store(url) as store:
            store.init()
        stored, points = make_data(args.documents, args.queries_per_kind, args.seed)
        loaded = bulk_load(url, stored)
        print(f"loaded {args.documents:,} fingerprints in {loaded:.1f} s", flush=True)
        workload = build_workload(stored, points, args.queries_per_kind, args.max_distance, args.seed + 2)
        print(
            f"{len(workload.fingerprints):,} distinct queries, "
            f"{sum(map(len, workload.expected)):,} expected matches among the bulk rows",
            flush=True,
        )

        documents = corpus_documents()
        random.Random(args.seed).shuffle(documents)  # laws and paragraphs mixed: a steady rate
        feeder = Feeder(url, documents, args.add_batch_size)
        wait_for_first_batch(url, args.documents, feeder)
        print(f"add running (load {load_now()}); window with add, {args.seconds:g} s", flush=True)
        with_add = run_window(
            f"{args.clients} clients + add", url, workload, args, args.documents, feeder, args.clients
        )
        print(f"the add alone, {args.seconds:g} s (load {load_now()})", flush=True)
        add_alone = run_window("add alone (baseline for the add)", url, workload, args, args.documents, feeder, 0)
        notes = check_feeder(url, feeder, args.check_sample)
        time.sleep(5)  # let the add's processes go before the baseline
        print(f"baseline window, {args.seconds:g} s (load {load_now()})", flush=True)
        baseline = run_window(
            f"{args.clients} clients, no add (baseline)", url, workload, args, args.documents, None, args.clients
        )

        header = [
            "window",
            "queries",
            "queries/s",
            "p50",
            "p99",
            "max",
            "errors",
            "wrong answers",
            "add rate (committed rows)",
            "load before (1/5/15)",
            "1-min load during (mean)",
        ]
        print()
        print(
            markdown_table(
                header,
                [
                    summarise(baseline, None, None),
                    summarise(add_alone, None, None),
                    summarise(with_add, baseline, add_alone),
                ],
            )
        )
        print()
        for window in (with_add, baseline):
            for error, count in window.errors.most_common():
                print(f"- {window.name}: {count} x {error}")
        for note in notes:
            print(f"- {note}")
        print(
            f"- {args.documents:,} bulk fingerprints; k={args.max_distance}; {args.clients} client processes; "
            f"add batch size {args.add_batch_size}; corpus {len(documents):,} texts per repetition"
        )
        print(f"- load at end: {load_now()}")


if __name__ == "__main__":
    main()
