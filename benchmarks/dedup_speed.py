"""`simhash-store dedup` against `add --jsonl` of the same input, and what dedup removes, in one run.

Input: the 1,104 zh-wiki paragraphs, each followed later by one variant of itself (the
kinds of benchmarks/variants.py in turn, light and heavy), on a variants seed that was
not used to choose the scheme (the quality tables use the empty seed). Each command runs
in a fresh database, alternating (add first in even runs, dedup first in odd ones), five
times; the medians are compared, and so is the CPU time of each command with its worker
processes (not the server's), which a shared machine's load disturbs less than the wall time.

Checks: every original kept; the share of light (and heavy) variants removed at the
default k; and nothing removed that shares under 20% of its 5-character shingles with the
representative it was removed for.

    python benchmarks/dedup_speed.py                  # the machine's PostgreSQL at 127.0.0.1
    python benchmarks/dedup_speed.py --seed holdout-2 # other variants
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simhash_store.variants import HEAVY, KINDS, LIGHT, make_variant  # noqa: E402

from shared_corpus import jaccard, load_wiki, shingles  # noqa: E402

UNRELATED_BELOW = 0.20
TARGET_RATIO = 1.1
TARGET_LIGHT_REMOVED = 0.95


def make_input(path: Path, seed: str) -> dict[str, tuple[str, str | None]]:
    """Write the JSONL; returns key -> (text, kind of variant or None for an original)."""
    documents = load_wiki()
    kinds = list(KINDS)
    records: dict[str, tuple[str, str | None]] = {}
    lines = []
    for document in documents:
        records[document.key] = (document.text, None)
        lines.append({"key": document.key, "text": document.text, "source": "wiki"})
    for n, document in enumerate(documents):
        kind = kinds[n % len(kinds)]
        donor = documents[(n + 1) % len(documents)].text
        key = f"{document.key}~{kind}"
        text = make_variant(kind, document.key, document.text, donor, seed)
        records[key] = (text, kind)
        lines.append({"key": key, "text": text, "source": "variant"})
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return records


def run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one command (CPU: the command and its workers, which it waits for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "simhash_store.cli", *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"simhash-store {' '.join(args[:2])} failed ({result.returncode}): {result.stderr[-2000:]}")
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--admin-url", default="postgresql://root@127.0.0.1:5432/postgres")
    parser.add_argument(
        "--seed", default="holdout-1", help="variants seed (not the empty one the scheme was chosen on)"
    )
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()

    import psycopg

    scratch = Path(tempfile.mkdtemp(prefix="simhash-dedup-bench-"))
    source = scratch / "input.jsonl"
    records = make_input(source, options.seed)
    databases: list[str] = []

    def fresh_store() -> dict[str, str]:
        name = f"simhash_dedup_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(options.admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        databases.append(name)
        return {**os.environ, "SIMHASH_STORE_URL": options.admin_url.rsplit("/", 1)[0] + f"/{name}"}

    add_times, dedup_times, loads = [], [], []
    try:
        for n in range(options.runs):
            output = scratch / f"annotated-{n}.jsonl"
            commands = [
                (add_times, ["add", "--jsonl", str(source), "--quiet"]),
                (dedup_times, ["dedup", str(source), "--annotate", "-o", str(output), "--quiet"]),
            ]
            for times, args in commands[:: 1 if n % 2 == 0 else -1]:
                times.append(run(args, fresh_store()))
            loads.append(os.getloadavg()[0])
        annotated = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    finally:
        for name in databases:
            with psycopg.connect(options.admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        for path in scratch.iterdir():
            path.unlink()
        scratch.rmdir()

    originals_kept = sum(1 for r in annotated if records[r["key"]][1] is None and r["duplicate_of"] is None)
    originals = sum(1 for kind in (v[1] for v in records.values()) if kind is None)
    removed_by_kind: dict[str, list[bool]] = {kind: [] for kind in KINDS}
    unrelated_removed = []
    for row in annotated:
        text, kind = records[row["key"]]
        if kind is not None:
            removed_by_kind[kind].append(row["duplicate_of"] is not None)
        if row["duplicate_of"] is not None:
            overlap = jaccard(shingles(text), shingles(records[row["duplicate_of"]][0]))
            if overlap < UNRELATED_BELOW:
                unrelated_removed.append((row["key"], row["duplicate_of"], overlap))
    light = [x for kind in LIGHT for x in removed_by_kind[kind]]
    heavy = [x for kind in HEAVY for x in removed_by_kind[kind]]

    load = os.getloadavg()
    print(
        f"\nmachine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"PostgreSQL at {options.admin_url.split('@')[-1]}; {len(records):,} records; variants seed {options.seed!r}"
    )
    print(f"1-minute load average after each run: {' '.join(f'{load:.1f}' for load in loads)}")
    print("| measured | seconds (median) | baseline (same run) | seconds (median) | ratio | target |")
    print("|---|---:|---|---:|---:|---|")
    for what, column in (("wall", 0), ("CPU", 1)):
        add_median = statistics.median(t[column] for t in add_times)
        dedup_median = statistics.median(t[column] for t in dedup_times)
        print(
            f"| dedup --annotate, {what} | {dedup_median:.2f} | add --jsonl, {what} | {add_median:.2f} | "
            f"{dedup_median / add_median:.2f} | {f'<= {TARGET_RATIO}' if column == 0 else '-'} |"
        )
    ratios = sorted(d[0] / a[0] for a, d in zip(add_times, dedup_times))
    print(
        f"| dedup / add, wall, each run | {' '.join(f'{r:.2f}' for r in ratios)} | | | median {statistics.median(ratios):.2f} | |"
    )
    print()
    print("| outcome | value | target |")
    print("|---|---:|---|")
    print(f"| originals kept | {originals_kept} of {originals} | all |")
    for row in annotated:  # an original removed is a near-duplicate inside the corpus itself
        if records[row["key"]][1] is None and row["duplicate_of"] is not None:
            overlap = jaccard(shingles(records[row["key"]][0]), shingles(records[row["duplicate_of"]][0]))
            print(
                f"|   removed: {row['key']} ~ {row['duplicate_of']} ({row['distance']} bits, "
                f"{overlap:.0%} of shingles shared) | | |"
            )
    print(
        f"| light variants removed | {sum(light) / len(light):.3f} ({sum(light)} of {len(light)}) | >= {TARGET_LIGHT_REMOVED} |"
    )
    print(f"| heavy variants removed | {sum(heavy) / len(heavy):.3f} ({sum(heavy)} of {len(heavy)}) | - |")
    for kind in KINDS:
        flags = removed_by_kind[kind]
        print(f"|   {kind} | {sum(flags) / len(flags):.3f} ({sum(flags)} of {len(flags)}) | |")
    print(f"| removed with < 20% shingles shared with the representative | {len(unrelated_removed)} | 0 |")
    for key, representative, overlap in unrelated_removed[:10]:
        print(f"|   {key} ~ {representative} | {overlap:.2f} | |")


if __name__ == "__main__":
    main()
