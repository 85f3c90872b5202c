"""What reading records and writing dedup's output cost, this version against a baseline (default: main).

Input: 100,000 JSONL records made from the 1,104 zh-wiki paragraphs (about 1 KB of
Chinese each) with five more fields; the records of the "mixed" input also differ as a
crawl's do (a field missing from the first records, an integer field that later holds
floats, a field that holds numbers, strings and objects). Each measurement is a child
process that reads the input with ``formats.read_records`` (as dedup does) and writes
every record with ``formats.RecordWriter``: the wall time and the child's peak memory
(ru_maxrss) are reported, median of ``--runs``, the baseline measured in the same run,
alternating. The store is left out: it costs the same in both, and far more than this.

The baseline is the code of a git ref, extracted to a temporary directory.

    python benchmarks/output_writers.py                    # against main
    python benchmarks/output_writers.py --records 20000 --baseline-ref HEAD~3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_corpus import REPOSITORY, load_wiki  # noqa: E402

CHILD = """
import sys
from simhash_store import formats
source, output, form = sys.argv[1:4]
writer = formats.open_writer(output, form) if form != "none" else None
failed = 0
for where, record in formats.read_records(source, "jsonl"):
    if writer is not None:
        try:
            writer.write(record)
        except formats.FormatError:
            failed += 1
if writer is not None:
    writer.close()
print(failed)
"""


def make_input(path: Path, count: int, mixed: bool) -> None:
    paragraphs = [document.text for document in load_wiki()]
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(count):
            record = {
                "key": f"doc/{n}",
                "text": paragraphs[n % len(paragraphs)],
                "rank": n,
                "score": n / 7,
                "source": "wiki",
                "tags": ["zh", f"t{n % 10}"],
            }
            if mixed:
                if n >= count // 2:
                    record["kind"] = "news" if n % 2 else "blog"  # missing from the first half
                record["rank"] = n + 0.5 if n % 3 == 0 else n  # integers and floats
                record["extra"] = [n, f"s{n}", {"n": n}][n % 3]  # a number, a string, an object
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


WRAPPER = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
result = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps([time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  result.returncode, result.stdout, result.stderr[-300:]]))
"""


def measure(code: Path, source: Path, output: Path, form: str) -> tuple[float, float, str]:
    """(wall seconds, peak MB, outcome) of one child; a wrapper process of its own reports the
    peak, since a parent's ru_maxrss of children is the largest child it ever had."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    result = subprocess.run(
        [sys.executable, "-c", WRAPPER, sys.executable, "-c", CHILD, str(source), str(output), form],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed, peak, returncode, out, err = json.loads(result.stdout)
    if returncode != 0:
        return elapsed, peak, "error: " + (err.strip().splitlines() or ["?"])[-1][:90]
    failed = int(out)
    return elapsed, peak, f"{failed} records failed" if failed else "ok"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-ref", default="main")
    options = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="simhash-output-bench-"))
    baseline = scratch / "baseline"
    baseline.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPOSITORY), "archive", options.baseline_ref, "simhash_store"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
    versions = {f"baseline ({options.baseline_ref})": baseline, "this version": REPOSITORY}
    inputs = {}
    for mixed in (False, True):
        inputs[mixed] = scratch / f"{'mixed' if mixed else 'uniform'}.jsonl"
        make_input(inputs[mixed], options.records, mixed)
    size = inputs[False].stat().st_size / 1e6
    results: dict[tuple, list] = {}
    try:
        for run in range(options.runs):
            for mixed in (False, True):
                for form in ("none", "jsonl", "csv", "parquet"):
                    order = list(versions.items())
                    for name, code in order if run % 2 == 0 else order[::-1]:
                        output = scratch / f"out.{form}"
                        results.setdefault((mixed, form, name), []).append(measure(code, inputs[mixed], output, form))
                        if output.exists():
                            output.unlink()
    finally:
        for path in sorted(scratch.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        scratch.rmdir()

    load = os.getloadavg()
    print(
        f"\nmachine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{options.records:,} records ({size:.0f} MB of JSONL); median of {options.runs} runs"
    )
    names = list(versions)
    print(f"| input | output | {names[0]}: seconds | peak MB | outcome | {names[1]}: seconds | peak MB | outcome |")
    print("|---|---|---:|---:|---|---:|---:|---|")
    for mixed in (False, True):
        for form in ("none", "jsonl", "csv", "parquet"):
            cells = []
            for name in names:
                runs = results[(mixed, form, name)]
                cells += [
                    f"{statistics.median(r[0] for r in runs):.1f}",
                    f"{statistics.median(r[1] for r in runs):.0f}",
                    runs[-1][2],
                ]
            what = "read only" if form == "none" else form
            print(f"| {'mixed' if mixed else 'uniform'} | {what} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
