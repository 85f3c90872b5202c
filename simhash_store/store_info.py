"""What the store records about itself (``simhash.store_info``), read with psycopg alone: the
fingerprint scheme it was created with and the k ``calibrate --apply`` recommends; and the
rule for the scheme a caller asks for. The fast read path (lookup.py) and the store
(store/schema.py) read them through these same functions.
"""

from __future__ import annotations

import json

import psycopg

from .errors import SchemeError, SchemeMismatchError
from .migrate import SCHEMA
from .scheme import Scheme, get_scheme


def stored_scheme(cursor: psycopg.Cursor) -> Scheme | None:
    """The scheme the store records (None before the first write)."""
    # As text: SQLAlchemy's connections hand jsonb over unparsed, psycopg's own parse it.
    row = cursor.execute(f"SELECT scheme::pg_catalog.text FROM {SCHEMA}.store_info").fetchone()
    if row is None:
        return None
    try:
        return Scheme.from_dict(json.loads(row[0]))
    except SchemeError as exc:
        raise SchemeError(f"the store records a scheme this version cannot read: {exc}") from None


def recommended_distance(cursor: psycopg.Cursor) -> int | None:
    """The k recorded by ``calibrate --apply``, or None. Raw psycopg: one round trip, on the query path."""
    row = cursor.execute(f"SELECT recommended_max_distance FROM {SCHEMA}.store_info").fetchone()
    return row[0] if row else None


def check_same_scheme(stored: Scheme | None, requested: Scheme | None) -> None:
    """Refuse a store that records another scheme than the one a caller computes with."""
    if stored is not None and requested is not None and stored != requested:
        raise SchemeMismatchError(
            f"the store was created with scheme {stored.label}, not {requested.label}; "
            "fingerprints of different schemes cannot be compared (use another database, "
            f"or --scheme {stored.name})"
        )


def requested_scheme(scheme: Scheme | str | None) -> Scheme | None:
    """The scheme a caller names for the store (None: the store's own), refused unless 64-bit."""
    requested = get_scheme(scheme) if scheme is not None else None
    if requested is not None and requested.bits != 64:
        raise SchemeError(
            f"the PostgreSQL store keeps 64-bit fingerprints; scheme {requested.name!r} "
            f"makes {requested.bits}-bit ones"
        )
    return requested
