"""Containment search: which stored documents hold most of a text, or lie mostly inside it, from the
fingerprints of their segments (``simhash.segments``, through ``simhash.contained`` and
``simhash.containment_pairs``); and the store's switch for keeping segments."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import psycopg

from ..bits import to_signed
from ..errors import InvalidValueError, SimhashStoreError
from ..segments import DEFAULT_MIN_SCORE, MAX_SEGMENT_DISTANCE
from .documents import ContainmentMatch, ContainmentPair

__all__ = ["DEFAULT_MIN_SCORE", "check_options", "keeps_segments", "pairs", "query", "switch_on"]

KeysOf = Callable[[psycopg.Connection, np.ndarray], dict[int, str]]


def check_options(max_distance: int, min_score: float) -> None:
    if (
        isinstance(max_distance, bool)
        or not isinstance(max_distance, int)
        or not 0 <= max_distance <= MAX_SEGMENT_DISTANCE
    ):
        raise InvalidValueError(
            f"the distance of segments must be an integer from 0 to {MAX_SEGMENT_DISTANCE}, not {max_distance!r}"
        )
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 <= min_score <= 1:
        raise InvalidValueError(f"the minimum containment score must be a number from 0 to 1, not {min_score!r}")


def keeps_segments(cursor: psycopg.Cursor) -> bool:
    row = cursor.execute("SELECT segments FROM simhash.store_info").fetchone()
    return bool(row and row[0])


def switch_on(cursor: psycopg.Cursor, distributed: bool) -> None:
    """Keep segments from now on (documents stored before have none until they are written again)."""
    if distributed:
        raise SimhashStoreError(
            "a distributed (Citus) store cannot keep segments: containment search needs a one-server store"
        )
    cursor.execute("UPDATE simhash.store_info SET segments = true WHERE NOT segments")


def _direction(matched: int, segments: int, stored_matched: int, stored_segments: int) -> tuple[str, int, int]:
    """Which side is inside the other: the one with fewer segments (on a tie, the larger share; then the query)."""
    query_share = matched / segments if segments else 0.0
    stored_share = stored_matched / stored_segments if stored_segments else 0.0
    if (stored_segments, -stored_share) < (segments, -query_share):
        return "stored", stored_matched, stored_segments
    return "query", matched, segments


def query(
    cursor: psycopg.Cursor, fingerprints: Sequence[int], max_distance: int, min_score: float
) -> list[ContainmentMatch]:
    """Stored documents one inside the other with the text of these segments, best first."""
    if not fingerprints:
        return []
    cursor.execute(
        "SELECT key, matched, segments, stored_matched, stored_segments FROM simhash.contained(%s::bigint[], %s)",
        ([to_signed(value) for value in fingerprints], max_distance),
    )
    found = []
    for key, matched, segments, stored_matched, stored_segments in cursor.fetchall():
        inner, inner_matched, inner_segments = _direction(matched, segments, stored_matched, stored_segments)
        score = inner_matched / inner_segments
        if score >= min_score:
            found.append(ContainmentMatch(key, score, inner, inner_matched, inner_segments))
    return sorted(found, key=lambda m: (-m.score, -m.segments, m.key))


def pairs(raw: psycopg.Connection, max_distance: int, min_score: float, keys_of: KeysOf) -> list[ContainmentPair]:
    """Every pair of stored documents one mostly inside the other, best first (one snapshot)."""
    with raw.cursor() as cursor:
        rows = cursor.execute("SELECT * FROM simhash.containment_pairs(%s)", (max_distance,)).fetchall()
    chosen: list[tuple[int, int, int, int]] = []  # inner id, outer id, matched, segments
    for id_a, id_b, matched_a, segments_a, matched_b, segments_b in rows:
        inner, matched, segments = _direction(matched_a, segments_a, matched_b, segments_b)
        if matched / segments >= min_score:
            chosen.append((id_a, id_b, matched, segments) if inner == "query" else (id_b, id_a, matched, segments))
    keys = keys_of(raw, np.array(sorted({i for row in chosen for i in row[:2]}), dtype=np.int64))
    found = [
        ContainmentPair(keys[inner], keys[outer], matched / segments, matched, segments)
        for inner, outer, matched, segments in chosen
    ]
    return sorted(found, key=lambda p: (-p.score, -p.segments, p.inner, p.outer))
