"""Wider block keys past a size: the four 16-bit block indexes against fewer, wider ones.

Multi-index hashing: a search cut into m blocks probes every value within t_i bits of the
query's block i, with sum (t_i + 1) >= k + 1 (generalised pigeonhole), and reads every
entry stored under each probe. Four 16-bit blocks put N / 65,536 entries under a value, so
past a few million fingerprints the search is the walk of those entries; wider keys read
fewer entries for more probes (index descents). This script measures both costs on one
store of its own, in plain SQL, against the design's four 16-bit block indexes in the same
run:

* a store of ``--size`` random fingerprints (``Store.init``, rows COPYed in, the indexes
  built after the COPY, each build timed, VACUUM ANALYZE), with planted near copies of the
  query points (``--planted`` copies each, at 1..11 bits) so that queries have answers;
* the wider layouts as expression indexes ``INCLUDE (fingerprint, id)`` beside the block
  columns' indexes, on the same table: ``wide3`` three blocks of 21, 21 and 22 bits,
  ``two32`` two blocks of 32 bits (for small k only);
* for each k and layout: the radii (cheapest by a cost of probes and entries), the probes
  and index entries read per query (counted, without the distance filter), p50 and p99 of
  the search statement's execution time in the server (EXPLAIN ANALYZE: no planning, no
  round trip) and p50 of the statement with its round trip; each layout on query points of
  its own, the layouts interleaved query by query so that the machine's load falls on both;
* the pages each search touches (EXPLAIN BUFFERS: shared_buffers hits and reads);
* ``near_many``-style batches at k = 3 (one statement for 1,000 query points, the probes
  joined in SQL as ``simhash.near_many`` does, or every probe of a block in one array),
  queries/s;
* every layout's answers against numpy brute force for a sample of the query points;
* each index's bytes per document.

``--model`` measures nothing: it projects the unit costs fitted from these runs (a probe, an
index entry, a candidate on Citus) to 100M and 1B rows, one node and Citus shards.

    python benchmarks/wide_blocks.py --size 10000000
    python benchmarks/wide_blocks.py --size 1500000 --distances 3,7,11
    python benchmarks/wide_blocks.py --size 30000000 --keep     # a second run: --keep --reuse
    python benchmarks/wide_blocks.py --model
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from dataclasses import dataclass
from functools import cache
from math import comb
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from search_cost import THRESHOLDS  # noqa: E402

from simhash_store.config import normalize_url  # noqa: E402
from simhash_store.store import Store  # noqa: E402

from store_speed import admin_execute, copy_buffer, load_now, machine  # noqa: E402

# Cost of one probe (an index descent) and of one index entry read, in microseconds, used only
# to choose the radii of a layout; measured on this machine at 10M (docs/store_speed.md).
DESCENT_US = 1.0
ENTRY_US = 0.175


@dataclass(frozen=True)
class Layout:
    name: str
    widths: tuple[int, ...]  # most significant block first
    columns: tuple[str, ...] | None = None  # the table's block columns, or expression indexes

    @property
    def shifts(self) -> tuple[int, ...]:
        return tuple(sum(self.widths[i + 1 :]) for i in range(len(self.widths)))

    def expression(self, number: int, alias: str = "c") -> str:
        if self.columns:
            return f"{alias}.{self.columns[number]}"
        width, shift = self.widths[number], self.shifts[number]
        cast = "integer" if width < 32 else "bigint"
        shifted = f"{alias}.fingerprint >> {shift}" if shift else f"{alias}.fingerprint"
        return f"((({shifted}) & {(1 << width) - 1}::bigint)::{cast})"

    def index_ddl(self, number: int) -> str:
        expression = self.expression(number, "x").replace("x.", "")
        return (
            f"CREATE INDEX ix_{self.name}_{number} ON simhash.documents ({expression}) "
            "INCLUDE (fingerprint, id) WITH (fillfactor = 100)"
        )

    def index_names(self) -> list[str]:
        if self.columns:
            return [f"ix_documents_{column}" for column in self.columns]
        return [f"ix_{self.name}_{number}" for number in range(len(self.widths))]

    def values(self, point: int) -> list[int]:
        return [(point >> shift) & ((1 << width) - 1) for width, shift in zip(self.widths, self.shifts)]


FOUR16 = Layout("four16", (16, 16, 16, 16), ("block0", "block1", "block2", "block3"))
LAYOUTS = {
    "four16": FOUR16,
    "wide3": Layout("wide3", (21, 21, 22)),
    "two32": Layout("two32", (32, 32)),
}


def ball(width: int, radius: int) -> int:
    return sum(comb(width, r) for r in range(radius + 1))


def radii(layout: Layout, k: int, size: int) -> tuple[int, ...]:
    """Radii per block (-1: not probed) with sum (t + 1) = k + 1, cheapest by the cost model.

    The four 16-bit blocks keep the design's table (``simhash.near``'s), so that layout is
    the statement the store runs.
    """
    if layout is FOUR16:
        return tuple(THRESHOLDS[k])
    best, best_cost = None, float("inf")
    for choice in itertools.product(range(-1, k + 1), repeat=len(layout.widths)):
        if sum(t + 1 for t in choice) != k + 1:
            continue
        cost = sum(ball(w, t) * (DESCENT_US + ENTRY_US * size / 2**w) for w, t in zip(layout.widths, choice) if t >= 0)
        if cost < best_cost:
            best, best_cost = choice, cost
    assert best is not None
    return best


@cache
def masks(width: int, radius: int) -> tuple[int, ...]:
    return tuple(
        sum(1 << b for b in bits) for r in range(radius + 1) for bits in itertools.combinations(range(width), r)
    )


def signed(point: int) -> int:
    return point - (1 << 64) if point >= 1 << 63 else point


def statement(layout: Layout, plan: tuple[int, ...], point: int, k: int, filtered: bool) -> tuple[str, list]:
    """``near``'s statement for ``point`` (the ids within k, with keys, nearest first), or the bare probes."""
    parts, parameters = [], []
    for number, (value, radius) in enumerate(zip(layout.values(point), plan)):
        if radius < 0:
            continue
        wanted = sorted(value ^ m for m in masks(layout.widths[number], radius))
        if filtered:
            parts.append(
                f"SELECT c.id FROM simhash.documents c WHERE {layout.expression(number)} = ANY (%s) "
                f"AND bit_count((c.fingerprint # %s)::bit(64)) <= %s"
            )
            parameters += [wanted, signed(point), k]
        else:
            parts.append(f"SELECT c.fingerprint FROM simhash.documents c WHERE {layout.expression(number)} = ANY (%s)")
            parameters.append(wanted)
    if not filtered:
        return f"SELECT count(*) FROM ({' UNION ALL '.join(parts)}) s", parameters
    return (
        f"WITH hits AS ({' UNION '.join(parts)}) "
        "SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # %s)::bit(64))::integer AS distance "
        "FROM hits JOIN simhash.documents d ON d.id = hits.id ORDER BY 4, 1",
        [*parameters, signed(point)],
    )


