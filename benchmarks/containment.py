"""Containment search: an article inside a page where it is 20-50% of the text, found from segments.

Cases from real text (../shared/corpus): an *article* is a run of whole lines of a law (500 to
3,000 characters) or one or two Chinese Wikipedia paragraphs; its *page* is the article with
other real text around it (runs of lines of other laws and other Wikipedia paragraphs, never
used twice), the article 20% to 50% of the page. Negatives are as many articles stored without
their page, and as many pages of other text alone. Every document goes into two stores, one
with segments and one without (the baseline); in the same run:

- quality: the pairs ``Store.containment_pairs`` reports against the truth measured on the texts
  (exact 5-unit shingle containment >= 0.8 of the shorter in the longer, Jaccard < 0.5:
  ``simhash_store.overlap``), and what whole-document SimHash pairs (``Store.pairs``) find at
  k = 3, 6, 11 (the baseline); plus ``Store.query_containment`` with each article;
- space: ``pg_total_relation_size`` of simhash.segments against simhash.documents;
- time: ``simhash_store.ingest.add`` (read, fingerprint, write: what `add` runs) of the same
  documents into an empty store with segments on and off, alternating, median of --runs.

    python benchmarks/containment.py                    # 127.0.0.1:5432, 300 cases
    python benchmarks/containment.py --cases 100 --runs 1

Targets: recall >= 0.90 at precision >= 0.95; segments <= 3x the documents' space; add with
segments <= 1.5x the time without. The script creates and drops its own databases.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from simhash_store import ingest  # noqa: E402
from simhash_store.corpus import Source  # noqa: E402
from simhash_store.overlap import overlap_of, shingles  # noqa: E402
from simhash_store.store import Store  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_ADMIN_URL = "postgresql://root@127.0.0.1:5432/postgres"


def key(kind: str, number: int) -> str:
    """Keys as crawled pages have them (a URL), for a fair share of the documents' space."""
    return f"https://news.example.cn/2026/11/{kind}/{number:04d}.html"


def build_cases(count: int, seed: int) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """Documents by key, and the (article, page) pairs built with the article inside."""
    rng = random.Random(seed)
    laws = [p.read_text(encoding="utf-8") for p in sorted((CORPUS / "zh-laws").glob("*.txt"))]
    wiki = [
        json.loads(line)["text"] for line in (CORPUS / "zh-wiki" / "cmrc2018-contexts.jsonl").open(encoding="utf-8")
    ]
    order = list(range(len(laws)))
    rng.shuffle(order)
    # Separate laws for the articles inside pages, the lone articles and the text around: a lone
    # article is never a piece of an article inside a page by construction.
    article_laws, lone_laws, filler_laws = order[:200], order[200:300], order[300:]
    rng.shuffle(wiki)
    article_wiki, filler_wiki = wiki[:500], wiki[500:]
    filler_runs = []
    for index in filler_laws:
        lines = [line for line in laws[index].split("\n") if line.strip()]
        run: list[str] = []
        for line in lines:
            run.append(line)
            if sum(map(len, run)) >= rng.randint(300, 1500):
                filler_runs.append("\n".join(run))
                run = []
    rng.shuffle(filler_runs)

    def law_run(text: str, low: int, high: int) -> str | None:
        lines = [line for line in text.split("\n") if line.strip()]
        for _ in range(20):
            start = rng.randrange(len(lines))
            run, size = [], 0
            for line in lines[start:]:
                run.append(line)
                size += len(line)
                if size >= low:
                    break
            if low <= size <= high:
                return "\n".join(run)
        return None

    def filler(characters: float) -> str:
        parts, size = [], 0
        while size < characters:
            use_law = filler_runs and (rng.random() < 0.5 or not filler_wiki)
            part = filler_runs.pop() if use_law else filler_wiki.pop()
            parts.append(part)
            size += len(part)
        return "\n".join(parts)

    documents: dict[str, str] = {}
    truth: set[tuple[str, str]] = set()
    made = 0
    while made < 2 * count:
        if made % 3:
            pool = article_laws if made < count else lone_laws
            article = law_run(laws[pool[made % len(pool)]], 500, 3000)
        else:
            article = "\n".join(article_wiki.pop() for _ in range(rng.randint(1, 2)))
        if article is None:
            made += 1 if made % 3 else 0
            continue
        if made < count:
            share = rng.uniform(0.2, 0.5)
            around = len(article) / share - len(article)
            before = rng.uniform(0, around)
            documents[key("article", made)] = article
            documents[key("page", made)] = filler(before) + "\n" + article + "\n" + filler(around - before)
            truth.add((key("article", made), key("page", made)))
        else:
            documents[key("lone-article", made)] = article
            documents[key("other-page", made)] = filler(len(article) * rng.uniform(2, 5))
        made += 1
    return documents, truth


