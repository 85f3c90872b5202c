"""The shared Chinese corpus (../shared/corpus relative to the repository root), read for benchmarks.

The corpus is referenced, never copied into the repository. Set SIMHASH_STORE_CORPUS
to read it from elsewhere.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("SIMHASH_STORE_CORPUS", REPOSITORY.parent / "shared" / "corpus"))


@dataclass(frozen=True)
class Document:
    key: str
    collection: str  # "laws" or "wiki"
    text: str


def load_laws() -> list[Document]:
    """The 600 laws and regulations, one document per file, in file-name order."""
    folder = CORPUS / "zh-laws"
    if not folder.is_dir():
        raise SystemExit(f"corpus not found at {folder}; set SIMHASH_STORE_CORPUS")
    return [
        Document(f"laws/{path.stem}", "laws", path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.txt"))
    ]


def load_wiki() -> list[Document]:
    """The 1,104 Chinese Wikipedia paragraphs of CMRC 2018, in file order."""
    path = CORPUS / "zh-wiki" / "cmrc2018-contexts.jsonl"
    with path.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    return [Document(f"wiki/{row['id']}", "wiki", row["text"]) for row in rows]


@dataclass(frozen=True)
class RevisionPair:
    law: str
    older: str
    newer: str
    jaccard: float  # over 5-character shingles, whitespace removed, as pairs.tsv computed it
    older_path: Path
    newer_path: Path


def load_revision_pairs() -> list[RevisionPair]:
    """Consecutive dated versions of the same law: natural near-duplicates of graded similarity."""
    with (CORPUS / "zh-law-revisions" / "pairs.tsv").open(encoding="utf-8") as table:
        rows = list(csv.DictReader(table, delimiter="\t"))
    return [
        RevisionPair(
            law=Path(row["a"]).parent.name,
            older=(CORPUS / row["a"]).read_text(encoding="utf-8"),
            newer=(CORPUS / row["b"]).read_text(encoding="utf-8"),
            jaccard=float(row["jaccard_5char"]),
            older_path=CORPUS / row["a"],
            newer_path=CORPUS / row["b"],
        )
        for row in rows
    ]


_WHITESPACE = re.compile(r"\s+")


def shingles(text: str, width: int = 5) -> frozenset[str]:
    """Overlapping character windows with whitespace removed: the corpus's own similarity measure."""
    flat = _WHITESPACE.sub("", text)
    return frozenset(flat[i : i + width] for i in range(max(len(flat) - width + 1, 1)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
