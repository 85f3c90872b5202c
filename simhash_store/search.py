"""The radius search on a psycopg cursor: one prepared call of ``simhash.near`` or
``simhash.near_many``. Both ways in stand on it: :class:`~simhash_store.lookup.Lookup` (the
fast read path of ``simhash-store query``) and :class:`~simhash_store.store.Store`; no
SQLAlchemy here, which costs a one-file query more than the rest of its work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from .bits import from_signed, to_hex, to_signed
from .validation import INT8, validate_distance, validate_fingerprint, validate_integer


@dataclass(frozen=True)
class Match:
    key: str
    fingerprint: int
    distance: int
    id: int

    @property
    def similarity(self) -> float:
        return 1.0 - self.distance / 64

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)


# Raw psycopg, prepared: the hot path. Queries run on a pooled connection in autocommit, as
# prepared statements: one round trip, no BEGIN or ROLLBACK around them. max_results NULL
# means all; it is applied inside the function, nearest first, so a limited query does not
# build the full answer.
_NEAR = (
    "SELECT id, key, fingerprint, distance "
    "FROM simhash.near(%(fingerprint)s::bigint, %(k)s::integer, %(method)s::pg_catalog.text, %(limit)s::integer)"
)
_NEAR_MANY = (
    "SELECT query_index, id, key, fingerprint, distance "
    "FROM simhash.near_many(%(fingerprints)s::bigint[], %(k)s::integer, %(method)s::pg_catalog.text, %(limit)s::integer)"
)
# max_results is an integer in SQL; a larger limit is no limit at all.
_MAX_RESULTS = 2**31 - 1


def _max_results(limit: int | None) -> int | None:
    return None if limit is None or limit >= _MAX_RESULTS else limit


def check_query_options(max_distance: int, limit: int | None, method: str) -> None:
    validate_distance(max_distance)
    if method not in ("auto", "probe", "scan"):
        raise ValueError(f"method must be auto, probe or scan, not {method!r}")
    if limit is not None:
        validate_integer(limit, "limit", 1, INT8[1])  # a bigint in SQL: refused here, not by the driver


def query(cursor: psycopg.Cursor, fingerprint: int, max_distance: int, limit: int | None, method: str) -> list[Match]:
    """Stored documents within ``max_distance`` bits of a (validated) fingerprint, nearest first."""
    parameters = {
        "fingerprint": to_signed(fingerprint),
        "k": max_distance,
        "method": method,
        "limit": _max_results(limit),
    }
    rows = cursor.execute(_NEAR, parameters, prepare=True).fetchall()
    return [Match(key, from_signed(value), distance, id_) for id_, key, value, distance in rows]


def stored_fingerprints(cursor: psycopg.Cursor, keys: Sequence[str]) -> dict[str, int]:
    """The fingerprint of each of the (validated) keys that is stored: what ``query --key`` searches near."""
    if not keys:
        return {}
    rows = cursor.execute(
        "SELECT key, fingerprint FROM simhash.documents WHERE key = ANY(%(keys)s::pg_catalog.text[])",
        {"keys": list(keys)},
    ).fetchall()
    return {key: from_signed(value) for key, value in rows}


def stored_digests(cursor: psycopg.Cursor, keys: Sequence[str]) -> dict[str, tuple[bytes | None, int, int | None]]:
    """(content digest, fingerprint, length) of each of the (validated) keys that is stored: how a
    record stored with the same text is recognised without fingerprinting it again."""
    if not keys:
        return {}
    rows = cursor.execute(
        "SELECT key, digest, fingerprint, length FROM simhash.documents WHERE key = ANY(%(keys)s::pg_catalog.text[])",
        {"keys": list(keys)},
    ).fetchall()
    return {
        key: (bytes(digest) if digest is not None else None, from_signed(value), length)
        for key, digest, value, length in rows
    }


def query_many(
    cursor: psycopg.Cursor, fingerprints: Sequence[int], max_distance: int, limit: int | None, method: str = "auto"
) -> list[list[Match]]:
    """:func:`query` for many fingerprints in one statement; results in the same order."""
    check_query_options(max_distance, limit, method)
    signed = [to_signed(validate_fingerprint(f)) for f in fingerprints]
    results: list[list[Match]] = [[] for _ in signed]
    if not signed:
        return results
    parameters = {"fingerprints": signed, "k": max_distance, "method": method, "limit": _max_results(limit)}
    rows = cursor.execute(_NEAR_MANY, parameters, prepare=True).fetchall()
    for query_index, id_, key, value, distance in rows:
        results[query_index - 1].append(Match(key, from_signed(value), distance, id_))
    return results
