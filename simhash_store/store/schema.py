"""The store's schema and scheme: create or upgrade it (writes only), check it (reads), and
record or compare the fingerprint scheme the store was created with."""

from __future__ import annotations

import psycopg
from sqlalchemy import Engine, Text, cast, literal, text, update
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from .. import maintenance, migrate
from ..errors import DatabaseError, SchemeError
from ..models import StoreInfo
from ..scheme import Scheme
from ..session import first_line
from ..store_info import (
    check_same_scheme,
    recommended_distance,  # noqa: F401 - the store reads it as the lookup (query) does
)
from ..store_info import stored_scheme as _stored_scheme

store_info = StoreInfo.__table__
_HOLDS_DOCUMENTS = "SELECT EXISTS (SELECT 1 FROM simhash.documents)"


def upgrade(engine: Engine, display_url: str) -> None:
    """Create the schema, or bring it to the newest revision keeping every row.

    The revision is what ``simhash.alembic_version`` records, which any role that may update the
    store's tables can rewrite: a revision whose objects exist already (or that a later one dropped)
    fails in one transaction, so nothing changes, and is one line (:class:`DatabaseError`), not a
    traceback.
    """
    revision = migrate.current_revision(engine, display_url)
    migrate.check_upgradable(revision, display_url)
    if revision == migrate.HEAD_REVISION:
        return
    try:
        migrate.upgrade(engine)
    except (DBAPIError, psycopg.Error) as exc:
        error = exc.orig if isinstance(exc, DBAPIError) else exc
        sqlstate = getattr(error, "sqlstate", None) or ""
        # Class 42 (a table, column, function or constraint that exists already, or does not), not a permission.
        if revision is None or not sqlstate.startswith("42") or sqlstate == "42501":
            raise
        raise DatabaseError(
            f"database {display_url}: upgrading the store from revision {revision} failed: {first_line(error)} "
            f"(nothing was changed): its tables are not those of revision {revision}, so the record in "
            "simhash.alembic_version, which any role that may update the store's tables can change, is wrong: "
            "have the store's owner put back the revision its tables are at (the newest a store of this "
            f"version writes is {migrate.HEAD_REVISION})"
        ) from None
    # The masks the migrations made, checked as every open checks them.
    migrate.current_revision(engine, display_url)


def prepare(engine: Engine, display_url: str, requested: Scheme | None, default: Scheme, record: bool) -> Scheme | None:
    """Ready to write (``record``: the schema created or upgraded, the scheme recorded) or to read
    (the schema checked, never changed); the scheme the store records, if any.

    Raises :class:`SchemeMismatchError` if it records another scheme than ``requested``.
    """
    if record:
        upgrade(engine, display_url)
    else:
        migrate.check_readable(migrate.current_revision(engine, display_url), display_url)
    with engine.begin() as connection:
        stored = stored_scheme(connection)
        if stored is None and record:
            if requested is None and connection.execute(text(_HOLDS_DOCUMENTS)).scalar():
                raise SchemeError(
                    f"the store in database {display_url} holds documents but records no scheme (simhash.store_info "
                    "is empty: another application wrote them before any scheme was recorded, or a role that may "
                    "write it deleted the record), so this write cannot tell which scheme they were made with, and "
                    f"{default.name} might not be it: give the scheme they were made with once "
                    "(`simhash-store init --scheme NAME`, or --scheme)"
                )
            wanted = requested or default
            connection.execute(
                insert(store_info)
                .values(singleton=True, scheme_name=wanted.name, scheme=cast(literal(wanted.to_json(), Text), JSONB))
                .on_conflict_do_nothing(index_elements=[store_info.c.singleton])
            )
            stored = stored_scheme(connection)
        if record:
            with connection.connection.driver_connection.cursor() as cursor:
                maintenance.id_sequence_past_given_ids(cursor)
    check_same_scheme(stored, requested)
    return stored


def stored_scheme(connection: Connection) -> Scheme | None:
    with connection.connection.driver_connection.cursor() as cursor:
        return _stored_scheme(cursor)


def record_recommended_distance(connection: Connection, max_distance: int) -> None:
    """Record the k that ``calibrate`` recommends in ``store_info.recommended_max_distance``."""
    connection.execute(update(store_info).values(recommended_max_distance=max_distance))
