"""Segments of a document, for containment search ("one article inside another page"). Pure.

A whole-document fingerprint cannot see a short article inside a long page: the page's other
text outweighs it. So a store with segments on also keeps a fingerprint of each *segment* of
every document, and two documents sharing near segments are candidates for containment.

Segments are cut where the content says, not at fixed offsets, so that an article has the
same inner segments on its own and inside a page whatever stands before it (content-defined
chunking over sentences): the text is split into sentences (at 。！？!?；; and line ends), and
a segment ends after a sentence whose hash falls in one bucket out of ``divisor`` (about one
sentence in ``divisor``), or once it holds ``max_units``. Only the first and last segment of an
embedded article differ (they run on into the page's text around it).

A segment's fingerprint (scheme ``seg-v1``, frozen like a fingerprint scheme) is the SimHash of
its 5-unit shingles (:mod:`simhash_store.overlap`: CJK characters and words of spaced
scripts, after the ``nfkc-casefold`` normalisation), each of weight 1: no dictionary, so it
costs a fraction of a document fingerprint, and a segment retyped with other punctuation,
spaces or full-width forms has the same one. Segments under ``min_units`` are left out (a
heading shared by many laws is no evidence of containment).

>>> text = "第一条 为了保护人民，制定本法。第二条 本法适用于全国。" * 3
>>> len(segment_fingerprints(text)) >= 1
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .hashing import HASHES
from .fingerprint import normalize
from .overlap import _UNIT, SHINGLE_UNITS

SEGMENT_SCHEME = "seg-v1"
# About one sentence in DIVISOR ends a segment: measured on Chinese laws and Wikipedia
# (docs/containment.md): segments of about 180 characters on average.
DIVISOR = 6
MAX_UNITS = 1200
MIN_UNITS = 24
PARAGRAPH_UNITS = 0
# The distance within which two segments count as the same text (see docs/containment.md).
DEFAULT_SEGMENT_DISTANCE = 3
MAX_SEGMENT_DISTANCE = 3  # the four 16-bit blocks find every pair within 3 bits with one exact block

# Line ends become sentence ends before normalising (which drops whitespace); NFKC folds the
# full-width 。！？； forms the split looks for into . ! ? ; except 。 itself.
_LINE_END = re.compile("[\n\r\u2028\u2029]+")
_PARAGRAPH = "\ue000"  # a private-use character: line ends stand for it while the text is normalised
_ENDS_ARRAY = np.array(list("。.!?;" + _PARAGRAPH))
_TOKEN = re.compile(f"{_UNIT.pattern}|[。.!?;{_PARAGRAPH}]")
_CHUNK_RANGES = 256  # segments whose bits are unpacked at a time (at most 256 * MAX_UNITS * 64 bytes)
_HASH = HASHES["xxh3_64"].function
_MIX_A = np.uint64(0xFF51AFD7ED558CCD)
_MIX_B = np.uint64(0xC4CEB9FE1A85EC53)


@dataclass(frozen=True)
class Segment:
    """One segment: its number in the document (from 0), its units and its fingerprint."""

    number: int
    units: int
    fingerprint: int


def _mix(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: every input bit reaches every output bit."""
    values = values ^ (values >> np.uint64(33))
    values = values * _MIX_A
    values = values ^ (values >> np.uint64(33))
    values = values * _MIX_B
    return values ^ (values >> np.uint64(33))


def _rotl(values: np.ndarray, shift: int) -> np.ndarray:
    return (values << np.uint64(shift)) | (values >> np.uint64(64 - shift)) if shift % 64 else values


def _units_and_sentences(text: str) -> tuple[np.ndarray, list[int], set[int]]:
    """The text's units, where each sentence that has any starts among them, and which of those
    starts begin a paragraph."""
    tokens = np.array(_TOKEN.findall(normalize(_LINE_END.sub(_PARAGRAPH, text))), dtype=str)
    if not len(tokens):
        return tokens, [], set()
    is_unit = np.char.str_len(tokens) > 1
    is_unit |= ~np.isin(tokens, _ENDS_ARRAY)
    after_end = np.concatenate(([True], ~is_unit[:-1]))
    position = np.cumsum(is_unit) - 1
    starts = position[is_unit & after_end].tolist()
    paragraph_ends = np.nonzero(tokens == _PARAGRAPH)[0]
    # A unit after a paragraph mark starts a paragraph (and a sentence).
    paragraphs = set(position[paragraph_ends].tolist()) if len(paragraph_ends) else set()
    return tokens[is_unit], starts, {p + 1 for p in paragraphs}