def batch_statement(layout: Layout, plan: tuple[int, ...], points: list[int], k: int) -> tuple[str, list]:
    """``near_many``'s probe shape: the query points unnested, joined to masks, then to the index."""
    values = [f"(u.f >> {s}) & {(1 << w) - 1}" for w, s in zip(layout.widths, layout.shifts)]
    casts = ["integer" if w < 32 else "bigint" for w in layout.widths]
    columns = ", ".join(f"({v})::{c} AS b{n}" for n, (v, c) in enumerate(zip(values, casts)))
    branches, parameters = [], [[signed(p) for p in points]]
    for number, radius in enumerate(plan):
        if radius < 0:
            continue
        branches.append(
            f"SELECT q.i, c.id, bit_count((c.fingerprint # q.f)::bit(64))::integer AS distance "
            f"FROM q CROSS JOIN unnest(%s::{casts[number]}[]) AS m(mask) "
            f"JOIN simhash.documents c ON {layout.expression(number)} = q.b{number} # m.mask "
            f"WHERE bit_count((c.fingerprint # q.f)::bit(64)) <= {k}"
        )
        parameters.append(list(masks(layout.widths[number], radius)))
    return (
        f"WITH q AS MATERIALIZED (SELECT u.n::integer AS i, u.f, {columns} "
        f"FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(f, n)), "
        f"hits AS ({' UNION '.join(branches)}) "
        "SELECT h.i, d.id, d.key, d.fingerprint, h.distance FROM hits h JOIN simhash.documents d ON d.id = h.id "
        "ORDER BY h.i, h.distance, h.id",
        parameters,
    )


