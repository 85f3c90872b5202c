"""The store read without SQLAlchemy: radius search, the revision check and the scheme, and
:class:`Lookup`, the one-connection view that ``simhash-store query`` uses.

Importing SQLAlchemy (and the models) costs a one-file query more than all the rest of
its work in its own process, so ``query`` reads the store with psycopg alone, through the
same pieces the :class:`~simhash_store.store.Store` uses: the URL resolved by
:func:`config.resolve_parts` (``--db``, ``SIMHASH_STORE_URL``, else the embedded server,
joined or started), the session arguments of :func:`config.session_arguments` and the
silent-server watch of :mod:`session`, the same revision check and scheme comparison, the
same SQL and the same errors. The URL is rendered (with SQLAlchemy) only for a message.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import psycopg

from . import migrate
from .bits import from_signed, to_hex, to_signed
from .config import UrlParts, network_timeout, redact, resolve_parts, secrets_of, session_arguments
from .errors import SchemeError, SchemeMismatchError
from .scheme import DEFAULT, Scheme, get_scheme
from .session import WatchedConnection, library_error, silent_server_in
from .trust import check_schema
from .validation import INT8, validate_distance, validate_fingerprint, validate_integer

T = TypeVar("T")


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


# ------------------------------------------------------------ the store's revision and scheme


def revision_of(cursor: psycopg.Cursor, where: str | Callable[[], str]) -> str | None:
    """The revision the database is at (None for a database without the store's schema), once
    the schema is found to be one no untrusted role can change (:func:`trust.check_schema`)."""
    if not check_schema(cursor, migrate.SCHEMA, where):
        return None
    row = cursor.execute(f"SELECT version_num FROM {migrate.SCHEMA}.alembic_version").fetchone()
    return row[0] if row is not None else None


def stored_scheme(cursor: psycopg.Cursor) -> Scheme | None:
    """The scheme the store records (None before the first write)."""
    # As text: SQLAlchemy's connections hand jsonb over unparsed, psycopg's own parse it.
    row = cursor.execute(f"SELECT scheme::pg_catalog.text FROM {migrate.SCHEMA}.store_info").fetchone()
    if row is None:
        return None
    try:
        return Scheme.from_dict(json.loads(row[0]))
    except SchemeError as exc:
        raise SchemeError(f"the store records a scheme this version cannot read: {exc}") from None


def recommended_distance(cursor: psycopg.Cursor) -> int | None:
    """The k recorded by ``calibrate --apply``, or None. Raw psycopg: one round trip, on the query path."""
    row = cursor.execute(f"SELECT recommended_max_distance FROM {migrate.SCHEMA}.store_info").fetchone()
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


# ------------------------------------------------------------ the one-connection view


def _database_errors(method: Callable[..., T]) -> Callable[..., T]:
    """The store's translation of driver errors (see store/connection.py), for a psycopg connection."""

    @functools.wraps(method)
    def wrapper(self: "Lookup", *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except psycopg.Error as exc:
            error = library_error(
                silent_server_in(exc) or exc, self.display_url, self._secrets,
                lost=False, unavailable=isinstance(exc, psycopg.OperationalError),
            )
            if error is None:
                raise
            raise error from None

    return wrapper


class Lookup:
    """A read-only view of the store for radius search, on one psycopg connection.

    Takes what :class:`~simhash_store.store.Store` takes (a URL or None, a scheme or None)
    and answers :attr:`scheme` and :meth:`query_many` as it does. A URL in one of the
    multi-host forms that SQLAlchemy rewrites for psycopg is read through a Store instead.
    """

    def __init__(self, url: str | None = None, *, scheme: Scheme | str | None = None) -> None:
        self._requested = requested_scheme(scheme)
        self._url = url
        self._parts: UrlParts | None = None
        self._secrets: list[str] = []
        self._connection: psycopg.Connection | None = None
        self._store: Any = None  # a Store, for the URLs this view does not connect to itself
        self._scheme: Scheme | None = None

    @property
    def display_url(self) -> str:
        """The database URL without its password, for messages."""
        if self._parts is not None:
            return redact(self._parts)
        try:
            return redact(self._url if self._url is not None else "embedded")
        except Exception:  # noqa: BLE001 - a bad URL must not break an error message
            return "<database>"

    def _resolved(self) -> UrlParts:
        if self._parts is None:
            self._parts = resolve_parts(self._url)
            self._secrets = secrets_of(self._parts)
        return self._parts

    def _through_store(self):
        """The Store for a URL this view does not connect to itself, else None."""
        if self._store is None and not _connects_as_written(self._resolved()):
            from .store import Store

            self._store = Store(self._url, scheme=self._requested)
        return self._store

    def _cursor(self) -> psycopg.Cursor:
        if self._connection is None:
            self._connection = _connect(self._resolved())
        return self._connection.cursor()

    @property
    @_database_errors
    def scheme(self) -> Scheme:
        """The store's scheme; the store checked as a read checks it (never created or changed)."""
        if self._through_store() is not None:
            return self._store.scheme
        if self._scheme is None:
            with self._cursor() as cursor:
                revision = revision_of(cursor, lambda: self.display_url)
                if revision != migrate.HEAD_REVISION:
                    migrate.check_readable(revision, self.display_url)
                stored = stored_scheme(cursor)
            check_same_scheme(stored, self._requested)
            self._scheme = stored or self._requested or DEFAULT
        return self._scheme

    @_database_errors
    def recommended_distance(self) -> int | None:
        """The k recorded by ``calibrate --apply``, or None, as ``Store.recommended_distance`` gives it."""
        if self._through_store() is not None:
            return self._store.recommended_distance()
        self.scheme  # noqa: B018 - checks the store, as Store's reads do
        with self._cursor() as cursor:
            return recommended_distance(cursor)

    @_database_errors
    def query_many(
        self, fingerprints: Sequence[int], max_distance: int, *, limit: int | None = None, method: str = "auto"
    ) -> list[list[Match]]:
        """Stored documents near each fingerprint, nearest first, as ``Store.query_many`` gives them."""
        check_query_options(max_distance, limit, method)
        if self._through_store() is not None:
            return self._store.query_many(fingerprints, max_distance, limit=limit, method=method)
        self.scheme  # noqa: B018 - checks the store, as Store's reads do
        with self._cursor() as cursor:
            return query_many(cursor, fingerprints, max_distance, limit, method)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> "Lookup":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _connects_as_written(url: UrlParts) -> bool:
    """Whether SQLAlchemy's psycopg dialect passes this URL's parts to psycopg as they are;
    it rewrites the multi-host forms (host=h1,h2 or host=h1&host=h2, host=h:port)."""
    if any(isinstance(value, tuple) for value in url.query.values()):
        return False
    host, port = url.query.get("host", ""), url.query.get("port", "")
    return "," not in host + port and (port == "" or port.isdigit()) and (":" not in host or port != "")


def _connect(url: UrlParts) -> psycopg.Connection:
    """An autocommit connection made as the store's engine makes its own (store/connection.py):
    SQLAlchemy's psycopg dialect's arguments, the session arguments, the silent-server watch."""
    arguments: dict[str, Any] = {}
    for name, value in (("host", url.host), ("dbname", url.database), ("user", url.username),
                        ("password", url.password), ("port", url.port)):
        if value:  # as URL.translate_connect_args: unset or empty parts are left out
            arguments[name] = str(value) if name == "password" else value
    arguments.update(url.query)
    arguments.update(session_arguments(url))
    silence = network_timeout()
    if silence <= 0:
        return psycopg.Connection.connect(**arguments, autocommit=True)
    connection = WatchedConnection.connect(**arguments, autocommit=True)
    connection.silence = silence
    connection.probe_arguments = dict(arguments)
    return connection