def _unit_hashes(found: np.ndarray) -> np.ndarray:
    if not len(found):
        return np.empty(0, dtype=np.uint64)
    distinct, inverse = np.unique(found, return_inverse=True)
    return np.array([_HASH(unit.encode()) for unit in distinct.tolist()], dtype=np.uint64)[inverse.ravel()]


def _shingle_values(hashes: np.ndarray, size: int = SHINGLE_UNITS) -> np.ndarray:
    """One value per run of ``size`` units, starting at each unit with ``size - 1`` after it."""
    count = len(hashes) - size + 1
    combined = hashes[:count].copy()
    for i in range(1, size):
        combined ^= _rotl(hashes[i : i + count], 13 * i)
    return _mix(combined)


def _simhashes(values: np.ndarray, ranges: list[tuple[int, int]]) -> list[int]:
    """SimHash of each (increasing, disjoint, non-empty) range of ``values``, every value of weight 1
    (exact integer bit counts)."""
    fingerprints: list[int] = []
    for first in range(0, len(ranges), _CHUNK_RANGES):
        chunk = ranges[first : first + _CHUNK_RANGES]
        low, high = chunk[0][0], chunk[-1][1]
        bits = np.unpackbits(values[low:high].view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        bits = np.vstack([bits, np.zeros((1, 64), dtype=np.uint8)])  # so that every range end is an index
        edges = np.array([edge - low for bound in chunk for edge in bound])
        sums = np.add.reduceat(bits, edges, axis=0, dtype=np.int32)[::2]
        sizes = np.array([end - begin for begin, end in chunk])
        set_bits = 2 * sums > sizes[:, None]
        fingerprints.extend(np.packbits(set_bits, axis=1, bitorder="little").view("<u8").ravel().tolist())
    return fingerprints


def segment_bounds(
    text: str, divisor: int = DIVISOR, max_units: int = MAX_UNITS
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The hashes of the text's units, and each segment's (start, end) among them (content-defined)."""
    if divisor < 1 or max_units < 1:
        raise ValueError(f"divisor and max_units must be at least 1, not {divisor} and {max_units}")
    found, starts, paragraphs = _units_and_sentences(text)
    hashes = _unit_hashes(found)
    if not len(found):
        return hashes, []
    keys = _mix(np.add.reduceat(hashes, starts)) % np.uint64(divisor)
    bounds: list[tuple[int, int]] = []
    begin = 0
    ends = starts[1:] + [len(found)]
    for end, key in zip(ends, keys.tolist()):
        at_paragraph = PARAGRAPH_UNITS and end in paragraphs and end - begin >= PARAGRAPH_UNITS
        while end - begin > max_units:  # a sentence longer than a segment may be
            bounds.append((begin, begin + max_units))
            begin += max_units
        if key == 0 or at_paragraph or end - begin >= max_units:
            bounds.append((begin, end))
            begin = end
    if begin < len(found):
        bounds.append((begin, len(found)))
    return hashes, bounds


def segments(
    text: str, divisor: int = DIVISOR, max_units: int = MAX_UNITS, min_units: int = MIN_UNITS
) -> list[Segment]:
    """The segments of a text of at least ``min_units`` units, numbered from 0 in order."""
    hashes, bounds = segment_bounds(text, divisor, max_units)
    kept = [(begin, end) for begin, end in bounds if end - begin >= max(min_units, SHINGLE_UNITS)]
    if not kept:
        return []
    # Shingles of the whole text once; a segment's are those that start and end inside it.
    values = _shingle_values(hashes)
    fingerprints = _simhashes(values, [(begin, end - SHINGLE_UNITS + 1) for begin, end in kept])
    return [
        Segment(number, end - begin, value) for number, ((begin, end), value) in enumerate(zip(kept, fingerprints))
    ]


def segment_fingerprints(text: str) -> tuple[int, ...]:
    """The ``seg-v1`` fingerprints of a text's segments, in order (what a store with segments keeps)."""
    return tuple(segment.fingerprint for segment in segments(text))


__all__ = [
    "DEFAULT_SEGMENT_DISTANCE",
    "MAX_SEGMENT_DISTANCE",
    "SEGMENT_SCHEME",
    "Segment",
    "segment_fingerprints",
    "segment_bounds",
    "segments",
]