def batch_any_statement(layout: Layout, plan: tuple[int, ...], points: list[int], k: int) -> tuple[str, list]:
    """A batch as one array of every probe a block makes, one index scan of it, hashed back to the queries."""
    values = [f"(u.f >> {s}) & {(1 << w) - 1}" for w, s in zip(layout.widths, layout.shifts)]
    casts = ["integer" if w < 32 else "bigint" for w in layout.widths]
    columns = ", ".join(f"({v})::{c} AS b{n}" for n, (v, c) in enumerate(zip(values, casts)))
    steps, branches, parameters = [], [], [[signed(p) for p in points]]
    for number, radius in enumerate(plan):
        if radius < 0:
            continue
        steps.append(
            f"p{number} AS MATERIALIZED (SELECT q.i, q.f, q.b{number} # m.mask AS v "
            f"FROM q CROSS JOIN unnest(%s::{casts[number]}[]) AS m(mask))"
        )
        parameters.append(list(masks(layout.widths[number], radius)))
        branches.append(
            f"SELECT p.i, c.id, bit_count((c.fingerprint # p.f)::bit(64))::integer AS distance "
            f"FROM simhash.documents c JOIN p{number} p ON {layout.expression(number)} = p.v "
            f"WHERE {layout.expression(number)} = ANY ((SELECT array_agg(DISTINCT v) FROM p{number})::{casts[number]}[]) "
            f"AND bit_count((c.fingerprint # p.f)::bit(64)) <= {k}"
        )
    return (
        f"WITH q AS MATERIALIZED (SELECT u.n::integer AS i, u.f, {columns} "
        f"FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(f, n)), {', '.join(steps)}, "
        f"hits AS ({' UNION '.join(branches)}) "
        "SELECT h.i, d.id, d.key, d.fingerprint, h.distance FROM hits h JOIN simhash.documents d ON d.id = h.id "
        "ORDER BY h.i, h.distance, h.id",
        parameters,
    )


def execution_ms(connection: psycopg.Connection, sql: str, parameters: list) -> float:
    plan = connection.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, parameters).fetchone()[0]
    return plan[0]["Execution Time"]


