"""`simhash-store dedup --ray` against `dedup` on one machine, the commands as the README runs them.

Starts its own Ray cluster (a head and ``--workers`` worker nodes of one CPU each, stopped at the
end), writes the records of ``ray_speed.py`` to a JSONL file, and runs ``dedup --annotate`` on it
into two fresh databases: with ``--ray`` (into an empty store, keep first: the decisions in
memory) and with ``-j`` local processes (the baseline). Prints the times and whether the output
files and the stored clusters are byte for byte the same. Run:

    python benchmarks/ray_cli.py --db postgresql://root@127.0.0.1:5432/postgres --records 50000 --chars 100
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ray_speed import clusters_of, drop_database, fresh_database, records, start_cluster, stop_cluster

COMMAND = str(Path(sys.executable).with_name("simhash-store"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="admin URL of a PostgreSQL server (databases are made and dropped)")
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--chars", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2, help="worker nodes beside the head, one CPU each")
    parser.add_argument("--jobs", type=int, default=2, help="local processes of the one-machine run")
    parser.add_argument("-k", type=int, default=4)
    options = parser.parse_args()
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    source = Path(temp) / "in.jsonl"
    with source.open("w", encoding="utf-8") as lines:
        for record in records(options.records, options.chars):
            lines.write(json.dumps(record, ensure_ascii=False) + "\n")
    databases: list[tuple[str, str]] = []
    try:
        address = start_cluster(options.workers, temp)
        rows = []
        for label, extra in (
            (f"`dedup` on one machine, `-j {options.jobs}` (baseline)", ["-j", str(options.jobs)]),
            (f"`dedup --ray`, {options.workers + 1} Ray CPUs, decisions in memory", ["--ray", address]),
        ):
            databases.append(fresh_database(options.db))
            output = Path(temp) / f"out{len(databases)}.jsonl"
            started = time.perf_counter()
            done = subprocess.run(
                [COMMAND, "--db", databases[-1][1], "dedup", str(source), "--annotate", "-k", str(options.k)]
                + ["-o", str(output), *extra],
                capture_output=True,
                text=True,
            )
            seconds = time.perf_counter() - started
            if done.returncode != 0:
                sys.exit(f"{label}: exit {done.returncode}: {done.stderr[-2000:]}")
            rows.append((label, seconds, output.read_bytes(), clusters_of(databases[-1][1])))
            print(f"{label}: {seconds:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
        baseline = rows[0][1]
        print(f"| dedup --annotate, k = {options.k}, {options.records:,} records | seconds | records/s | ratio |")
        print("|---|--:|--:|--:|")
        for label, seconds, _, _ in rows:
            print(f"| {label} | {seconds:.1f} | {options.records / seconds:,.0f} | {baseline / seconds:.2f}x |")
        print(
            f"output files identical: {rows[0][2] == rows[1][2]}; stored clusters identical: {rows[0][3] == rows[1][3]}"
        )
    finally:
        for name, _ in databases:
            drop_database(options.db, name)
        stop_cluster(temp)


if __name__ == "__main__":
    main()