class Truth:
    """Exact containment of pairs of texts, measured once each: the shorter at least 0.8 inside the
    longer (``Overlap.near_duplicate`` by containment). ``jaccard_below``: only if Jaccard is under
    0.5 too (the articles inside pages, which whole-document SimHash cannot see)."""

    def __init__(self, documents: dict[str, str]) -> None:
        self.documents = documents
        self._shingles: dict[str, object] = {}
        self._known: dict[tuple[str, str], tuple[bool, bool]] = {}

    def contained(self, a: str, b: str, jaccard_below: bool = False) -> bool:
        pair = (min(a, b), max(a, b))
        if pair not in self._known:
            for key in pair:
                if key not in self._shingles:
                    self._shingles[key] = shingles(self.documents[key])
            found = overlap_of(self._shingles[pair[0]], self._shingles[pair[1]])  # type: ignore[arg-type]
            self._known[pair] = (max(found.containment_a, found.containment_b) >= 0.8, found.jaccard < 0.5)
        inside, low_jaccard = self._known[pair]
        return inside and (low_jaccard or not jaccard_below)


def recreate(admin_url: str, name: str) -> str:
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + "/" + name


def drop(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def add_all(url: str, documents: dict[str, str], segments: bool, jobs: int) -> tuple[float, float]:
    """Seconds (wall clock, and CPU of this process) for ingest.add of every document into a new
    store (the schema made beforehand)."""
    with Store(url) as store:
        store.init(segments=segments)
        sources = [Source(key, text=text, size=len(text.encode())) for key, text in documents.items()]
        started, cpu = time.perf_counter(), time.process_time()
        summary = ingest.add(store, sources, jobs=jobs)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert summary.added == len(documents), summary
        store.optimize()
    return elapsed, cpu


def sizes(url: str) -> tuple[int, int, int]:
    with psycopg.connect(url) as connection:
        return connection.execute(
            "SELECT pg_total_relation_size('simhash.documents'), pg_total_relation_size('simhash.segments'), "
            "(SELECT count(*) FROM simhash.segments)"
        ).fetchone()


def precision_recall(
    found: set[tuple[str, str]], truth: set[tuple[str, str]], judge: Truth
) -> tuple[float, float, int]:
    """Precision (a pair found is right if one text is at least 0.8 inside the other), recall of the built pairs."""
    right = sum(judge.contained(a, b) for a, b in found)
    unordered = {(min(a, b), max(a, b)) for a, b in found}
    hits = sum((min(a, b), max(a, b)) in unordered for a, b in truth)
    return (right / len(found) if found else 1.0), hits / len(truth), len(found)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--admin-url", default=os.environ.get("SIMHASH_STORE_BENCH_URL", DEFAULT_ADMIN_URL))
    parser.add_argument("--cases", type=int, default=300, help="articles inside pages (and as many negatives)")
    parser.add_argument("--runs", type=int, default=3, help="timed adds with and without segments (median)")
    parser.add_argument("--jobs", type=int, default=1, help="fingerprinting processes of the timed adds")
    parser.add_argument("--seed", type=int, default=20261126)
    args = parser.parse_args()

    documents, truth = build_cases(args.cases, args.seed)
    judge = Truth(documents)
    truth = {pair for pair in truth if judge.contained(*pair, jaccard_below=True)}  # all of them, checked
    characters = sum(map(len, documents.values()))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(
        f"{len(documents)} documents, {characters / len(documents):,.0f} characters on average; "
        f"{len(truth)} articles inside pages (20-50% of the page), {args.cases} lone articles, {args.cases} other pages\n"
    )

    names = {False: "simhash_containment_off", True: "simhash_containment_on"}
    urls = {on: recreate(args.admin_url, name) for on, name in names.items()}
    try:
        times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for _ in range(args.runs):
            for on in (False, True):
                urls[on] = recreate(args.admin_url, names[on])
                times[on].append(add_all(urls[on], documents, on, args.jobs))
        off, on = (statistics.median(t for t, _ in times[x]) for x in (False, True))
        off_cpu, on_cpu = (statistics.median(c for _, c in times[x]) for x in (False, True))
        documents_bytes, _, _ = sizes(urls[False])
        documents_bytes_on, segment_bytes, segment_rows = sizes(urls[True])
        print(
            f"| add (ingest.add, jobs={args.jobs}, median of {args.runs}) | wall s | ratio | CPU s of the process | ratio |"
        )
        print("|---|---:|---:|---:|---:|")
        print(f"| segments off (baseline) | {off:.2f} | 1.00 | {off_cpu:.2f} | 1.00 |")
        print(f"| segments on | {on:.2f} | {on / off:.2f} | {on_cpu:.2f} | {on_cpu / off_cpu:.2f} |\n")
        print("| space (pg_total_relation_size) | bytes | per document | ratio |")
        print("|---|---:|---:|---:|")
        print(
            f"| simhash.documents (baseline) | {documents_bytes_on:,} | {documents_bytes_on / len(documents):,.0f} | 1.00 |"
        )
        print(
            f"| simhash.segments ({segment_rows:,} segments, {segment_rows / len(documents):.1f} a document) | "
            f"{segment_bytes:,} | {segment_bytes / len(documents):,.0f} | {segment_bytes / documents_bytes_on:.2f} |\n"
        )

        print("| method | pairs reported | precision | recall of the articles inside pages |")
        print("|---|---:|---:|---:|")
        with Store(urls[True]) as store:
            for k in (3, 6, 11):
                found = {(p.a, p.b) for p in store.pairs(k)}
                precision, recall, count = precision_recall(found, truth, judge)
                print(f"| whole-document SimHash, k = {k} (baseline) | {count} | {precision:.3f} | {recall:.3f} |")
            for min_score in (0.3, 0.5, 0.7, 0.9):
                reported = store.containment_pairs(min_score=min_score)
                found = {(p.inner, p.outer) for p in reported}
                precision, recall, count = precision_recall(found, truth, judge)
                print(f"| containment_pairs, min_score {min_score} | {count} | {precision:.3f} | {recall:.3f} |")
            direction = sum(1 for p in store.containment_pairs() if (p.inner, p.outer) in truth)
            print(
                f"\ncontainment_pairs (min_score 0.5) names the article as the inner document in {direction} "
                f"of {len(truth)} built pairs"
            )
            started = time.perf_counter()
            hits = found_inside = 0
            articles = sorted(a for a, _ in truth)
            for article in articles:
                matches = store.query_containment(documents[article])
                page = article.replace("article", "page")
                hits += any(m.key == page for m in matches)
                found_inside += any(m.key == page and m.inner == "query" for m in matches)
            elapsed = time.perf_counter() - started
            print(
                f"query_containment with each article: its page found for {hits} of {len(articles)}, "
                f"with the article as the inner text for {found_inside}; {1000 * elapsed / len(articles):.1f} ms a query"
            )
    finally:
        for name in names.values():
            drop(args.admin_url, name)


if __name__ == "__main__":
    main()
