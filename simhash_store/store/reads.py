"""Reads: radius search (one fingerprint or many, through ``simhash.near``/``near_many``) and
plain lookups of stored documents (get, versions, count)."""

from __future__ import annotations

from typing import Sequence

import psycopg
from sqlalchemy import Text, any_, bindparam, exists, func, literal_column, not_, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection

from ..bits import from_signed, to_signed
from ..models import Document
from ..validation import INT8, validate_distance, validate_fingerprint, validate_integer
from .documents import Match, StoredDocument

documents = Document.__table__

# Raw psycopg, prepared: the hot path. Queries run on a pooled connection in autocommit, as
# prepared statements: one round trip, no BEGIN or ROLLBACK around them. max_results NULL
# means all; it is applied inside the function, nearest first, so a limited query does not
# build the full answer.
_NEAR = (
    "SELECT id, key, fingerprint, distance "
    "FROM simhash.near(%(fingerprint)s::bigint, %(k)s::integer, %(method)s::text, %(limit)s::integer)"
)
_NEAR_MANY = (
    "SELECT query_index, id, key, fingerprint, distance "
    "FROM simhash.near_many(%(fingerprints)s::bigint[], %(k)s::integer, %(method)s::text, %(limit)s::integer)"
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
    parameters = {"fingerprint": to_signed(fingerprint), "k": max_distance, "method": method, "limit": _max_results(limit)}
    rows = cursor.execute(_NEAR, parameters, prepare=True).fetchall()
    return [Match(key, from_signed(value), distance, id_) for id_, key, value, distance in rows]


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


def get(connection: Connection, key: str) -> StoredDocument | None:
    c = documents.c
    row = connection.execute(
        select(c.id, c.key, c.fingerprint, c.digest, c.length, c["metadata"], c.added_at, c.updated_at).where(c.key == key)
    ).first()
    if row is None:
        return None
    return StoredDocument(
        row.id, row.key, from_signed(row.fingerprint), row.digest, row.length, row.metadata, row.added_at, row.updated_at
    )


def versions(connection: Connection, keys: Sequence[str]) -> dict[str, tuple[bytes | None, str | None]]:
    """(digest, stamp) of each of the given keys that is stored."""
    c = documents.c
    rows = connection.execute(
        select(c.key, c.digest, c.stamp).where(c.key == any_(bindparam("keys", type_=ARRAY(Text)))), {"keys": list(keys)}
    )
    return {key: (bytes(digest) if digest is not None else None, stamp) for key, digest, stamp in rows}


def count(connection: Connection) -> int:
    return connection.execute(select(func.count()).select_from(documents)).scalar_one()


def is_empty(connection: Connection) -> bool:
    return connection.execute(select(not_(exists(select(literal_column("1")).select_from(documents))))).scalar_one()
