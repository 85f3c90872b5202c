"""Speed of the PostgreSQL store at 1M and 10M fingerprints, with its baselines measured in the same run.

For each size the script creates a database of its own, loads random 64-bit
fingerprints plus planted neighbours (for each query point, one stored fingerprint at
every distance 1..10, its flipped bits either packed into one block or spread over all
four), makes the store index-only (VACUUM ANALYZE), and measures:

* query-readiness (issue 15): ``Store.query`` p50 at k = 3 and 11 in a new connection right
  after ``Store.load`` returns, against the same after an explicit VACUUM ANALYZE; and the
  same in a second database right after another application COPYs the rows in (no library
  call; ``--copied-sizes``);
* ``simhash.near`` against revision 0001's function (created as ``before.near`` in the same
  database) at k = 3, 7, 8, 9, 10, 11, the two timed alternately query by query; the k = 8 and
  k = 10 p50 against k = 11; ``near(fp, 16, max_results => 10)`` against ``near(fp, 16)``;
  ``simhash.near_many`` against 0001's ``near`` called once per query (issues 10 and 12);
* single queries through ``Store.query`` (one round trip each) at k = 3, 7, 10, 11, against a
  sequential scan (``method="scan"``) of the same store;
* ``Store.query_many`` (``simhash.near_many``) in batches of 1,000 at k = 3;
* all pairs within k = 3 (``Store.pairs``) against the C++ ``find_all`` of the PyPI
  package ``simhash-pybind``, checking that both find the same pairs;
* the bulk load itself, through ``Store.load`` into the empty store (one transaction,
  rows first, then the key, id and block indexes built over them);
* bulk add through ``Store.add`` into the already-loaded store (new keys, then the
  same documents again, which must all come back unchanged);
* the database size per million fingerprints (table and its indexes).

Every query result that is timed is also checked against brute force (numpy) for a
sample of the queries. The machine is shared, so the load average is printed beside
the numbers; ratios against baselines measured in the same run are what to compare.

    python benchmarks/store_speed.py --sizes 100000                  # a quick run
    python benchmarks/store_speed.py --sizes 1000000 10000000        # the README numbers
    python benchmarks/store_speed.py --embedded --sizes 1000000      # on the embedded PostgreSQL 18
    python benchmarks/store_speed.py --sizes 10000000 --only-writes  # the bulk load and add alone

The bulk of the rows is loaded through ``Store.load`` (timed; the documents are built
before the clock starts, as for the bulk add); the bulk-add figure is measured through ``Store.add``
only. The database is dropped at the end unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simhash_store.config import normalize_url  # noqa: E402
from simhash_store.store import NewDocument, Store  # noqa: E402

DEFAULT_ADMIN_URL = "postgresql://root@127.0.0.1:5432/postgres"
KEY_DIGITS = 10
PLANTED_DISTANCES = range(1, 11)
TARGET_SIZE = 10_000_000


@dataclass
class Row:
    size: int
    what: str
    measured: str
    baseline: str = ""
    ratio: str = ""
    target: str = ""
    met: str = ""
    load: str = ""

    def __post_init__(self) -> None:  # each row as soon as it is measured, for long runs
        print(
            f"| {self.size:,} | {self.what} | {self.measured} | {self.baseline} | {self.ratio} | {self.target} "
            f"| {self.met} | {self.load} |",
            flush=True,
        )


def load_now() -> str:
    return "{:.1f}/{:.1f}/{:.1f}".format(*os.getloadavg())


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    memory = int(
        next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    )
    return f"{os.cpu_count()} cores ({cpu}), {memory / 2**20:.0f} GiB RAM, Python {platform.python_version()}, numpy {np.__version__}"


# ------------------------------------------------------------------ data


def keys_as_bytes(start: int, count: int) -> np.ndarray:
    """Fixed-width keys ``fp0000000042`` as an (count, 12) byte array, without a Python loop."""
    numbers = np.arange(start, start + count, dtype=np.int64)
    out = np.empty((count, 2 + KEY_DIGITS), dtype=np.uint8)
    out[:, 0], out[:, 1] = ord("f"), ord("p")
    for place in range(KEY_DIGITS):
        out[:, 1 + KEY_DIGITS - place] = 48 + (numbers // 10**place) % 10
    return out


def key_of(index: int) -> str:
    return f"fp{index:0{KEY_DIGITS}d}"


def flip_bits(value: np.uint64, positions) -> int:
    value = int(value)
    for p in positions:
        value ^= 1 << int(p)
    return value


def make_data(size: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``size`` stored fingerprints (random, with planted neighbours) and the query points.

    Query point i gets one stored neighbour at every distance in PLANTED_DISTANCES: the
    flipped bits are packed into one block for even distances and spread round-robin over
    all four for odd ones, so every probe path (exact block, flipped block) returns matches.
    """
    rng = np.random.default_rng(seed)
    stored = rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)
    points = rng.integers(0, 2**64, size=queries, dtype=np.uint64, endpoint=False)
    planted = []
    for i, point in enumerate(points):
        for distance in PLANTED_DISTANCES:
            first = (i + distance) % 4
            if distance % 2 == 0:
                block = list(range(48 - 16 * first, 64 - 16 * first))
                positions = rng.choice(block, distance, replace=False)
            else:
                per_block = [rng.permutation(np.arange(48 - 16 * b, 64 - 16 * b)) for b in range(4)]
                positions = [per_block[(first + j) % 4][j // 4] for j in range(distance)]
            planted.append(flip_bits(point, positions))
    count = min(len(planted), size)
    spots = rng.choice(size, count, replace=False)
    stored[spots] = np.array(planted[:count], dtype=np.uint64)
    return stored, points


def copy_buffer(start: int, fingerprints: np.ndarray) -> bytes:
    """PostgreSQL binary COPY of (key, fingerprint) rows, built as one numpy record array."""
    row = np.dtype([("fields", ">i2"), ("key_len", ">i4"), ("key", "S12"), ("fp_len", ">i4"), ("fp", ">i8")])
    rows = np.empty(len(fingerprints), dtype=row)
    rows["fields"], rows["key_len"], rows["fp_len"] = 2, 2 + KEY_DIGITS, 8
    rows["key"] = keys_as_bytes(start, len(fingerprints)).view("S12").ravel()
    rows["fp"] = fingerprints.view(np.int64)
    return b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8 + rows.tobytes() + b"\xff\xff"


# ------------------------------------------------------------------ database


def admin_execute(admin_url: str, statement: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(statement)


def bulk_load(url: str, fingerprints: np.ndarray) -> float:
    """Load with block indexes dropped and re-created from their own definitions; seconds taken.

    The other benchmarks' loader (soak, migrations); this one times ``Store.load`` instead.
    """
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as connection:
        definitions = [
            row[0]
            for row in connection.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = 'simhash' AND tablename = 'documents' "
                "AND indexname LIKE 'ix_documents_block%' ORDER BY indexname"
            )
        ]
        for definition in definitions:
            connection.execute("DROP INDEX simhash." + definition.split()[2])
        chunk = 1_000_000
        with connection.cursor() as cursor:
            for start in range(0, len(fingerprints), chunk):
                with cursor.copy("COPY simhash.documents (key, fingerprint) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.write(copy_buffer(start, fingerprints[start : start + chunk]))
        connection.execute("SET maintenance_work_mem = '1GB'")
        for definition in definitions:
            connection.execute(definition)
        connection.execute("VACUUM (ANALYZE) simhash.documents")
    return time.perf_counter() - started


def sizes(url: str) -> dict[str, int]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'simhash' "
            "AND c.relname IN ('documents', 'pk_documents', 'uq_documents_key', 'ix_documents_block0', "
            "'ix_documents_block1', 'ix_documents_block2', 'ix_documents_block3')"
        ).fetchall()
        heap = connection.execute("SELECT pg_relation_size('simhash.documents')").fetchone()[0]
    found = dict(rows)
    found["heap"] = heap
    return found


def explain_probe(url: str, point: int, k: int) -> str:
    """The plan of the probe statement inside ``simhash.near``, with buffers (auto_explain of nested statements)."""
    with psycopg.connect(url) as connection:
        connection.execute("LOAD 'auto_explain'")
        for setting, value in {
            "auto_explain.log_min_duration": "0",
            "auto_explain.log_analyze": "on",
            "auto_explain.log_buffers": "on",
            "auto_explain.log_nested_statements": "on",
            "auto_explain.log_level": "notice",
            "client_min_messages": "notice",
        }.items():
            connection.execute(f"SET {setting} = '{value}'")
        notices: list[str] = []
        connection.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
        signed = int(np.uint64(point).view(np.int64))
        connection.execute("SELECT * FROM simhash.near(%s, %s)", (signed, k)).fetchall()
    return "\n".join(n for n in notices if "Index" in n or "Scan" in n) or "\n".join(notices)


# ------------------------------------------------------------------ measurements


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def brute_force(stored: np.ndarray, point: int, k: int) -> list[tuple[int, str]]:
    distances = np.bitwise_count(stored ^ np.uint64(point))
    hits = np.flatnonzero(distances <= k)
    return sorted((int(distances[i]), key_of(int(i))) for i in hits)


def timed_queries(store: Store, points: np.ndarray, k: int, method: str = "auto") -> tuple[list[float], list]:
    times, results = [], []
    for point in points.tolist():
        started = time.perf_counter()
        found = store.query(point, k, method=method)
        times.append(time.perf_counter() - started)
        results.append(found)
    return times, results


def check(results, stored: np.ndarray, points: np.ndarray, k: int, sample: int) -> int:
    """Compare a sample of results with brute force; returns how many matches the sample held."""
    matched = 0
    for found, point in list(zip(results, points.tolist()))[:sample]:
        expected = brute_force(stored, point, k)
        got = [(m.distance, m.key) for m in found]
        if got != expected:
            raise AssertionError(f"k={k}: query {point:#x} returned {got[:5]}..., brute force {expected[:5]}...")
        matched += len(got)
    return matched


def verdict(size: int, met: bool) -> str:
    """Query and add targets are set at 10M stored fingerprints; smaller sizes are for reference."""
    if size < TARGET_SIZE:
        return "(target at 10M)"
    return "yes" if met else "no"


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def bench_size(args, size: int, rows: list[Row], notes: list[str]) -> None:
    database = f"{args.database}_{size}"
    admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    admin_execute(args.admin_url, f'CREATE DATABASE "{database}"')
    url = (
        normalize_url(args.admin_url)
        .set(database=database, drivername="postgresql")
        .render_as_string(hide_password=False)
    )
    raw_url = url  # libpq reads the same URL (host= for a Unix socket, connect_timeout)
    print(f"\n== {size:,} fingerprints in {database} (load {load_now()})", flush=True)

    stored, points = make_data(size, args.queries, args.seed)
    store = Store(url)
    store.init()
    # Built before the clock, as bench_add's are: making 10M frozen dataclasses is the caller's cost (about 45 s here).
    documents = [NewDocument(key_of(i), value) for i, value in enumerate(stored.tolist())]
    started = time.perf_counter()
    result = store.load(documents)
    loaded = time.perf_counter() - started
    assert result.added == size, result
    del documents
    fresh: dict[int, float] = {}
    if not args.only_writes:
        # Issue 15: right after Store.load returns, in a new connection (whatever Store.load
        # leaves behind: statistics, visibility map), then the same after VACUUM ANALYZE.
        fresh = fresh_p50(url, points, args)
    started = time.perf_counter()
    store.optimize()
    optimized = time.perf_counter() - started
    print(f"loaded in {loaded:.1f} s, VACUUM ANALYZE {optimized:.1f} s", flush=True)
    rows.append(
        Row(
            size,
            f"bulk load {size:,} into the empty store (Store.load)",
            f"{size / loaded:,.0f} fp/s",
            "",
            "",
            ">= 100,000 fp/s",
            verdict(size, size / loaded >= 100_000),
            load_now(),
        )
    )
    notes.append(f"{size:,}: Store.load {loaded:.1f} s, then VACUUM ANALYZE {optimized:.1f} s")
    if args.only_writes:
        bench_add(store, size, rows, notes, args)
        store.close()
        admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        return

    if args.prewarm:
        with psycopg.connect(raw_url, autocommit=True) as connection:
            connection.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            connection.execute(
                "SELECT pg_prewarm(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'simhash' AND c.relkind IN ('r', 'i')"
            )

    relation_sizes = sizes(raw_url)
    total = relation_sizes["documents"]
    per_million = total / (size / 1e6)
    detail = ", ".join(f"{name} {value / 2**20:.0f} MiB" for name, value in sorted(relation_sizes.items()))
    rows.append(Row(size, "database size per 1M fingerprints (table + indexes)", f"{per_million / 2**20:.0f} MiB"))
    notes.append(f"{size:,}: {detail}")

    plan = explain_probe(raw_url, int(points[0]), 3)
    index_only = plan.count("Index Only Scan")
    heap_fetches = [line.strip() for line in plan.splitlines() if "Heap Fetches" in line]
    notes.append(
        f"{size:,}: k=3 probe plan: {index_only} index-only scans; {'; '.join(heap_fetches) or 'no heap fetch lines'}"
    )
    if args.verbose:
        print(plan)

    # Warm up: the connection, the function's cached plans, the index pages.
    timed_queries(store, points[: min(200, len(points))], 3)
    if fresh:
        vacuumed = fresh_p50(url, points, args)
        for k in sorted(fresh):
            rows.append(
                Row(
                    size,
                    f"query k={k} p50 right after Store.load, new connection",
                    fmt_ms(fresh[k]),
                    f"after VACUUM ANALYZE {fmt_ms(vacuumed[k])}",
                    f"{fresh[k] / vacuumed[k]:.2f}x",
                    "<= 1.3x",
                    "yes" if fresh[k] <= 1.3 * vacuumed[k] else "no",
                    load_now(),
                )
            )
    bench_search(args, size, raw_url, store, stored, points, rows, notes)

    times, results = timed_queries(store, points, 3)
    matched = check(results, stored, points, 3, args.check)
    scans = [timed_queries(store, points[i : i + 1], 3, method="scan")[0][0] for i in range(args.scans)]
    scan = statistics.median(scans)
    p50, p99 = percentile(times, 0.5), percentile(times, 0.99)
    load = load_now()
    rows.append(
        Row(
            size,
            "query k=3 p50 (Store.query)",
            fmt_ms(p50),
            f"scan {fmt_ms(scan)}",
            f"{scan / p50:,.0f}x",
            "<= 0.5 ms, >= 500x scan",
            verdict(size, p50 <= 0.5e-3 and scan / p50 >= 500),
            load,
        )
    )
    rows.append(
        Row(size, "query k=3 p99 (Store.query)", fmt_ms(p99), "", "", "<= 2 ms", verdict(size, p99 <= 2e-3), load)
    )
    notes.append(f"{size:,}: k=3 over {len(points)} queries, {matched} matches in the {args.check} checked")

    for k, target in ((7, 5e-3), (10, 50e-3), (11, 10e-3)):
        count = args.queries if k == 7 else max(50, args.queries // 5)
        times, results = timed_queries(store, points[:count], k)
        matched = check(results, stored, points, k, args.check)
        p50 = percentile(times, 0.5)
        rows.append(
            Row(
                size,
                f"query k={k} p50 (Store.query)",
                fmt_ms(p50),
                f"scan {fmt_ms(scan)} (k=3)",
                f"{scan / p50:,.0f}x",
                f"<= {target * 1000:g} ms",
                verdict(size, p50 <= target),
                load_now(),
            )
        )
        notes.append(
            f"{size:,}: k={k} over {count} queries, p99 {fmt_ms(percentile(times, 0.99))}, "
            f"{matched} matches in the {args.check} checked"
        )

    batch = 1000
    many_points = np.resize(points, max(batch * args.batches, len(points)))[: batch * args.batches]
    store.query_many(many_points[:batch].tolist(), 3)
    started = time.perf_counter()
    batched = []
    for start in range(0, len(many_points), batch):
        batched.extend(store.query_many(many_points[start : start + batch].tolist(), 3))
    elapsed = time.perf_counter() - started
    check(batched, stored, many_points, 3, args.check)
    rate = len(many_points) / elapsed
    rows.append(
        Row(
            size,
            "query_many k=3, batches of 1,000 (simhash.near_many)",
            f"{rate:,.0f} q/s",
            f"scan {1 / scan:,.1f} q/s",
            f"{rate * scan:,.0f}x",
            ">= 10,000 q/s",
            verdict(size, rate >= 10000),
            load_now(),
        )
    )

    if size in args.pairs_sizes:
        bench_pairs(store, stored, size, rows, notes)

    bench_add(store, size, rows, notes, args)
    store.close()
    if size in args.copied_sizes:
        bench_copied(args, size, stored, points, rows, notes)
    if not args.keep:
        admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    else:
        notes.append(f"{size:,}: database {database} kept")


def fresh_p50(url: str, points: np.ndarray, args) -> dict[int, float]:
    """p50 of Store.query at k = 3 and 11 through a new Store (a new connection), as a user right after a write."""
    result = {}
    with Store(url) as store:
        for k, count in ((3, args.queries), (11, max(50, args.queries // 10))):
            times, _ = timed_queries(store, points[:count], k)
            result[k] = percentile(times, 0.5)
    return result


def revision_0001_near() -> str:
    """Revision 0001's simhash.near, created as before.near: the baseline for every search figure."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "migrations" / "versions" / "0001_initial_store.py"
    spec = importlib.util.spec_from_file_location("revision_0001", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NEAR.replace("FUNCTION simhash.near(", "FUNCTION before.near(")


def timed_sql(connection: psycopg.Connection, statement: str, parameters: list[tuple]) -> list[float]:
    times = []
    for values in parameters:
        started = time.perf_counter()
        connection.execute(statement, values, prepare=True).fetchall()
        times.append(time.perf_counter() - started)
    return times


def interleaved(
    connection: psycopg.Connection, first: str, second: str, parameters: list[tuple]
) -> tuple[list[float], list[float]]:
    """Both statements on each parameter set, alternating which goes first, so that load and cache drift hit both alike."""
    timed_sql(connection, first, parameters[:10])  # warm: plans and pages
    timed_sql(connection, second, parameters[:10])
    times: tuple[list[float], list[float]] = ([], [])
    for n, values in enumerate(parameters):
        order = (0, 1) if n % 2 == 0 else (1, 0)
        for which in order:
            times[which].extend(timed_sql(connection, (first, second)[which], [values]))
    return times


def bench_search(
    args, size: int, url: str, store: Store, stored: np.ndarray, points: np.ndarray, rows: list[Row], notes: list[str]
) -> None:
    """simhash.near now against revision 0001's (issues 10 and 12), in the same database and run."""
    signed = [int(v) for v in points.view(np.int64)]
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE SCHEMA IF NOT EXISTS before")
        connection.execute("DROP FUNCTION IF EXISTS before.near(bigint, integer, text)")
        connection.execute(revision_0001_near())
        p50: dict[tuple[str, int], float] = {}
        for k in (3, 7, 8, 9, 10, 11):
            count = args.queries if k <= 7 else max(100, args.queries // 5)
            timed_queries(store, points[:50], k)  # warm: plans and pages
            times, results = timed_queries(store, points[:count], k)
            check(results, stored, points, k, args.check)
            p50[("query", k)] = percentile(times, 0.5)
            before, after = interleaved(
                connection,
                "SELECT * FROM before.near(%s, %s)",
                "SELECT * FROM simhash.near(%s, %s)",
                [(v, k) for v in signed[:count]],
            )
            p50[("before", k)], p50[("after", k)] = percentile(before, 0.5), percentile(after, 0.5)
            load = load_now()
            rows.append(
                Row(
                    size,
                    f"simhash.near k={k} p50, this revision (SQL)",
                    fmt_ms(p50[("after", k)]),
                    f"revision 0001 {fmt_ms(p50[('before', k)])}",
                    f"{p50[('after', k)] / p50[('before', k)]:.2f}x",
                    "no slower" if k in (3, 7, 11) else "",
                    "yes" if p50[("after", k)] <= 1.05 * p50[("before", k)] else "no",
                    load,
                )
            )
        for k, bound in ((8, 0.45), (10, 0.85)):
            ratio = p50[("query", k)] / p50[("query", 11)]
            rows.append(
                Row(
                    size,
                    f"query k={k} p50 (Store.query) against k=11",
                    fmt_ms(p50[("query", k)]),
                    f"k=11 {fmt_ms(p50[('query', 11)])}",
                    f"{ratio:.2f}x",
                    f"<= {bound}x",
                    "yes" if ratio <= bound else "no",
                    load_now(),
                )
            )

        count = max(50, args.queries // 20)
        full, limited = interleaved(
            connection,
            "SELECT * FROM simhash.near(%s, 16)",
            "SELECT * FROM simhash.near(%s, 16, max_results => 10)",
            [(v,) for v in signed[:count]],
        )
        full, limited = percentile(full, 0.5), percentile(limited, 0.5)
        rows.append(
            Row(
                size,
                "near(fp, 16, max_results => 10) p50",
                fmt_ms(limited),
                f"near(fp, 16) {fmt_ms(full)}",
                f"{limited / full:.2f}x",
                "<= 0.3x",
                "yes" if limited <= 0.3 * full else "no",
                load_now(),
            )
        )

        # The batch statement query_many sent before near_many: one near() call a query.
        old_many = (
            "SELECT q.ordinality, n.id, n.key, n.fingerprint, n.distance "
            "FROM unnest(%s::bigint[]) WITH ORDINALITY AS q(fingerprint, ordinality) "
            "CROSS JOIN LATERAL (SELECT * FROM before.near(q.fingerprint, 3)) AS n"
        )
        batch = 1000
        batches = [signed[start : start + batch] for start in range(0, min(len(signed), batch * args.batches), batch)]
        new_many = "SELECT * FROM simhash.near_many(%s, 3)"
        old_times, new_times = interleaved(connection, old_many, new_many, [(b,) for b in batches])
        old_rate, new_rate = sum(map(len, batches)) / sum(old_times), sum(map(len, batches)) / sum(new_times)
    rows.append(
        Row(
            size,
            "simhash.near_many k=3, batches of 1,000 (SQL)",
            f"{new_rate:,.0f} q/s",
            f"0001's near, one call a query: {old_rate:,.0f} q/s",
            f"{new_rate / old_rate:.2f}x",
            ">= 10,000 q/s",
            verdict(size, new_rate >= 10000),
            load_now(),
        )
    )


def bench_copied(args, size: int, stored: np.ndarray, points: np.ndarray, rows: list[Row], notes: list[str]) -> None:
    """Issue 15: rows COPYed in by another application (no library call), searched before autovacuum."""
    database = f"{args.database}_{size}_copied"
    admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    admin_execute(args.admin_url, f'CREATE DATABASE "{database}"')
    url = (
        normalize_url(args.admin_url)
        .set(database=database, drivername="postgresql")
        .render_as_string(hide_password=False)
    )
    with Store(url) as store:
        store.init()
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as connection:
        with connection.cursor() as cursor:
            with cursor.copy("COPY simhash.documents (key, fingerprint) FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(copy_buffer(0, stored))
    copied = time.perf_counter() - started
    fresh = fresh_p50(url, points, args)
    with psycopg.connect(url, autocommit=True) as connection:
        analyzed = connection.execute(
            "SELECT coalesce(last_autoanalyze::text, 'never'), coalesce(last_autovacuum::text, 'never') "
            "FROM pg_stat_user_tables WHERE relid = 'simhash.documents'::regclass"
        ).fetchone()
        connection.execute("VACUUM (ANALYZE) simhash.documents")
    vacuumed = fresh_p50(url, points, args)
    notes.append(
        f"{size:,}: COPY by another application took {copied:.1f} s (indexes in place); when measured, "
        f"autoanalyze {analyzed[0]}, autovacuum {analyzed[1]}"
    )
    for k in sorted(fresh):
        bound = 3.0 if k == 3 else None
        rows.append(
            Row(
                size,
                f"query k={k} p50 right after {size:,} rows COPYed by another application",
                fmt_ms(fresh[k]),
                f"after VACUUM ANALYZE {fmt_ms(vacuumed[k])}",
                f"{fresh[k] / vacuumed[k]:.2f}x",
                f"<= {bound:g}x" if bound else "",
                ("yes" if fresh[k] <= bound * vacuumed[k] else "no") if bound else "",
                load_now(),
            )
        )
    admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def bench_pairs(store: Store, stored: np.ndarray, size: int, rows: list[Row], notes: list[str]) -> None:
    import simhash  # simhash-pybind: the C++ find_all

    from simhash_store.pairs import near_pairs

    distinct = set(stored.tolist())
    cpp = {}
    for blocks in (4, 5, 6):
        started = time.perf_counter()
        found = simhash.find_all(distinct, blocks, 3)
        cpp[blocks] = (time.perf_counter() - started, found)
    best_blocks = min(cpp, key=lambda b: cpp[b][0])
    cpp_time, cpp_pairs = cpp[best_blocks]
    cpp_set = {(min(a, b), max(a, b)) for a, b in cpp_pairs}

    started = time.perf_counter()
    left, right, _ = near_pairs(stored, 3)
    numpy_time = time.perf_counter() - started
    started = time.perf_counter()
    pairs = store.pairs(3)
    store_time = time.perf_counter() - started

    values = stored.tolist()
    ours = {(min(values[i], values[j]), max(values[i], values[j])) for i, j in zip(left.tolist(), right.tolist())}
    by_key = {key_of(i): v for i, v in enumerate(values)}
    from_store = {(min(by_key[p.a], by_key[p.b]), max(by_key[p.a], by_key[p.b])) for p in pairs}
    same = ours == cpp_set == from_store
    if not same:
        raise AssertionError(f"pairs differ: numpy {len(ours)}, store {len(from_store)}, C++ {len(cpp_set)}")
    load = load_now()
    times = ", ".join(f"{b} blocks {cpp[b][0]:.2f} s" for b in sorted(cpp))
    notes.append(f"{size:,}: C++ find_all {times}; {len(cpp_set)} pairs, identical sets: {same}")
    rows.append(
        Row(
            size,
            "all pairs k=3 (Store.pairs: COPY out, numpy, keys)",
            f"{store_time:.2f} s",
            f"C++ find_all {cpp_time:.2f} s ({best_blocks} blocks)",
            f"{store_time / cpp_time:.2f}x",
            "<= 3x C++",
            "yes" if store_time <= 3 * cpp_time else "no",
            load,
        )
    )
    rows.append(
        Row(
            size,
            "all pairs k=3 (pairs.near_pairs alone)",
            f"{numpy_time:.2f} s",
            f"C++ find_all {cpp_time:.2f} s",
            f"{numpy_time / cpp_time:.2f}x",
            "",
            "",
            load,
        )
    )


def bench_add(store: Store, size: int, rows: list[Row], notes: list[str], args) -> None:
    rng = np.random.default_rng(args.seed + 1)
    values = rng.integers(0, 2**64, size=args.add_rows, dtype=np.uint64).tolist()
    documents = [NewDocument(f"new{i:010d}", v) for i, v in enumerate(values)]
    wal_before = wal_position(store)
    started = time.perf_counter()
    result = store.add(documents)
    elapsed = time.perf_counter() - started
    wal_bytes = wal_position(store) - wal_before
    assert result.added == len(documents), result
    load = load_now()
    rate = len(documents) / elapsed
    rows.append(
        Row(
            size,
            f"bulk add {len(documents):,} new (Store.add)",
            f"{rate:,.0f} fp/s",
            "",
            "",
            ">= 100,000 fp/s",
            verdict(size, rate >= 100_000),
            load,
        )
    )
    notes.append(
        f"{size:,}: bulk add wrote {wal_bytes / len(documents) / 1024:.1f} KiB of WAL per added row "
        f"({wal_bytes / 2**20:,.0f} MiB in {elapsed:.1f} s)"
    )
    started = time.perf_counter()
    again = store.add(documents)
    elapsed = time.perf_counter() - started
    assert again.unchanged == len(documents), again
    rows.append(
        Row(
            size,
            f"re-add the same {len(documents):,} (all unchanged)",
            f"{len(documents) / elapsed:,.0f} fp/s",
            "",
            "",
            "",
            "",
            load_now(),
        )
    )


def wal_position(store: Store) -> int:
    with store.engine.connect() as connection:
        return int(connection.exec_driver_sql("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").scalar())


def table(rows: list[Row]) -> str:
    header = ["size", "what", "measured", "baseline (same run)", "ratio", "target", "met", "load 1/5/15 min"]
    body = [[f"{r.size:,}", r.what, r.measured, r.baseline, r.ratio, r.target, r.met, r.load] for r in rows]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("SIMHASH_STORE_BENCH_URL", DEFAULT_ADMIN_URL),
        help="a server where the script may create and drop databases",
    )
    parser.add_argument("--database", default="simhash_bench", help="database name prefix (the size is appended)")
    parser.add_argument("--queries", type=int, default=2000, help="query points (each with planted neighbours)")
    parser.add_argument("--batches", type=int, default=5, help="query_many batches of 1,000")
    parser.add_argument("--scans", type=int, default=3, help="sequential scans for the baseline (median)")
    parser.add_argument("--check", type=int, default=20, help="queries per measurement checked against brute force")
    parser.add_argument("--add-rows", type=int, default=200_000, help="documents for the bulk-add measurement")
    parser.add_argument(
        "--pairs-sizes", type=int, nargs="*", default=[1_000_000], help="sizes at which to time all pairs"
    )
    parser.add_argument(
        "--copied-sizes",
        type=int,
        nargs="*",
        default=[1_000_000],
        help="sizes at which to search rows COPYed in by another application (issue 15)",
    )
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    parser.add_argument("--only-writes", action="store_true", help="measure the bulk load and bulk add only")
    parser.add_argument("--verbose", action="store_true", help="print the probe plan")
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="load the table and its indexes into shared buffers first (pg_prewarm), as a long-running "
        "server whose shared_buffers hold them would have them",
    )
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="run on a throwaway embedded PostgreSQL server (simhash_store.embedded) instead",
    )
    args = parser.parse_args()
    if args.embedded:
        from simhash_store.embedded import server_for

        directory = Path(tempfile.mkdtemp(prefix="simhash-store-bench-"))
        args.admin_url = server_for(directory / "pgdata", cleanup_mode="delete").get_uri()

    with psycopg.connect(args.admin_url) as connection:
        server = connection.execute("SELECT version()").fetchone()[0]
        settings = dict(
            connection.execute(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name IN "
                "('shared_buffers', 'synchronous_commit', 'max_wal_size', 'work_mem', 'jit')"
            ).fetchall()
        )
    print(f"machine: {machine()}")
    print(f"server: {server}; {settings}")
    print(f"load at start: {load_now()}")
    rows: list[Row] = []
    notes: list[str] = []
    for size in args.sizes:
        bench_size(args, size, rows, notes)
    print()
    print(table(rows))
    print()
    for note in notes:
        print("-", note)
    print(f"load at end: {load_now()}")


if __name__ == "__main__":
    main()
