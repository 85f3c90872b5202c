"""All pairs at 1M and 10M: ``Store.near_duplicates`` (what ``dups`` runs) and ``Store.pairs`` against
the C++ ``find_all`` of ``simhash-pybind``, measured in the same run on the same fingerprints.

For each size the script creates a database of its own, initialises a store, COPYs random
64-bit fingerprints in (5% of the rows are copies of others with 0-4 bits flipped, so there are
exact and near duplicates), and times, at each ``--distances`` k:

* ``Store.near_duplicates(k)``: the binary COPY out, the numpy search, the keys of what it found;
* ``Store.pairs(k)``;
* ``pairs.near_groups`` alone (no database), with the layout it picks by cost, and with the
  four 16-bit blocks it used before (``--old``; quadratic past about 1M);
* the C++ ``find_all`` on the distinct values (only for k < 8: it needs more blocks than k);

and checks that every method finds the same pairs. The last column is the load average:
the machine is shared, so the ratios against the same-run baseline are what to compare.

    python benchmarks/pairs_speed.py --sizes 1000000                       # a minute or two
    python benchmarks/pairs_speed.py --sizes 1000000 10000000 --old        # the docs' figures
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from simhash_store.config import normalize_url  # noqa: E402
from simhash_store.pairs import _layout, _unique_pairs, near_groups  # noqa: E402
from simhash_store.store import Store  # noqa: E402

from store_speed import DEFAULT_ADMIN_URL, Row, admin_execute, bulk_load, load_now, machine  # noqa: E402


def make_fingerprints(size: int, seed: int) -> np.ndarray:
    """Random fingerprints; 5% overwritten by copies of others with 0-4 bits flipped."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)
    copies = size // 20
    sources = rng.integers(0, size, copies)
    flips = np.zeros(copies, dtype=np.uint64)
    for _ in range(4):
        bit = rng.integers(0, 64, copies).astype(np.uint64)
        flips |= np.where(rng.random(copies) < 0.6, np.uint64(1) << bit, np.uint64(0))
    values[rng.integers(0, size, copies)] = values[sources] ^ flips
    return values


def timed(call, *args):
    started = time.perf_counter()
    result = call(*args)
    return time.perf_counter() - started, result


def bench(size: int, args, rows: list[Row], notes: list[str]) -> None:
    database = f"pairs_bench_{size}"
    admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    admin_execute(args.admin_url, f'CREATE DATABASE "{database}"')
    url = (
        normalize_url(args.admin_url)
        .set(database=database, drivername="postgresql")
        .render_as_string(hide_password=False)
    )
    try:
        fingerprints = make_fingerprints(size, args.seed)
        with Store(url) as store:
            store.init()
        loaded = bulk_load(url, fingerprints)
        distinct = np.unique(fingerprints)
        notes.append(f"{size:,}: {len(distinct):,} distinct values; COPY in and indexes {loaded:.0f} s")
        with Store(url) as store:
            for k in args.distances:
                dups_time, found = timed(store.near_duplicates, k)
                pairs_time, pairs = timed(store.pairs, k)
                numpy_time, grouped = timed(near_groups, fingerprints, k)
                layout = _layout(len(distinct), k)
                distinct_pairs = len(grouped.left)
                baseline, what = None, ""
                if k < 8 and args.cpp_blocks:
                    import simhash  # simhash-pybind: the C++ find_all

                    as_set = set(distinct.tolist())
                    cpp = {blocks: timed(simhash.find_all, as_set, blocks, k) for blocks in args.cpp_blocks}
                    best = min(cpp, key=lambda b: cpp[b][0])
                    baseline, what = cpp[best][0], f"C++ find_all {cpp[best][0]:.2f} s ({best} blocks)"
                    if len(cpp[best][1]) != distinct_pairs:
                        raise AssertionError(f"pairs differ: numpy {distinct_pairs}, C++ {len(cpp[best][1])}")
                    notes.append(f"{size:,} k={k}: find_all " + ", ".join(f"{b} blocks {cpp[b][0]:.2f} s" for b in cpp))
                if args.old:
                    old_time, old = timed(_unique_pairs, distinct, k, 0)
                    if len(old[0]) != distinct_pairs:
                        raise AssertionError(f"pairs differ: new layout {distinct_pairs}, old {len(old[0])}")
                    if baseline is None:
                        baseline, what = old_time, f"four 16-bit blocks {old_time:.2f} s"
                    rows.append(
                        Row(
                            size,
                            f"k={k} pairs.near_groups, four 16-bit blocks (before)",
                            f"{old_time:.2f} s",
                            what,
                            f"{old_time / baseline:.2f}x",
                            "",
                            "",
                            load_now(),
                        )
                    )
                identical = sum(1 for item in found if type(item).__name__ == "IdenticalGroup")
                notes.append(
                    f"{size:,} k={k}: {distinct_pairs:,} pairs of distinct values, {identical:,} identical "
                    f"groups, {len(pairs):,} pairs of documents; layout {layout or 'four 16-bit blocks'}"
                    + (f" ({layout} blocks, exact-match tables)" if layout else "")
                )
                for label, seconds, target in (
                    ("Store.near_duplicates (dups)", dups_time, "<= 1.0x"),
                    ("Store.pairs", pairs_time, ""),
                    ("pairs.near_groups alone", numpy_time, ""),
                ):
                    ratio = f"{seconds / baseline:.2f}x" if baseline else ""
                    met = ("yes" if seconds <= baseline else "no") if baseline and target else ""
                    rows.append(
                        Row(
                            size,
                            f"k={k} {label}",
                            f"{seconds:.2f} s",
                            what,
                            ratio,
                            target if baseline else "",
                            met,
                            load_now(),
                        )
                    )
    finally:
        if not args.keep:
            admin_execute(args.admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--distances", type=int, nargs="+", default=[3])
    parser.add_argument("--cpp-blocks", type=int, nargs="*", default=[4, 5], help="find_all block counts to try")
    parser.add_argument("--old", action="store_true", help="also time the four 16-bit blocks (slow at 10M)")
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    print(machine())
    print("| size | what | measured | baseline (same run) | ratio | target | met | load 1/5/15 |")
    print("|---|---|---|---|---|---|---|---|")
    rows: list[Row] = []
    notes: list[str] = []
    for size in args.sizes:
        bench(size, args, rows, notes)
    print()
    for note in notes:
        print("-", note)


if __name__ == "__main__":
    main()