def round_trip_ms(connection: psycopg.Connection, sql: str, parameters: list) -> float:
    started = time.perf_counter()
    connection.execute(sql, parameters).fetchall()
    return (time.perf_counter() - started) * 1e3


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def build(url: str, stored: np.ndarray, layouts: list[Layout]) -> dict[str, float]:
    """COPY the rows with the block indexes dropped, then build every layout's indexes; seconds per layout."""
    seconds: dict[str, float] = {}
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
        started = time.perf_counter()
        chunk = 1_000_000
        with connection.cursor() as cursor:
            for start in range(0, len(stored), chunk):
                with cursor.copy("COPY simhash.documents (key, fingerprint) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.write(copy_buffer(start, stored[start : start + chunk]))
        seconds["COPY (table, key and id indexes)"] = time.perf_counter() - started
        connection.execute("SET maintenance_work_mem = '1GB'")
        for layout in layouts:
            started = time.perf_counter()
            if layout is FOUR16:
                for definition in definitions:
                    connection.execute(definition)
            else:
                for number in range(len(layout.widths)):
                    connection.execute(layout.index_ddl(number))
            seconds[layout.name] = time.perf_counter() - started
            print(f"  {layout.name} indexes built in {seconds[layout.name]:.1f} s (load {load_now()})", flush=True)
        started = time.perf_counter()
        connection.execute("VACUUM (ANALYZE) simhash.documents")
        seconds["VACUUM ANALYZE"] = time.perf_counter() - started
    return seconds


def index_bytes(connection: psycopg.Connection, layout: Layout) -> int:
    return sum(
        connection.execute("SELECT pg_relation_size(%s::regclass)", [f"simhash.{name}"]).fetchone()[0]
        for name in layout.index_names()
    )


def brute_force(stored: np.ndarray, point: int, k: int) -> set[int]:
    """Ids (1-based COPY order) of the stored fingerprints within k bits of ``point``."""
    distances = np.bitwise_count(stored ^ np.uint64(point))  # unsigned: numpy counts a signed value's absolute value
    return {int(i) + 1 for i in np.flatnonzero(distances <= k)}


# A probe's cost against the rows of the index it descends, fitted from the k = 11 pairs of
# each run (docs/store_speed.md): 1.2 us at 1.5M (the index mostly in memory caches), 2.6-3.2
# at 10M, 3.5 at 30M, 5.4 at 60M, as the indexes outgrow the caches and shared_buffers.
PROBE_US = ((1.5e6, 1.2), (10e6, 3.0), (30e6, 3.5), (60e6, 5.4))


def probe_us(rows: float, extrapolate: bool = False) -> float:
    """Interpolated in log(rows); past the largest measured store held, or (``extrapolate``)
    continued along the slope of the last two points."""
    xs, ys = [np.log(n) for n, _ in PROBE_US], [us for _, us in PROBE_US]
    if extrapolate and np.log(rows) > xs[-1]:
        return ys[-1] + (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]) * (np.log(rows) - xs[-1])
    return float(np.interp(np.log(rows), xs, ys))


