"""End-to-end speed of `simhash-store add` and `query`, each beside a baseline measured in the same run.

1. add ../shared/corpus/zh-laws (600 files, 9.7 MB) vs raw single-process jieba.lcut over the same files;
2. a generated corpus of small files: add, then re-add unchanged;
3. query of 1,000 files in one call vs fingerprinting the same files (`simhash-store fingerprint`).

    python benchmarks/ingest_speed.py                       # the machine's PostgreSQL at 127.0.0.1
    python benchmarks/ingest_speed.py --small-files 20000   # a quicker run
    python benchmarks/ingest_speed.py --db embedded         # the embedded server

The database is created and dropped by the script (PostgreSQL URL given with --admin-url).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


def run(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "simhash_store.cli", *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"simhash-store {' '.join(args[:2])} failed ({result.returncode}): {result.stderr[-2000:]}")
    return elapsed


def raw_jieba_seconds(files: list[Path]) -> float:
    """The baseline: a fresh process that loads jieba and runs jieba.lcut over every file, one core."""
    code = (
        "import sys, time, jieba, logging; jieba.setLogLevel(logging.WARNING); "
        "t = time.perf_counter(); jieba.initialize(); "
        "[jieba.lcut(open(p, encoding='utf-8').read()) for p in sys.argv[1:]]; "
        "print(time.perf_counter() - t)"
    )
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *map(str, files)], check=True, capture_output=True)
    return time.perf_counter() - started


def make_small_files(directory: Path, count: int) -> int:
    """Small documents (2 to 6 sentences) drawn from Wikipedia paragraphs; returns total bytes."""
    sentences = []
    with open(CORPUS / "zh-wiki" / "cmrc2018-contexts.jsonl", encoding="utf-8") as handle:
        for line in handle:
            sentences += [s + "。" for s in json.loads(line)["text"].split("。") if len(s) > 8]
    rng = random.Random(7)
    total = 0
    for index in range(count):
        folder = directory / f"{index // 1000:04d}"
        if index % 1000 == 0:
            folder.mkdir(parents=True)
        data = "".join(rng.sample(sentences, rng.randint(2, 6))).encode("utf-8")
        (folder / f"{index:06d}.txt").write_bytes(data)
        total += len(data)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--admin-url", default="postgresql://root@127.0.0.1:5432/postgres")
    parser.add_argument("--db", default=None, help="'embedded' to use the embedded server instead")
    parser.add_argument("--small-files", type=int, default=200_000)
    parser.add_argument("--query-files", type=int, default=1000)
    options = parser.parse_args()

    import psycopg

    scratch = Path(tempfile.mkdtemp(prefix="simhash-ingest-bench-"))
    databases: list[str] = []

    def fresh_store() -> dict[str, str]:
        """Environment for simhash-store pointing at a new, empty store."""
        env = dict(os.environ)
        if options.db == "embedded":
            env.pop("SIMHASH_STORE_URL", None)
            env["SIMHASH_STORE_DATA_DIR"] = str(scratch / f"embedded-{len(databases)}")
            databases.append("")
            return env
        name = f"simhash_ingest_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(options.admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        databases.append(name)
        env["SIMHASH_STORE_URL"] = options.admin_url.rsplit("/", 1)[0] + f"/{name}"
        return env

    rows = []
    try:
        env = fresh_store()
        laws = sorted((CORPUS / "zh-laws").glob("*.txt"))
        megabytes = sum(p.stat().st_size for p in laws) / 1e6
        baseline = raw_jieba_seconds(laws)
        add_laws = run(["add", str(CORPUS / "zh-laws"), "--prefix", "laws/"], env)
        rows.append(
            ("add zh-laws (600 files, %.1f MB)" % megabytes, add_laws, "jieba.lcut, 1 process", baseline, "<= 0.70")
        )
        add_laws_rjieba = run(["add", str(CORPUS / "zh-laws"), "--scheme", "zh-rjieba-v1"], fresh_store())
        rows.append(("  the same with --scheme zh-rjieba-v1", add_laws_rjieba, "jieba.lcut, 1 process", baseline, ""))

        small = scratch / "small"
        small_bytes = make_small_files(small, options.small_files)
        first = run(["add", str(small), "--prefix", "small/", "--quiet"], env)
        again = run(["add", str(small), "--prefix", "small/", "--quiet"], env)
        rows.append(
            (
                f"re-add {options.small_files:,} unchanged small files",
                again,
                f"first add ({small_bytes / 1e6:.0f} MB)",
                first,
                "<= 0.10",
            )
        )

        queries = sorted(small.rglob("*.txt"))[: options.query_files]
        fingerprint_time = run(["fingerprint", *map(str, queries)], env)
        query_time = run(["query", "--json", *map(str, queries)], env)
        rows.append(
            (
                f"query {len(queries):,} files in one call",
                query_time,
                "fingerprint the same files",
                fingerprint_time,
                "< 2.0",
            )
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for name in filter(None, databases):
            with psycopg.connect(options.admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    load = os.getloadavg()
    print(
        f"\nmachine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
        f"database: {'embedded' if options.db == 'embedded' else 'PostgreSQL at ' + options.admin_url.split('@')[-1]}"
    )
    print(
        f"| {'measured':<44} | {'seconds':>8} | {'baseline (same run)':<28} | {'seconds':>8} | {'ratio':>6} | target |"
    )
    print(f"|{'-' * 46}|{'-' * 10}|{'-' * 30}|{'-' * 10}|{'-' * 8}|--------|")
    for name, seconds, baseline_name, baseline_seconds, target in rows:
        ratio = seconds / baseline_seconds
        print(
            f"| {name:<44} | {seconds:8.2f} | {baseline_name:<28} | {baseline_seconds:8.2f} | {ratio:6.2f} | {target} |"
        )


if __name__ == "__main__":
    main()
