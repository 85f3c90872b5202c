"""Peak memory of ``simhash-store add``: one very large text file, and a long JSONL stream with broken lines.

Each case runs the real CLI (``simhash-store add ... --quiet``) as a separate process,
under ``/usr/bin/time`` (its maximum RSS is that of the largest single process), while a
thread samples the whole process tree with psutil: the sum of RSS (counts pages shared by
the forked workers once per process: an upper bound) and the sum of PSS (shared pages
divided among their users: what the tree really holds). Cases:

* **baseline**: one small law (a few KB), and a clean JSONL of 1,000 paragraphs;
* **large file**: a single UTF-8 text file of ``--sizes-mb`` MB, made by concatenating
  the shared corpus (laws, law revisions, Wikipedia paragraphs) over and over, written
  to a temporary directory (never the repository);
* **broken JSONL**: about ``--records`` records (law paragraphs and Wikipedia
  paragraphs) of which every ``--break-every``-th line is broken in one of several
  ways (truncated JSON, no key, no text, text not a string, not an object, invalid
  UTF-8). The add must report each broken line by number on stderr, exit with status
  1, and store every good record (checked key by key, and the fingerprints of a sample
  recomputed).

    python benchmarks/memory.py --sizes-mb 20 50     # today
    python benchmarks/memory.py --sizes-mb 200       # once fingerprinting counts tokens chunk by chunk

Each case gets a fresh database on ``--admin-url``, dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from reliability_common import (
    DEFAULT_ADMIN_URL,
    TreeMemory,
    corpus_documents,
    fresh_database,
    load_now,
    machine,
    markdown_table,
    mib,
    server_version,
)
from shared_corpus import CORPUS

FAILED_LINE = re.compile(r"^failed: (?P<name>.+):(?P<line>\d+): (?P<reason>[^(]+?)(?: \((?P<detail>.*)\))?$")


@dataclass
class Run:
    case: str
    input_size: int
    code: int
    seconds: float
    rss_sum: int
    pss_sum: int
    rss_largest: int
    time_max_rss: int
    processes: int
    stdout: str
    stderr: str
    checks: str = ""


def run_add(case: str, url: str, arguments: list[str], input_size: int, workdir: Path) -> Run:
    """``simhash-store add`` under /usr/bin/time, its process tree sampled until it exits."""
    time_file = workdir / "time.txt"
    command = [sys.executable, "-m", "simhash_store.cli", "add", *arguments, "--quiet"]
    if shutil.which("time") or Path("/usr/bin/time").exists():
        command = ["/usr/bin/time", "-f", "%M", "-o", str(time_file), *command]
    environment = dict(os.environ, SIMHASH_STORE_URL=url)
    out_file, err_file = workdir / "stdout.txt", workdir / "stderr.txt"
    started = time.perf_counter()
    with open(out_file, "wb") as out, open(err_file, "wb") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=environment)
        with TreeMemory(process.pid) as sampler:
            code = process.wait()
    seconds = time.perf_counter() - started
    time_max = int(time_file.read_text().split()[-1]) * 1024 if time_file.exists() else 0
    peak = sampler.peak
    return Run(
        case,
        input_size,
        code,
        seconds,
        peak.rss_sum,
        peak.pss_sum,
        peak.rss_largest,
        time_max,
        peak.processes,
        out_file.read_text(errors="replace"),
        err_file.read_text(errors="replace"),
    )


def stored(url: str) -> dict[str, tuple[int, int | None]]:
    with psycopg.connect(url) as connection:
        return {
            key: (fp, length)
            for key, fp, length in connection.execute("SELECT key, fingerprint, length FROM simhash.documents")
        }


# ------------------------------------------------------------------ inputs


def corpus_texts() -> list[str]:
    texts = [text for _, text in corpus_documents()]
    texts += [path.read_text(encoding="utf-8") for path in sorted((CORPUS / "zh-law-revisions").glob("*/*.txt"))]
    return texts


def write_large_text(path: Path, megabytes: float, texts: list[str]) -> int:
    """Corpus texts concatenated, over and over, up to the size; bytes written."""
    target, written = int(megabytes * 1e6), 0
    with open(path, "wb") as handle:
        while written < target:
            for text in texts:
                data = (text.strip() + "\n\n").encode("utf-8")
                handle.write(data)
                written += len(data)
                if written >= target:
                    break
    return written


def paragraphs(texts: list[str]) -> list[str]:
    """Paragraphs with at least 20 characters of Chinese text: each one has words to fingerprint."""
    found = []
    for text in texts:
        for line in text.splitlines():
            line = line.strip().lstrip("#").strip()
            if len(re.findall(r"[\u4e00-\u9fff]", line)) >= 20:
                found.append(line)
    return found


BREAKAGES = [
    ("truncated JSON", lambda key, text: json.dumps({"key": key, "text": text}, ensure_ascii=False)[: 20 + len(key)]),
    ("no key field", lambda key, text: json.dumps({"id": key, "text": text}, ensure_ascii=False)),
    ("no text field", lambda key, text: json.dumps({"key": key, "body": text}, ensure_ascii=False)),
    ("text not a string", lambda key, text: json.dumps({"key": key, "text": 42})),
    ("a JSON array", lambda key, text: json.dumps([key, text], ensure_ascii=False)),
    ("a JSON string", lambda key, text: json.dumps(text, ensure_ascii=False)),
    ("a JSON number", lambda key, text: "12345"),
    ("null", lambda key, text: "null"),
    ("invalid UTF-8", lambda key, text: json.dumps({"key": key, "text": text[:10] + "\udcff"}, ensure_ascii=False)),
]


def write_broken_jsonl(path: Path, records: int, break_every: int, texts: list[str], seed: int):
    """A JSONL file with every ``break_every``-th line broken; returns (good records, broken line numbers by kind)."""
    rng = random.Random(seed)
    pool = paragraphs(texts)
    good: dict[str, str] = {}
    broken: dict[int, str] = {}
    number = 0
    with open(path, "wb") as handle:
        for index in range(records):
            number += 1
            key, text = f"record/{index:06d}", pool[rng.randrange(len(pool))]
            if break_every and index % break_every == break_every - 1:
                kind, make = BREAKAGES[(index // break_every) % len(BREAKAGES)]
                line = make(key, text).encode("utf-8", "surrogateescape")  # \udcff becomes the byte 0xff
                broken[number] = kind
            else:
                line = json.dumps({"key": key, "text": text}, ensure_ascii=False).encode("utf-8")
                good[key] = text
            handle.write(line + b"\n")
            if index % 997 == 996:  # blank lines are not records and not errors
                handle.write(b"\n")
                number += 1
    return good, broken


# ------------------------------------------------------------------ checks


def check_clean(run: Run, url: str, expected: dict[str, str], sample: int) -> str:
    """Exit 0, nothing on stderr, every record stored, a sample of fingerprints right."""
    problems = []
    if run.code != 0:
        problems.append(f"exit status {run.code}")
    if run.stderr.strip():
        problems.append(f"stderr: {run.stderr.strip()[:300]}")
    problems += check_stored(url, expected, sample)
    return "; ".join(problems) or f"exit 0, all {len(expected):,} stored, fingerprints right"


def check_stored(url: str, expected: dict[str, str], sample: int) -> list[str]:
    from simhash_store import fingerprint
    from simhash_store.bits import from_signed

    rows = stored(url)
    problems = []
    missing = [key for key in expected if key not in rows]
    extra = [key for key in rows if key not in expected]
    if missing or extra:
        problems.append(f"{len(missing)} records missing, {len(extra)} unexpected (e.g. {(missing or extra)[:3]})")
    keys = random.Random(2).sample(sorted(expected), min(sample, len(expected)))
    wrong = [key for key in keys if key in rows and from_signed(rows[key][0]) != fingerprint(expected[key])]
    if wrong:
        problems.append(f"{len(wrong)} of {len(keys)} sampled fingerprints differ")
    return problems


def check_broken(run: Run, url: str, name: str, good: dict[str, str], broken: dict[int, str], sample: int) -> str:
    reported: dict[int, str] = {}
    other_lines = []
    for line in run.stderr.splitlines():
        match = FAILED_LINE.match(line)
        if match and match["name"] == name:
            reported[int(match["line"])] = match["reason"]
        elif line.strip():
            other_lines.append(line)
    problems = []
    if run.code != 1:
        problems.append(f"exit status {run.code}, not 1")
    if set(reported) != set(broken):
        problems.append(
            f"reported lines differ: {len(set(broken) - set(reported))} broken lines not reported, "
            f"{len(set(reported) - set(broken))} good lines reported"
        )
    if other_lines:
        problems.append(f"{len(other_lines)} other stderr lines, e.g. {other_lines[0][:200]!r}")
    problems += check_stored(url, good, sample)
    reasons = sorted(set(reported.values()))
    return "; ".join(problems) or (
        f"exit 1; all {len(broken):,} broken lines reported by number ({', '.join(reasons)}), none other; "
        f"all {len(good):,} good records stored, sampled fingerprints right"
    )


# ------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes-mb",
        type=float,
        nargs="*",
        default=[20, 50],
        help="sizes of the single large text file (200 once fingerprinting works chunk by chunk)",
    )
    parser.add_argument("--records", type=int, default=50_000, help="lines of the broken JSONL stream")
    parser.add_argument("--break-every", type=int, default=97, help="every n-th line is broken")
    parser.add_argument("--sample", type=int, default=100, help="stored records whose fingerprint is recomputed")
    parser.add_argument(
        "--admin-url", default=DEFAULT_ADMIN_URL, help="a server where the script may create and drop databases"
    )
    parser.add_argument("--database", default="simhash_memory")
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args()

    print(f"machine: {machine()}")
    print(f"server: PostgreSQL {server_version(args.admin_url)} at {args.admin_url}")
    print(f"load at start: {load_now()}", flush=True)
    head = subprocess.run(
        ["git", "log", "-1", "--format=%h %s", "--", "simhash_store/fingerprint.py"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout.strip()
    print(f"fingerprint.py at: {head}", flush=True)
    texts = corpus_texts()
    runs: list[tuple[Run, str]] = []
    with tempfile.TemporaryDirectory(prefix="simhash-memory-") as temporary:
        workdir = Path(temporary)

        def case(name: str, arguments: list[str], size: int, check) -> None:
            with fresh_database(args.admin_url, args.database) as url:
                run = run_add(name, url, arguments, size, workdir)
                run.checks = check(run, url)
            runs.append((run, load_now()))
            print(f"{name}: peak PSS {mib(run.pss_sum)}, {run.seconds:.1f} s, {run.checks}", flush=True)

        small = min(
            (p for p in (CORPUS / "zh-laws").glob("*.txt") if p.stat().st_size >= 4000), key=lambda p: p.stat().st_size
        )
        case(
            "baseline: one small law file",
            [str(small)],
            small.stat().st_size,
            lambda run, url: check_clean(run, url, {str(small): small.read_text(encoding="utf-8")}, 1),
        )

        clean_path = workdir / "clean.jsonl"
        clean, _ = write_broken_jsonl(clean_path, 1000, 0, texts, args.seed)
        case(
            "baseline: clean JSONL, 1,000 records",
            ["--jsonl", str(clean_path)],
            clean_path.stat().st_size,
            lambda run, url: check_clean(run, url, clean, args.sample),
        )

        broken_path = workdir / "broken.jsonl"
        good, broken = write_broken_jsonl(broken_path, args.records, args.break_every, texts, args.seed)
        case(
            f"JSONL, {args.records:,} lines, {len(broken):,} broken",
            ["--jsonl", str(broken_path)],
            broken_path.stat().st_size,
            lambda run, url: check_broken(run, url, str(broken_path), good, broken, args.sample),
        )
        broken_path.unlink()

        for megabytes in args.sizes_mb:
            path = workdir / "large.txt"
            size = write_large_text(path, megabytes, texts)
            characters = len(path.read_text(encoding="utf-8"))

            def check_large(run: Run, url: str, path=path, characters=characters) -> str:
                rows = stored(url)
                if run.code != 0 or list(rows) != [str(path)] or rows[str(path)][1] != characters:
                    return (
                        f"exit {run.code}, stored {[(k, v[1]) for k, v in rows.items()]}, stderr {run.stderr[-300:]!r}"
                    )
                return f"exit 0, stored (1 row, {characters:,} characters)"

            case(f"one text file of {size / 1e6:.0f} MB", [str(path)], size, check_large)
            path.unlink()

    header = [
        "case",
        "input",
        "peak PSS, tree",
        "peak RSS sum, tree",
        "largest process (sampled / time -v)",
        "processes",
        "time",
        "result",
        "load after",
    ]
    rows = [
        [
            run.case,
            f"{run.input_size / 1e6:,.2f} MB",
            mib(run.pss_sum),
            mib(run.rss_sum),
            f"{mib(run.rss_largest)} / {mib(run.time_max_rss)}",
            str(run.processes),
            f"{run.seconds:.1f} s",
            run.checks,
            load,
        ]
        for run, load in runs
    ]
    print()
    print(markdown_table(header, rows))
    print(f"\n- load at end: {load_now()}")


if __name__ == "__main__":
    main()
