"""The real Chinese text shipped in tests/data (sources and licences in its README)."""

from __future__ import annotations

import csv
import json
import random
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # no newline translation


@cache
def laws() -> tuple[str, ...]:
    """The texts of the 20 shipped laws (4 to 9 KB each), sorted by file name."""
    return tuple(_read(path) for path in sorted((DATA / "laws").glob("*.txt")))


@cache
def paragraph_records() -> tuple[dict, ...]:
    """40 Chinese Wikipedia paragraphs (266 to 980 characters): ``id``, ``title``, ``source``, ``text``."""
    return tuple(json.loads(line) for line in _read(DATA / "wiki-paragraphs.jsonl").splitlines() if line.strip())


def paragraphs() -> list[str]:
    return [record["text"] for record in paragraph_records()]


@cache
def revision_pairs() -> tuple[tuple[str, str, float], ...]:
    """Successive versions of the same law: (older, newer, 5-character-shingle Jaccard), most similar first."""
    with (DATA / "law-revisions" / "pairs.tsv").open(encoding="utf-8", newline="") as table:
        rows = list(csv.DictReader(table, delimiter="\t"))
    return tuple((_read(DATA / r["a"]), _read(DATA / r["b"]), float(r["jaccard_5char"])) for r in rows)


def documents(count: int, long: bool = False) -> list[tuple[str, str]]:
    """``count`` distinct (name, text) documents: the 40 paragraphs, then each paragraph followed
    by 400 characters of a law, or with ``long`` by one to three whole laws (5 to 25 KB, the
    size of a typical law), as many as a test needs."""
    records = paragraph_records()
    result = [(f"wiki-{r['id']}", r["text"]) for r in records[:count]]
    for number in range(len(records), count):
        first = number // len(records)  # with number % 40, tells every document apart
        if long:
            extra = "".join(laws()[(first + i) % len(laws())] for i in range(1 + number % 3))
        else:
            law = laws()[first % len(laws())]
            start = (number * 397) % (len(law) - 400)
            extra = law[start : start + 400]
        result.append((f"mixed-{number:04}", records[number % len(records)]["text"] + "\n" + extra))
    return result


def edit_walks() -> list[dict]:
    """Near-duplicates of every shape dedup decides: random walks of edits over real paragraphs (two
    characters changed a step, so that records drift apart: chains, A near B and B near C with A far
    from C; and records between two representatives at the same distance: ties), shuffled; exact
    copies under other keys; a wordless text; keys that sort apart in C and in other collations."""
    rng = random.Random(3)
    records = []
    for number, base in enumerate(paragraphs()[:12]):
        text = base[:200]
        for step in range(20):
            records.append({"key": f"{'Ww'[step % 2]}-{number}.{step}", "text": text})
            for _ in range(2):
                position = rng.randrange(len(text))
                text = text[:position] + text[rng.randrange(len(text))] + text[position + 1 :]
    rng.shuffle(records)
    records += [{"key": f"copy {r['key']}", "text": r["text"]} for r in records[:30:3]]  # exact copies
    records.insert(17, {"key": "wordless", "text": "。。。！"})
    return records
