"""Reads: radius search (one fingerprint or many, through ``simhash.near``/``near_many``: in
:mod:`simhash_store.search`, which `query` uses without SQLAlchemy too) and plain lookups of
stored documents (get, versions, count)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Text, any_, bindparam, cast, exists, func, literal_column, not_, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection

from ..bits import from_signed
from ..errors import DatabaseError
from ..keep import keep_value_text, stored_value
from ..models import Document
from ..search import check_query_options, query, query_many, stored_fingerprints  # noqa: F401 - the radius search, without SQLAlchemy
from .documents import StoredDocument

documents = Document.__table__


def get(connection: Connection, key: str) -> StoredDocument | None:
    c = documents.c
    row = connection.execute(
        select(
            c.id, c.key, c.fingerprint, c.digest, c.length, cast(c["metadata"], Text), c.added_at, c.updated_at
        ).where(c.key == key)
    ).first()
    if row is None:
        return None
    try:  # another application may store JSON Python cannot read (an integer of 5,000 digits, deep nesting)
        metadata = json.loads(row[5]) if row[5] is not None else None
    except (ValueError, RecursionError) as exc:
        raise DatabaseError(
            f"the metadata of document {key!r} cannot be read: {str(exc)[:100]} (no write of simhash-store "
            "stores such metadata: another application did)"
        ) from None
    return StoredDocument(
        row.id,
        row.key,
        from_signed(row.fingerprint),
        row.digest,
        row.length,
        metadata,
        row.added_at,
        row.updated_at,
    )


def versions(connection: Connection, keys: Sequence[str]) -> dict[str, tuple[bytes | None, str | None]]:
    """(digest, stamp) of each of the given keys that is stored."""
    c = documents.c
    rows = connection.execute(
        select(c.key, c.digest, c.stamp).where(c.key == any_(bindparam("keys", type_=ARRAY(Text)))),
        {"keys": list(keys)},
    )
    return {key: (bytes(digest) if digest is not None else None, stamp) for key, digest, stamp in rows}


def stored_metadata(connection: Connection, keys: Sequence[str]) -> dict[str, object]:
    """The metadata (None for none) of each of the given keys that is stored."""
    c = documents.c
    rows = connection.execute(
        select(c.key, c["metadata"]).where(c.key == any_(bindparam("keys", type_=ARRAY(Text)))), {"keys": list(keys)}
    )
    return {key: metadata for key, metadata in rows}


def stored_keep_values(connection: Connection, keys: Sequence[str]) -> dict[str, object]:
    """The keep policy's field value (None for none) of each of the given keys that is stored; a
    value too long to compare, which another role may have stored, as None (never read whole)."""
    c = documents.c
    rows = connection.execute(
        select(c.key, literal_column(keep_value_text("keep_value"))).where(
            c.key == any_(bindparam("keys", type_=ARRAY(Text)))
        ),
        {"keys": list(keys)},
    )
    return {key: stored_value(value) for key, value in rows}


def stored_digests(connection: Connection, keys: Sequence[str]) -> dict[str, tuple[bytes | None, int, int | None]]:
    """(digest, unsigned fingerprint, length) of each of the given keys that is stored."""
    c = documents.c
    rows = connection.execute(
        select(c.key, c.digest, c.fingerprint, c.length).where(c.key == any_(bindparam("keys", type_=ARRAY(Text)))),
        {"keys": list(keys)},
    )
    return {
        key: (bytes(digest) if digest is not None else None, from_signed(fingerprint), length)
        for key, digest, fingerprint, length in rows
    }


def count(connection: Connection) -> int:
    return connection.execute(select(func.pg_catalog.count(literal_column("*"))).select_from(documents)).scalar_one()


def is_empty(connection: Connection) -> bool:
    empty: bool = connection.execute(
        select(not_(exists(select(literal_column("1")).select_from(documents))))
    ).scalar_one()
    return empty
