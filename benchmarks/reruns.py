"""Reruns of an unchanged crawl against the first run, and which copy each keep policy keeps.

Input: a crawl built from the shared corpus: 1,500 originals (zh-wiki paragraphs, then passages
of 1,000 characters from the zh-laws; one within 11 bits of an earlier one is left out, so the
families are distinct), each with a date; 900 of them reposted
once, dated one to thirty days later, as a crawl finds them: a 【转载】 header with a source
line, a copyright footer, a few words edited, or the text truncated to 70-90% (in turn); all
2,400 records shuffled. The original always carries the earliest date of its family.

Reruns: each command runs as a user runs it (a child process, ``--quiet``) into a fresh
database, then again on the same file; the rerun's wall and CPU time (the command and its
worker processes) against the first run's, median of ``--runs`` pairs. Target: at most 0.2x for ``dedup`` and ``add --jsonl``.

Keep policies: ``dedup --annotate`` of the crawl in a fresh database with ``--keep first``,
``longest`` and ``field:published_at:asc`` (that one also over the crawl written as CSV): in how many families of an original and a repost
that dedup put in one cluster the original is the representative. Target for
``field:published_at:asc``: every such family.

    python benchmarks/reruns.py                      # the machine's PostgreSQL at 127.0.0.1
    python benchmarks/reruns.py --runs 1 --skip-keep
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from simhash_store import fingerprint  # noqa: E402

from dedup_speed import run  # noqa: E402  (wall and CPU seconds of one command)
from shared_corpus import load_laws, load_wiki  # noqa: E402

ORIGINALS = 1500
REPOSTS = 900
TARGET_RATIO = 0.2
K = 11  # the default distance, at which dedup runs here
HEADERS = ["【转载】", "【转帖】来源：", "转自微信公众号 · "]
FOOTERS = [
    "\n（本文来源于网络，版权归原作者所有，如有侵权请联系删除。）",
    "\n责任编辑：王晓 | 本网转载此文出于传递更多信息之目的。",
]


def make_crawl(path: Path, seed: int = 22) -> dict[str, tuple[str, str]]:
    """Write the JSONL; returns key -> (family, "original" or the kind of repost)."""
    rng = random.Random(seed)
    candidates = [document.text for document in load_wiki()]
    for law in load_laws():
        body = law.text.strip()
        for start in range(1000, len(body) - 1000, 3000):
            candidates.append(body[start : start + 1000])
    # Families must be distinct: an original within k of an earlier one (the corpus holds near-identical
    # passages of similar regulations) is left out, so each original is the earliest copy of its cluster.
    texts: list[str] = []
    chosen = np.empty(len(candidates), dtype=np.uint64)
    for text in candidates:
        value = fingerprint(text)
        if value is None or (texts and int(np.bitwise_count(chosen[: len(texts)] ^ np.uint64(value)).min()) <= K):
            continue
        chosen[len(texts)] = value
        texts.append(text)
        if len(texts) == ORIGINALS:
            break
    records, truth = [], {}
    dates = {}
    for number, text in enumerate(texts):
        family = f"doc{number:04d}"
        dates[family] = datetime.date(2024, 1, 1) + datetime.timedelta(days=number % 330)
        records.append({"key": family, "text": text, "published_at": dates[family].isoformat(), "site": "origin"})
        truth[family] = (family, "original")
    for number in rng.sample(range(ORIGINALS), REPOSTS):
        text, family = texts[number], f"doc{number:04d}"
        kind = ("header", "footer", "edit", "truncation")[number % 4]
        if kind == "header":
            repost = rng.choice(HEADERS) + "某某网\n" + text
        elif kind == "footer":
            repost = text + rng.choice(FOOTERS)
        elif kind == "edit":
            repost = text.replace("的", "之", 3).replace("是", "乃", 2)
        else:
            repost = text[: int(len(text) * rng.uniform(0.7, 0.9))]
        later = (
            dates[family] + datetime.timedelta(days=rng.randint(1, 30))
        ).isoformat() + f"T{rng.randint(0, 23):02d}:00:00+08:00"
        # ISO dates compare as text: the repost's date and time sorts after its original's date.
        records.append({"key": f"{family}~{kind}", "text": repost, "published_at": later, "site": "mirror"})
        truth[f"{family}~{kind}"] = (family, kind)
    rng.shuffle(records)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return truth


def write_csv(source: Path, path: Path) -> None:
    """The same crawl as CSV (a header row, the same fields): the keep policy reads any record format."""
    import csv

    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def originals_kept(annotated: list[dict], truth: dict[str, tuple[str, str]]) -> tuple[int, int]:
    """(families whose original represents the cluster it shares with its repost, families sharing one)."""
    rows = {row["key"]: row for row in annotated}
    shared = kept = 0
    for key, (family, kind) in truth.items():
        if kind == "original":
            continue
        original, repost = rows[family], rows[key]
        if original["cluster"] != repost["cluster"]:
            continue  # the repost was not found a near-duplicate of its original: no choice to make
        shared += 1
        kept += original["duplicate_of"] is None
    return kept, shared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--admin-url", default="postgresql://root@127.0.0.1:5432/postgres")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-keep", action="store_true", help="only the reruns")
    options = parser.parse_args()

    import psycopg

    scratch = Path(tempfile.mkdtemp(prefix="simhash-reruns-bench-"))
    source = scratch / "crawl.jsonl"
    truth = make_crawl(source)
    databases: list[str] = []

    def fresh_store() -> dict[str, str]:
        name = f"simhash_reruns_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(options.admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        databases.append(name)
        return {**os.environ, "SIMHASH_STORE_URL": options.admin_url.rsplit("/", 1)[0] + f"/{name}"}

    times: dict[str, list[tuple[tuple[float, float], tuple[float, float]]]] = {"dedup": [], "add --jsonl": []}
    keeps: dict[str, tuple[int, int]] = {}
    loads = []
    try:
        for n in range(options.runs):
            commands = {
                "dedup": ["dedup", str(source), "-o", str(scratch / "out.jsonl"), "--quiet"],
                "add --jsonl": ["add", "--jsonl", str(source), "--quiet"],
            }
            for name in list(commands)[:: 1 if n % 2 == 0 else -1]:
                env = fresh_store()
                first = run(commands[name], env)
                again = run(commands[name], env)
                times[name].append((first, again))
            loads.append(os.getloadavg()[0])
        if not options.skip_keep:
            as_csv = scratch / "crawl.csv"
            write_csv(source, as_csv)
            for policy, given in (
                ("first", source),
                ("longest", source),
                ("field:published_at:asc", source),
                ("field:published_at:asc", as_csv),
            ):
                output = scratch / "annotated.jsonl"
                run(["dedup", str(given), "--keep", policy, "--annotate", "-o", str(output), "--quiet"], fresh_store())
                annotated = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
                keeps[policy if given == source else f"{policy} (the crawl as CSV)"] = originals_kept(annotated, truth)
    finally:
        for name in databases:
            with psycopg.connect(options.admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        for path in scratch.iterdir():
            path.unlink()
        scratch.rmdir()

    load = os.getloadavg()
    print(
        f"\nmachine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{len(truth):,} records ({ORIGINALS:,} originals, {REPOSTS} reposts), medians of {options.runs}"
    )
    print(f"1-minute load average after each round: {' '.join(f'{value:.1f}' for value in loads)}")
    print("| command | first run, s | rerun of the unchanged file, s | ratio | target |")
    print("|---|---:|---:|---:|---|")
    for name, pairs in times.items():
        for what, column in (("wall", 0), ("CPU", 1)):
            first = statistics.median(p[0][column] for p in pairs)
            again = statistics.median(p[1][column] for p in pairs)
            ratio = statistics.median(p[1][column] / p[0][column] for p in pairs)
            verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
            print(f"| {name}, {what} | {first:.1f} | {again:.1f} | {ratio:.2f}x | <= {TARGET_RATIO}x: {verdict} |")
    if keeps:
        print("\n| --keep | originals kept, of families whose repost joined the original's cluster | target |")
        print("|---|---:|---|")
        for policy, (kept, shared) in keeps.items():
            target = (
                ("every family: " + ("met" if kept == shared else "MISSED")) if policy.startswith("field:") else "-"
            )
            print(f"| {policy} | {kept} of {shared} ({kept / shared:.0%}) | {target} |")


if __name__ == "__main__":
    main()
