"""One-file command latency: `simhash-store fingerprint` and `query` against plain jieba, in one run.

The baseline is what a user would try first, a fresh Python that segments the same file:

    python -c "import jieba; jieba.lcut(open(f).read())"

Each command runs --runs times, the commands taking turns (so a busy moment on the machine
hits all of them alike), after one untimed warm-up each. Wall-clock medians are the
figures; CPU seconds (user + system, the process and its children) are shown beside them
because they move less when other jobs share the machine. Targets (issue 11):
`fingerprint` at most 1.15x the baseline, `query` against a running PostgreSQL at most
1.3x, and starting the embedded server, when it is not running yet, under 1.5 s.

    python benchmarks/cli_latency.py                                   # 127.0.0.1:5432 and the embedded server
    python benchmarks/cli_latency.py --file ../shared/corpus/zh-laws/上海市中华鲟保护管理条例.txt
    python benchmarks/cli_latency.py --admin-url '' --runs 5           # embedded server only

The script creates and drops its own database (and a temporary embedded data directory).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE_CODE = "import sys, jieba; jieba.lcut(open(sys.argv[1]).read())"


def simhash_store_command() -> list[str]:
    """The installed console script (what users run), else the module."""
    script = Path(sys.executable).parent / "simhash-store"
    return [str(script)] if script.exists() else [sys.executable, "-m", "simhash_store.cli"]


@dataclass
class Command:
    label: str
    args: list[str]
    env: dict[str, str]
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)

    def run(self, record: bool = True) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = subprocess.run(self.args, env=self.env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.returncode != 0:
            raise SystemExit(f"{self.label} failed ({result.returncode}): {result.stderr[-2000:]}")
        if record:
            self.walls.append(wall)
            self.cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


def take_turns(commands: list[Command], runs: int) -> None:
    for command in commands:
        command.run(record=False)
    for _ in range(runs):
        for command in commands:
            command.run()


def row(command: Command, baseline: Command | None, target: str = "") -> str:
    ratio = f"{command.wall / baseline.wall:.2f}" if baseline else ""
    cpu_ratio = f"{command.cpu / baseline.cpu:.2f}" if baseline else ""
    verdict = ""
    if target and baseline:
        verdict = "met" if command.wall / baseline.wall <= float(target) else "NOT met"
    spread = f"{min(command.walls):.2f}–{max(command.walls):.2f}"
    return (
        f"| {command.label} | {command.wall:.2f} | {spread} | {ratio} | {command.cpu:.2f} | {cpu_ratio} | "
        f"{'≤ ' + target + ': ' + verdict if target else ''} |"
    )


def header() -> str:
    return (
        "| command | wall s (median) | wall s (min–max) | × baseline | CPU s (median) | CPU × baseline | target |\n"
        "|---|--:|--:|--:|--:|--:|---|"
    )


def create_database(admin_url: str) -> tuple[str, str]:
    import psycopg

    name = f"simhash_cli_latency_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = admin_url.rpartition("/")
    return name, f"{base}/{name}"


def drop_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, default=REPO / "examples" / "query" / "library-repost.txt")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--admin-url",
        default="postgresql://root@127.0.0.1:5432/postgres",
        help="a running PostgreSQL to create the test database on ('' to skip)",
    )
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded-server rows")
    options = parser.parse_args()

    tool = simhash_store_command()
    document = str(options.file.resolve())
    env = {key: value for key, value in os.environ.items() if not key.startswith("SIMHASH_STORE_")}
    scratch = Path(tempfile.mkdtemp(prefix="simhash-cli-latency-"))
    print(f"file: {options.file} ({options.file.stat().st_size:,} bytes); {options.runs} runs each, taking turns")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the start; Python {platform.python_version()}"
    )
    print()

    baseline = Command(
        "baseline: python -c 'import jieba; jieba.lcut(open(f).read())'",
        [sys.executable, "-c", BASELINE_CODE, document],
        env,
    )
    fingerprint = Command("simhash-store fingerprint f", [*tool, "fingerprint", document], env)
    commands = [baseline, fingerprint]
    targets = {fingerprint.label: "1.15"}

    database = None
    if options.admin_url:
        database, url = create_database(options.admin_url)
        db_env = {**env, "SIMHASH_STORE_URL": url}
        Command("add", [*tool, "add", str(REPO / "examples" / "corpus")], db_env).run(record=False)
        query = Command("simhash-store query f (PostgreSQL running)", [*tool, "query", document], db_env)
        commands.append(query)
        targets[query.label] = "1.3"

    embedded_rows: list[Command] = []
    holder = None
    try:
        take_turns(commands, options.runs)
        if not options.no_embedded:
            data = scratch / "embedded"
            embedded_env = {**env, "SIMHASH_STORE_DATA_DIR": str(data)}
            Command("add", [*tool, "add", str(REPO / "examples" / "corpus")], embedded_env).run(record=False)
            stopped = Command(
                "simhash-store query f (embedded, not running: starts and stops it)",
                [*tool, "query", document],
                embedded_env,
            )
            take_turns([stopped], options.runs)
            # Another process keeps the embedded server up: the queries join it.
            holder = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys; from simhash_store.config import embedded_url; embedded_url(); "
                    "print('up', flush=True); sys.stdin.read()",
                ],
                env=embedded_env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            if holder.stdout.readline().strip() != "up":
                raise SystemExit("the embedded server did not start")
            running = Command("simhash-store query f (embedded, running)", [*tool, "query", document], embedded_env)
            take_turns([running], options.runs)
            embedded_rows = [running, stopped]
        # The first run after installing builds the dictionary cache.
        cold_env = {**env, "SIMHASH_STORE_CACHE_DIR": str(scratch / "cache")}
        first = Command(
            "simhash-store fingerprint f, first run (empty dictionary cache)",
            [*tool, "fingerprint", document],
            cold_env,
        )
        first.run()
        no_cache = Command(
            "simhash-store fingerprint f, cache turned off (SIMHASH_STORE_CACHE_DIR='')",
            [*tool, "fingerprint", document],
            {**env, "SIMHASH_STORE_CACHE_DIR": ""},
        )
        no_cache.run()
    finally:
        if holder is not None:
            holder.stdin.close()
            holder.wait(timeout=60)
        if database is not None:
            drop_database(options.admin_url, database)
        shutil.rmtree(scratch, ignore_errors=True)

    print(header())
    print(row(baseline, None))
    for command in commands[1:]:
        print(row(command, baseline, targets.get(command.label, "")))
    for command in embedded_rows:
        print(row(command, baseline))
    print(row(first, baseline))
    print(row(no_cache, baseline))
    if embedded_rows:
        running, stopped = embedded_rows
        added = stopped.wall - running.wall
        print()
        print(
            f"starting (and at exit stopping) the embedded server adds {added:.2f} s to a query "
            f"(target < 1.5 s: {'met' if added < 1.5 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
