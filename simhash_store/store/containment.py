"""Containment search: which stored documents hold most of a text, or lie mostly inside it, from the
fingerprints of their segments (``simhash.segments``, through ``simhash.contained`` and
``simhash.containment_pairs``); and the store's switch for keeping segments."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import psycopg

from ..bits import to_signed
from ..errors import InvalidValueError, SimhashStoreError
from ..segments import DEFAULT_MIN_SCORE, MAX_SEGMENT_DISTANCE
from .documents import ContainmentMatch, ContainmentPair

__all__ = ["DEFAULT_MIN_SCORE", "check_options", "keeps_segments", "pairs", "query", "switch_on"]


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


# Every pair, the inner side chosen as _direction chooses it (the one with fewer segments; on a
# tie, the larger share), filtered and ordered in the server: read a few thousand rows at a time,
# so that millions of pairs (copies of one text, every two a pair) cost the client no memory.
# Keys in code point order (COLLATE "C": UTF-8's byte order is its code points'), as Python sorts.
_PAIRS = """
    SELECT inner_document.key, outer_document.key, o.matched, o.segments
    FROM (
        SELECT CASE WHEN b_inside THEN p.id_b ELSE p.id_a END AS inner_id,
               CASE WHEN b_inside THEN p.id_a ELSE p.id_b END AS outer_id,
               CASE WHEN b_inside THEN p.matched_b ELSE p.matched_a END AS matched,
               CASE WHEN b_inside THEN p.segments_b ELSE p.segments_a END AS segments
        FROM simhash.containment_pairs(%(k)s::pg_catalog.int4) p
        CROSS JOIN LATERAL (SELECT
            p.segments_b OPERATOR(pg_catalog.<) p.segments_a
            OR (p.segments_b OPERATOR(pg_catalog.=) p.segments_a
                AND (CASE WHEN p.segments_b OPERATOR(pg_catalog.>) 0
                          THEN p.matched_b::pg_catalog.float8 OPERATOR(pg_catalog./) p.segments_b ELSE 0 END)
                    OPERATOR(pg_catalog.>)
                    (CASE WHEN p.segments_a OPERATOR(pg_catalog.>) 0
                          THEN p.matched_a::pg_catalog.float8 OPERATOR(pg_catalog./) p.segments_a ELSE 0 END))
            AS b_inside) AS side
    ) o
    JOIN simhash.documents inner_document ON inner_document.id OPERATOR(pg_catalog.=) o.inner_id
    JOIN simhash.documents outer_document ON outer_document.id OPERATOR(pg_catalog.=) o.outer_id
    WHERE o.matched::pg_catalog.float8 OPERATOR(pg_catalog./) o.segments OPERATOR(pg_catalog.>=) %(min_score)s::pg_catalog.float8
    ORDER BY o.matched::pg_catalog.float8 OPERATOR(pg_catalog./) o.segments DESC, o.segments DESC,
             inner_document.key COLLATE pg_catalog."C", outer_document.key COLLATE pg_catalog."C"
"""


def pairs(raw: psycopg.Connection, max_distance: int, min_score: float) -> Iterator[ContainmentPair]:
    """Every pair of stored documents one mostly inside the other, best first, as they are read
    (one snapshot: the caller's transaction, open until the last pair is taken)."""
    with raw.cursor(name="simhash_containment_pairs") as cursor:
        cursor.itersize = 5_000
        cursor.execute(_PAIRS, {"k": max_distance, "min_score": float(min_score)})
        for inner, outer, matched, segments in cursor:
            yield ContainmentPair(inner, outer, matched / segments, matched, segments)