def model(args: argparse.Namespace) -> None:
    """Project the measured unit costs to larger stores: one node, and Citus shards in parallel.

    A search costs ``fixed + probes x per_probe + entries x per_entry``; entries are
    ``sum(ball(width, radius) x rows / 2**width)`` (what the measured counts follow). On Citus
    every shard pays the probes, each candidate is a heap visit (the branches carry ``key``), and
    the shards run ``cores`` at a time.
    """
    low, high = (float(x) for x in args.entry_us.split(","))
    citus = [
        (float(size), *(int(x) for x in layout.split("/")))
        for size, layout in (item.split("=") for item in args.citus.split(","))
    ]
    print(
        f"a probe by the rows of its index {PROBE_US} (one node past them: held, or extended), "
        f"{low}-{high} us an entry, {args.fixed_ms} ms a statement; Citus: {args.heap_us} us a candidate, "
        f"fan-out {args.fanout_ms} ms\n"
    )
    print(
        "| rows | where | k | layout | probes a shard | entries a query | p50 (model) | CPU a query | queries/s (all cores busy) |"
    )
    print("|--:|---|--:|---|--:|--:|--:|--:|--:|")
    for rows in (float(x) for x in args.model_sizes.split(",")):
        setups = [("one node", 1, 1)] + [
            (f"Citus, {shards} shards on {cores} cores", shards, cores) for size, shards, cores in citus if size == rows
        ]
        for where, shards, cores in setups:
            per_shard = rows / shards
            for k in (3, 11):
                for layout in (LAYOUTS["four16"], LAYOUTS["wide3"]):
                    plan = radii(layout, k, int(per_shard))
                    probes = sum(ball(w, t) for w, t in zip(layout.widths, plan) if t >= 0)
                    entries = sum(ball(w, t) * rows / 2**w for w, t in zip(layout.widths, plan) if t >= 0)
                    if shards == 1:
                        times = [
                            args.fixed_ms + (probes * probe_us(rows, extrapolate=far) + entries * e) / 1e3
                            for far, e in ((False, low), (True, high))
                        ]
                        cpu = times
                    else:
                        shard_ms = (probes * probe_us(per_shard) + entries / shards * args.heap_us) / 1e3
                        rounds = -(-shards // cores)
                        times = [args.fanout_ms + rounds * shard_ms] * 2
                        cpu = [shards * shard_ms] * 2
                    text = f"{times[0]:,.1f}-{times[1]:,.1f} ms" if times[0] != times[1] else f"{times[0]:,.1f} ms"
                    print(
                        f"| {rows:,.0f} | {where} | {k} | {layout.name} {plan} | {probes:,} | {entries:,.0f} | {text} | "
                        f"{cpu[1]:,.0f} ms | {cores / cpu[1] * 1e3:,.0f} |"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=300, help="query points per measurement")
    parser.add_argument("--planted", type=int, default=8, help="near copies stored per query point")
    parser.add_argument("--distances", default="3,11")
    parser.add_argument("--layouts", default="four16,wide3,two32")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--checked", type=int, default=20, help="query points checked against brute force")
    parser.add_argument("--admin-url", default="postgresql://root@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default="wide_bench")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument(
        "--prewarm", action="store_true", help="read the layouts' indexes into shared_buffers first (pg_prewarm)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the database (and reuse it with --reuse)")
    parser.add_argument("--reuse", action="store_true", help="measure a database kept by --keep")
    parser.add_argument("--model", action="store_true", help="print the projection to --model-sizes, measure nothing")
    parser.add_argument("--model-sizes", default="1e8,1e9")
    parser.add_argument("--entry-us", default="0.114,0.194", help="one node: an index entry, low,high (10M-30M fits)")
    parser.add_argument("--fixed-ms", type=float, default=0.4, help="one node: a statement's fixed part")
    parser.add_argument("--heap-us", type=float, default=0.6, help="Citus: a candidate (a heap visit)")
    parser.add_argument("--fanout-ms", type=float, default=2.5)
    parser.add_argument(
        "--citus",
        default="1e8=64/32,1e8=32/32,1e9=256/128,1e9=128/128",
        help="rows=shards/cores of the clusters modelled",
    )
    args = parser.parse_args()
    if args.model:
        model(args)
        return

    layouts = [LAYOUTS[name] for name in args.layouts.split(",")]
    assert layouts[0] is FOUR16, "four16 first: it is the baseline"
    distances = [int(k) for k in args.distances.split(",")]
    print(machine())
    print(f"start: load {load_now()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    database = f"{args.database}_{args.size}"
    url = (
        normalize_url(args.admin_url)
        .set(database=database, drivername="postgresql")
        .render_as_string(hide_password=False)
    )

    # The stored fingerprints: random, then near copies of a pool of query points written over
    # the first rows (each at 1..11 bits, so both k = 3 and k = 11 find some).
    rng = np.random.default_rng(args.seed)
    stored = rng.integers(0, 2**64, size=args.size, dtype=np.uint64)
    measurements = 2 * len(layouts) * len(distances) + 2
    pool = [int(p) for p in rng.integers(0, 2**64, size=args.queries * measurements, dtype=np.uint64)]
    batch_pool = [
        int(p) for p in rng.integers(0, 2**64, size=args.batch * args.batches * len(layouts), dtype=np.uint64)
    ]
    row = 0
    for point in pool + batch_pool:
        for _ in range(args.planted):
            if row >= args.size:
                break
            flips = rng.choice(64, size=int(rng.integers(1, 12)), replace=False)
            stored[row] = np.uint64(point ^ sum(1 << int(b) for b in flips))
            row += 1
    print(f"{args.size:,} fingerprints, {row:,} of them near copies of the query points\n")

    if not args.reuse:
        admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin_execute(args.admin_url, f'CREATE DATABASE "{database}"')
        Store(url).init()
        print(f"building (load {load_now()}):", flush=True)
        seconds = build(url, stored, layouts)
        print()
        print("| step | seconds | per 1M rows | load after |")
        print("|---|--:|--:|---|")
        for step, taken in seconds.items():
            print(f"| {step} | {taken:.1f} | {taken / args.size * 1e6:.2f} | {load_now()} |")
        print()
    points = iter(pool)
    try:
        with psycopg.connect(url, autocommit=True) as connection:
            # As inside simhash.near: index-only scans in this process, nested loops, no JIT.
            for setting in (
                "enable_seqscan = off",
                "enable_bitmapscan = off",
                "enable_hashjoin = off",
                "enable_mergejoin = off",
                "max_parallel_workers_per_gather = 0",
                "jit = off",
            ):
                connection.execute("SET " + setting)
            if args.prewarm:
                connection.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
                for layout in layouts:
                    for name in layout.index_names():
                        connection.execute("SELECT pg_prewarm(%s::regclass)", [f"simhash.{name}"])
                print(f"prewarmed: {connection.execute('SHOW shared_buffers').fetchone()[0]} of shared_buffers")
            heap = connection.execute("SELECT pg_relation_size('simhash.documents')").fetchone()[0]
            print(f"heap: {heap / args.size:.1f} bytes a document")
            print("| layout | blocks (bits) | index bytes a document | all its indexes |")
            print("|---|---|--:|--:|")
            for layout in layouts:
                size = index_bytes(connection, layout)
                print(
                    f"| {layout.name} | {'/'.join(map(str, layout.widths))} | {size / args.size:.1f} | "
                    f"{size / 2**20:,.0f} MiB |"
                )
            print()

            base: dict[int, float] = {}
            print(
                "| k | layout | radii | probes a query | entries read a query | statement p50 | statement p99 | "
                "p50 ratio to four16 | with round trip p50 | answers checked | load |"
            )
            print("|---|---|---|--:|--:|--:|--:|--:|--:|---|---|")
            for k in distances:
                plans = {layout.name: radii(layout, k, args.size) for layout in layouts}
                usable = [
                    layout
                    for layout in layouts
                    if sum(ball(w, t) for w, t in zip(layout.widths, plans[layout.name]) if t >= 0) <= 20_000
                ]
                counting = {layout.name: [next(points) for _ in range(args.queries)] for layout in usable}
                timing = {layout.name: [next(points) for _ in range(args.queries)] for layout in usable}
                entries = {layout.name: [] for layout in usable}
                statement_ms = {layout.name: [] for layout in usable}
                trip_ms = {layout.name: [] for layout in usable}
                wrong = {layout.name: 0 for layout in usable}
                checked = {layout.name: 0 for layout in usable}
                for i in range(args.queries):
                    for layout in usable:
                        plan = plans[layout.name]
                        sql, parameters = statement(layout, plan, counting[layout.name][i], k, filtered=False)
                        entries[layout.name].append(connection.execute(sql, parameters).fetchone()[0])
                for i in range(args.queries):
                    for layout in usable:
                        plan = plans[layout.name]
                        point = timing[layout.name][i]
                        sql, parameters = statement(layout, plan, point, k, filtered=True)
                        statement_ms[layout.name].append(execution_ms(connection, sql, parameters))
                        # The round trip on the counting points (measured once already: warmer caches).
                        trip = counting[layout.name][i]
                        sql, parameters = statement(layout, plan, trip, k, filtered=True)
                        trip_ms[layout.name].append(round_trip_ms(connection, sql, parameters))
                        if i < args.checked:
                            found = {row[0] for row in connection.execute(sql, parameters)}
                            checked[layout.name] += 1
                            wrong[layout.name] += found != brute_force(stored, trip, k)
                # Pages each search touches (EXPLAIN BUFFERS: hits in shared_buffers, reads from the
                # kernel), on random points of their own (no planted copies: the same pages otherwise).
                pages: dict[str, list[tuple[int, int]]] = {layout.name: [] for layout in usable}
                for point in rng.integers(0, 2**64, size=20, dtype=np.uint64):
                    for layout in usable:
                        sql, parameters = statement(layout, plans[layout.name], int(point), k, filtered=True)
                        plan_json = connection.execute(
                            "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) " + sql, parameters
                        ).fetchone()[0][0]["Plan"]
                        pages[layout.name].append((plan_json["Shared Hit Blocks"], plan_json["Shared Read Blocks"]))
                for layout in usable:
                    name = layout.name
                    plan = plans[name]
                    hits = statistics.mean(h for h, _ in pages[name])
                    reads = statistics.mean(r for _, r in pages[name])
                    print(f"  k={k} {name}: {hits:,.0f} buffer hits and {reads:,.0f} reads a query", flush=True)
                for layout in usable:
                    name = layout.name
                    plan = plans[name]
                    p50 = statistics.median(statement_ms[name])
                    base.setdefault(k, p50)
                    probes = sum(ball(w, t) for w, t in zip(layout.widths, plan) if t >= 0)
                    print(
                        f"| {k} | {name} | {plan} | {probes:,} | {statistics.mean(entries[name]):,.0f} | "
                        f"{p50:.3f} ms | {percentile(statement_ms[name], 99):.3f} ms | {p50 / base[k]:.2f}x | "
                        f"{statistics.median(trip_ms[name]):.3f} ms | {checked[name] - wrong[name]}/{checked[name]} "
                        f"equal to brute force | {load_now()} |",
                        flush=True,
                    )
            print()

            # near_many-style batches at k = 3, the layouts and shapes alternating batch by batch, each
            # batch of query points of its own: "join" is near_many's (query points joined to the masks,
            # a nested loop into the index), "any" one array of every probe a block makes.
            k = 3
            print(
                f"| near_many-style batches of {args.batch:,}, k = {k} | shape | radii | batch p50 | queries/s | "
                "ratio to four16 join | answers checked | load |"
            )
            print("|---|---|---|--:|--:|--:|---|---|")
            shapes = {"join": batch_statement, "any": batch_any_statement}
            combos = [(layout, shape) for layout in layouts for shape in shapes]
            rounds = args.batches * len(layouts) // len(combos)
            batch_ms: dict[tuple[str, str], list[float]] = {(a.name, b): [] for a, b in combos}
            batch_wrong = {(a.name, b): 0 for a, b in combos}
            for n in range(rounds):
                for j, (layout, shape) in enumerate(combos):
                    start = (n * len(combos) + j) * args.batch
                    batch = batch_pool[start : start + args.batch]
                    sql, parameters = shapes[shape](layout, radii(layout, k, args.size), batch, k)
                    connection.execute(f"SET enable_hashjoin = {'on' if shape == 'any' else 'off'}")
                    started = time.perf_counter()
                    rows = connection.execute(sql, parameters).fetchall()
                    batch_ms[layout.name, shape].append((time.perf_counter() - started) * 1e3)
                    if n == 0:
                        got: dict[int, set[int]] = {}
                        for row in rows:
                            got.setdefault(row[0], set()).add(row[1])
                        for i, point in enumerate(batch[: args.checked], start=1):
                            batch_wrong[layout.name, shape] += got.get(i, set()) != brute_force(stored, point, k)
            connection.execute("SET enable_hashjoin = off")
            base_batch = statistics.median(batch_ms[FOUR16.name, "join"])
            for layout, shape in combos:
                p50 = statistics.median(batch_ms[layout.name, shape])
                print(
                    f"| {layout.name} | {shape} | {radii(layout, k, args.size)} | {p50:.1f} ms | "
                    f"{args.batch / p50 * 1e3:,.0f} | {base_batch / p50:.2f}x | "
                    f"{args.checked - batch_wrong[layout.name, shape]}/{args.checked} equal to brute force | "
                    f"{load_now()} |"
                )
    finally:
        if not args.keep:
            admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    print(f"\nend: load {load_now()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


if __name__ == "__main__":
    main()
