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

>>> text = "\\n".join(f"第{n}条 为了保护人民的合法权益，制定本法第{n}条。" for n in range(40))
>>> len(segment_fingerprints(text)) >= 1
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .fingerprint import normalize
from .hashing import HASHES
from .overlap import _UNIT, SHINGLE_UNITS

SEGMENT_SCHEME = "seg-v1"
# About one sentence in DIVISOR ends a segment: measured on Chinese laws and Wikipedia
# (docs/containment.md): segments of about 180 characters on average.
DIVISOR = 16
MAX_UNITS = 1200
MIN_UNITS = 48
PARAGRAPH_DIVISOR = 3
LONG_PARAGRAPH = 100
# The distance within which two segments count as the same text (see docs/containment.md).
DEFAULT_SEGMENT_DISTANCE = 3
MAX_SEGMENT_DISTANCE = 3  # the four 16-bit blocks find every pair within 3 bits with one exact block
# The least share of the inner document's segments found in the outer one that containment search
# reports: measured (docs/containment.md), an article that is 20-50% of a page has all but an edge
# segment or two in it; texts that are not one inside the other share few or none.
DEFAULT_MIN_SCORE = 0.5

# Line ends become sentence ends before normalising (which drops whitespace); NFKC folds the
# full-width 。！？； forms the split looks for into . ! ? ; except 。 itself.
_LINE_END = re.compile("[\n\r\u2028\u2029]+")
_PARAGRAPH = "\ue000"  # a private-use character: line ends stand for it while the text is normalised
_ENDS = frozenset("。.!?;" + _PARAGRAPH)
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
    mixed: np.ndarray = values ^ (values >> np.uint64(33))
    return mixed


def _rotl(values: np.ndarray, shift: int) -> np.ndarray:
    return (values << np.uint64(shift)) | (values >> np.uint64(64 - shift)) if shift % 64 else values


def _units_and_sentences(text: str) -> tuple[np.ndarray, list[int], list[int]]:
    """The hashes of the text's units, where each sentence that has any starts among them, and where
    each paragraph starts (0 first)."""
    tokens = _TOKEN.findall(normalize(_LINE_END.sub(_PARAGRAPH, text)))
    distinct = {token: _HASH(token.encode()) for token in set(tokens)}
    hashes: list[int] = []
    starts: list[int] = []
    paragraphs: list[int] = [0]
    in_sentence = False
    for token in tokens:
        if token in _ENDS:
            in_sentence = False
            if token == _PARAGRAPH and hashes and paragraphs[-1] != len(hashes):
                paragraphs.append(len(hashes))
            continue
        if not in_sentence:
            starts.append(len(hashes))
            in_sentence = True
        hashes.append(distinct[token])
    if paragraphs[-1] == len(hashes) and len(paragraphs) > 1:
        paragraphs.pop()
    return np.array(hashes, dtype=np.uint64), starts, paragraphs


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
    hashes, starts, paragraphs = _units_and_sentences(text)
    if not len(hashes):
        return hashes, []
    keys = _mix(np.add.reduceat(hashes, starts)) % np.uint64(divisor)
    paragraph_keys = _mix(np.add.reduceat(hashes, paragraphs)) % np.uint64(PARAGRAPH_DIVISOR) if paragraphs else []
    cut_after = {}  # the end of each paragraph (as a unit index) -> whether a segment ends there
    for i, start in enumerate(paragraphs):
        end = paragraphs[i + 1] if i + 1 < len(paragraphs) else len(hashes)
        following = (paragraphs[i + 2] if i + 2 < len(paragraphs) else len(hashes)) - end
        cut_after[end] = bool(end - start >= LONG_PARAGRAPH or following >= LONG_PARAGRAPH or paragraph_keys[i] == 0)
    bounds: list[tuple[int, int]] = []
    begin = 0
    ends = starts[1:] + [len(hashes)]
    for end, key in zip(ends, keys.tolist()):
        while end - begin > max_units:  # a sentence longer than a segment may be
            bounds.append((begin, begin + max_units))
            begin += max_units
        if key == 0 or cut_after.get(end, False) or end - begin >= max_units:
            bounds.append((begin, end))
            begin = end
    if begin < len(hashes):
        bounds.append((begin, len(hashes)))
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
    return [Segment(number, end - begin, value) for number, ((begin, end), value) in enumerate(zip(kept, fingerprints))]


def segment_fingerprints(text: str) -> tuple[int, ...]:
    """The ``seg-v1`` fingerprints of a text's segments, in order (what a store with segments keeps)."""
    return tuple(segment.fingerprint for segment in segments(text))


__all__ = [
    "DEFAULT_MIN_SCORE",
    "DEFAULT_SEGMENT_DISTANCE",
    "MAX_SEGMENT_DISTANCE",
    "SEGMENT_SCHEME",
    "Segment",
    "segment_fingerprints",
    "segment_bounds",
    "segments",
]
