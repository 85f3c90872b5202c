"""What the store records about itself (``simhash.store_info``), read with psycopg alone: the
fingerprint scheme it was created with and the k ``calibrate --apply`` recommends; the rule
for the scheme a caller asks for, and the rule for the distance used when none is given. The fast read path (lookup.py) and the store
(store/schema.py) read them through these same functions.
"""

from __future__ import annotations

import json
from typing import Protocol

import psycopg

from .errors import SchemeError, SchemeMismatchError
from .migrate import SCHEMA
from .scheme import DEFAULT_MAX_DISTANCE, SCHEMES, Scheme, get_scheme


def stored_scheme(cursor: psycopg.Cursor) -> Scheme | None:
    """The scheme the store records (None before the first write)."""
    # As text: SQLAlchemy's connections hand jsonb over unparsed, psycopg's own parse it.
    row = cursor.execute(f"SELECT scheme::pg_catalog.text FROM {SCHEMA}.store_info").fetchone()
    if row is None:
        return None
    try:
        data = json.loads(row[0])  # stored as jsonb: JSON, but perhaps nested too deep or of huge integers
        if not isinstance(data, dict):
            raise SchemeError("scheme description must be a JSON object")
        scheme = Scheme.from_dict(data)
    except (SchemeError, TypeError, ValueError, RecursionError) as exc:
        raise SchemeError(f"the store records a scheme this version cannot read: {str(exc)[:160]}") from None
    check_known(scheme, data)
    return scheme


def check_known(scheme: Scheme, data: dict[str, object]) -> None:
    """Refuse a recorded scheme of a registered name whose definition is not that scheme's.
    ``store_info`` is the owner's, but a member of ``pg_write_all_data`` may rewrite it, and the
    owner's next add would fingerprint with what it wrote, silently. (A record that leaves fields
    out is read with their defaults, as the stores of earlier versions, written before those fields
    existed, are read.)"""
    registered = SCHEMES.get(scheme.name)
    if registered is None or registered == scheme:
        return
    raise SchemeError(
        f"the store records a scheme named {scheme.name!r} that is not the definition of {registered.label}: the "
        "store never writes such a record, so a role that may write simhash.store_info changed it, and what is "
        "added would be fingerprinted with another scheme than the store's documents: have the store's owner put "
        "back the scheme they were made with (UPDATE simhash.store_info SET scheme = ...) and take that right away"
    )


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
            f"the PostgreSQL store keeps 64-bit fingerprints; scheme {requested.name!r} makes {requested.bits}-bit ones"
        )
    return requested


class RecordsDistance(Protocol):
    """A Store or a Lookup: what it answers about the distances it records."""

    def recommended_distance(self) -> int | None: ...


class KeepsClusters(RecordsDistance, Protocol):
    """A Store: the distance at which it clusters, if it does."""

    def cluster_state(self) -> tuple[int | None, bool]: ...


def default_distance(*recorded: int | None) -> int:
    """The first distance recorded (a distance of 0 is one), else the default.

    The rule every default k follows: ``-k`` if given, then what the store records (its
    cluster distance, the k of ``calibrate --apply``), then 11.

    >>> default_distance(None, 8), default_distance(0, 8), default_distance(None, None)
    (8, 0, 11)
    """
    return next((value for value in recorded if value is not None), DEFAULT_MAX_DISTANCE)


def query_distance(store: RecordsDistance, given: int | None) -> tuple[int, str | None]:
    """The k of a search: ``given``, else the k recorded by ``calibrate --apply``, else the
    default; with a note saying so when the recorded k is used (None otherwise)."""
    if given is not None:
        return given, None
    recommended = store.recommended_distance()
    if recommended is None:
        return DEFAULT_MAX_DISTANCE, None
    return recommended, f"k = {recommended}, recommended by calibrate --apply (-k overrides)"


def dedup_distance_note(store: KeepsClusters, given: int | None) -> str:
    """At which k dedup ran into ``store``, and why (for its summary line)."""
    distance, _ = store.cluster_state()
    recommended = store.recommended_distance()
    if given is not None:
        return f"k = {distance}"
    if recommended == distance:
        return f"k = {distance}, recommended by calibrate --apply"
    if recommended is None:
        return f"k = {distance}, the store's cluster distance"
    return (
        f"k = {distance}, the store's cluster distance (calibrate --apply recommends {recommended}: "
        f"`simhash-store recluster -k {recommended}` re-clusters the store at it)"
    )
