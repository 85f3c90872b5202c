"""How much text two documents really share: exact shingle overlap, the ground truth a fingerprint estimates. Pure.

A fingerprint distance is an estimate; ``calibrate`` and ``explain`` check it against the
text itself. The text is normalised as the scheme normalises it, then cut into *units*:
each CJK character (Chinese, Japanese, Korean) is a unit, and so is each word of a script
that separates words with spaces (Latin, Cyrillic, Greek, numbers). Punctuation, symbols
and whitespace are not units, so reflow and punctuation changes do not count. A *shingle*
is a run of 5 consecutive units: 5 characters of Chinese text, 5 words of English text,
both in mixed text. A text of fewer than 5 units is one shingle.

- Jaccard: shared shingles / shingles of either text (1 for the same text).
- Containment of A in B: the share of A's shingles that B has (1 when A is an excerpt of B).

Two texts are near-duplicates in their text when Jaccard >= 0.5, or when one is contained
in the other at >= 0.8 (an article inside a page with more around it). They share little
when Jaccard < 0.2 and neither is mostly inside the other.

>>> o = overlap("第一条 为了保护人民，制定本法。", "第一条：为了保护人民，制定本法！")
>>> o.jaccard, o.near_duplicate
(1.0, True)
>>> overlap("the quick brown fox jumps over the lazy dog", "The quick brown fox jumps over a sleeping cat").jaccard
0.25
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .fingerprint import _CJK, normalize
from .hashing import HASHES

SHINGLE_UNITS = 5
NEAR_DUPLICATE_JACCARD = 0.5
NEAR_DUPLICATE_CONTAINMENT = 0.8
LITTLE_SHARED_JACCARD = 0.2
# Pairs this close in text are the reposts a good k must find (the benchmarks' recall targets).
NEAR_IDENTICAL_JACCARD = 0.8

# One CJK word character, or a run of word characters of the other scripts.
_UNIT = re.compile(f"(?![\\W_])[{_CJK}]|[^\\W_{_CJK}]+")
# Shingles are kept as 64-bit hashes (8 bytes each, however long the words): a collision among
# the shingles of two texts is about as likely as n**2 / 2**64, far below any figure printed.
_HASH = HASHES["xxh3_64"].function


def units(text: str, normalizer: str = "nfkc-casefold") -> list[str]:
    """The text's units after normalisation: CJK characters and the words of spaced scripts, in order.

    >>> units("中国 Beijing, 2024年")
    ['中', '国', 'beijing', '2024', '年']
    """
    return _UNIT.findall(normalize(text, normalizer))


def shingles(text: str, normalizer: str = "nfkc-casefold", size: int = SHINGLE_UNITS) -> np.ndarray:
    """The distinct shingles of a text as sorted 64-bit hashes (empty for a text without units)."""
    if size < 1:
        raise ValueError(f"a shingle has at least 1 unit, not {size}")
    return np.unique(np.fromiter(map(_HASH, _runs(_UNIT.finditer(normalize(text, normalizer)), size)), dtype=np.uint64))


def _runs(found: Iterator[re.Match[str]], size: int) -> Iterator[bytes]:
    """Each run of ``size`` consecutive units (one run of all of them when there are fewer), UTF-8.

    A sliding window, not a list of units: a CJK character as a string of its own takes 80
    bytes, so a long document's units would take many times its size.
    """
    window: deque[str] = deque(maxlen=size)
    for match in found:
        window.append(match.group())
        if len(window) == size:
            # A space cannot occur inside a unit, so runs of different units never join to the same bytes.
            yield " ".join(window).encode()
    if 0 < len(window) < size:
        yield " ".join(window).encode()


@dataclass(frozen=True)
class Overlap:
    """Shingles of two texts and what they share (see the module's docstring)."""

    shingles_a: int
    shingles_b: int
    shared: int

    @property
    def jaccard(self) -> float:
        union = self.shingles_a + self.shingles_b - self.shared
        return self.shared / union if union else 0.0

    @property
    def containment_a(self) -> float:
        """The share of A's shingles that B has."""
        return self.shared / self.shingles_a if self.shingles_a else 0.0

    @property
    def containment_b(self) -> float:
        """The share of B's shingles that A has."""
        return self.shared / self.shingles_b if self.shingles_b else 0.0

    @property
    def near_duplicate(self) -> bool:
        """The texts are near-duplicates: Jaccard >= 0.5, or one is at least 0.8 inside the other."""
        return (
            self.jaccard >= NEAR_DUPLICATE_JACCARD
            or max(self.containment_a, self.containment_b) >= NEAR_DUPLICATE_CONTAINMENT
        )

    @property
    def shares_little(self) -> bool:
        """The texts share little: Jaccard < 0.2 and neither is mostly inside the other."""
        return self.jaccard < LITTLE_SHARED_JACCARD and not self.near_duplicate

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "jaccard": round(self.jaccard, 4),
            "containment_a": round(self.containment_a, 4),
            "containment_b": round(self.containment_b, 4),
            "near_duplicate": self.near_duplicate,
        }


def overlap_of(shingles_a: np.ndarray, shingles_b: np.ndarray) -> Overlap:
    """The overlap of two texts from their :func:`shingles`."""
    shared = len(np.intersect1d(shingles_a, shingles_b, assume_unique=True))
    return Overlap(len(shingles_a), len(shingles_b), shared)


def overlap(text_a: str, text_b: str, normalizer: str = "nfkc-casefold") -> Overlap:
    """The shingle overlap of two texts, normalised with ``normalizer`` (the scheme's)."""
    return overlap_of(shingles(text_a, normalizer), shingles(text_b, normalizer))


__all__ = [
    "LITTLE_SHARED_JACCARD",
    "NEAR_IDENTICAL_JACCARD",
    "NEAR_DUPLICATE_CONTAINMENT",
    "NEAR_DUPLICATE_JACCARD",
    "SHINGLE_UNITS",
    "Overlap",
    "overlap",
    "overlap_of",
    "shingles",
    "units",
]
