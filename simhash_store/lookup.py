""":class:`Lookup`: the store read without SQLAlchemy, on one psycopg connection, for radius
search; the fast read path that ``simhash-store query`` uses.

Importing SQLAlchemy (and the models) costs a one-file query more than all the rest of
its work in its own process, so ``query`` reads the store with psycopg alone, through the
same pieces the :class:`~simhash_store.store.Store` stands on: the URL resolved by
:func:`config.resolve_parts` (``--db``, ``SIMHASH_STORE_URL``, else the embedded server,
joined or started), the session arguments of :func:`config.session_arguments` and the
silent-server watch of :mod:`session`, the revision check of :mod:`migrate`, the scheme
comparison of :mod:`store_info`, the SQL of :mod:`search` and the same errors. The URL is
rendered (with SQLAlchemy) only for a message.

Lookup and Store are two ways in on the same floor and never import each other: a caller
that may be given a URL Lookup does not connect to (:attr:`Lookup.connects_directly`)
opens a Store instead, as the CLI does.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psycopg

from . import migrate
from .config import UrlParts, network_timeout, redact, resolve_parts, secrets_of, session_arguments
from .errors import ConfigError
from .scheme import DEFAULT, Scheme
from .search import Match, check_query_options, query_many, stored_digests, stored_fingerprints
from .session import WatchedConnection, library_error, silent_server_in
from .store_info import check_same_scheme, recommended_distance, requested_scheme, stored_scheme
from .validation import validate_keys

T = TypeVar("T")


# ------------------------------------------------------------ the one-connection view


def _database_errors(method: Callable[..., T]) -> Callable[..., T]:
    """The store's translation of driver errors (see store/connection.py), for a psycopg connection."""

    @functools.wraps(method)
    def wrapper(self: Lookup, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except psycopg.Error as exc:
            error = library_error(
                silent_server_in(exc) or exc,
                self.display_url,
                self._secrets,
                lost=False,
                unavailable=isinstance(exc, psycopg.OperationalError),
            )
            if error is None:
                raise
            raise error from None

    return wrapper


class Lookup:
    """A read-only view of the store for radius search, on one psycopg connection.

    Takes what :class:`~simhash_store.store.Store` takes (a URL or None, a scheme or None)
    and answers :attr:`scheme`, :meth:`recommended_distance` and :meth:`query_many` as it
    does. It connects with the URL as written; a URL in one of the multi-host forms that the
    Store's SQLAlchemy rewrites for psycopg is refused (:attr:`connects_directly` says so
    beforehand): read it through a Store.
    """

    def __init__(self, url: str | None = None, *, scheme: Scheme | str | None = None) -> None:
        self._requested = requested_scheme(scheme)
        self._url = url
        self._parts: UrlParts | None = None
        self._secrets: list[str] = []
        self._connection: psycopg.Connection | None = None
        self._scheme: Scheme | None = None
        self._checked_at = -float("inf")  # time.monotonic() of the last checks (migrate.RECHECK_SECONDS)

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

    @property
    @_database_errors
    def connects_directly(self) -> bool:
        """Whether this view reads the URL itself: False for the multi-host forms the Store's
        SQLAlchemy rewrites (host=h1,h2, host=h1&host=h2, host=h:port), which a Store reads.
        Resolves the URL (the embedded server started or joined), once."""
        return _connects_as_written(self._resolved())

    def _cursor(self) -> psycopg.Cursor:
        if self._connection is None:
            if not self.connects_directly:
                raise ConfigError(
                    f"Lookup connects with the URL as written, and {self.display_url} is in a multi-host form "
                    "that only the Store reads as it should: read it through simhash_store.store.Store"
                )
            self._connection = _connect(self._resolved())
        return self._connection.cursor()

    @property
    @_database_errors
    def scheme(self) -> Scheme:
        """The store's scheme; the store checked as a read checks it (never created or changed)."""
        if self._scheme is None or time.monotonic() - self._checked_at >= migrate.RECHECK_SECONDS:
            with self._cursor() as cursor:
                revision = migrate.revision_of(cursor, lambda: self.display_url)
                if revision != migrate.HEAD_REVISION:
                    migrate.check_readable(revision, self.display_url)
                stored = stored_scheme(cursor)
            check_same_scheme(stored, self._requested)
            self._scheme = stored or self._requested or DEFAULT
            self._checked_at = time.monotonic()
        return self._scheme

    @_database_errors
    def recommended_distance(self) -> int | None:
        """The k recorded by ``calibrate --apply``, or None, as ``Store.recommended_distance`` gives it."""
        self.scheme  # noqa: B018 - checks the store, as Store's reads do
        with self._cursor() as cursor:
            return recommended_distance(cursor)

    @_database_errors
    def query_many(
        self, fingerprints: Sequence[int], max_distance: int, *, limit: int | None = None, method: str = "auto"
    ) -> list[list[Match]]:
        """Stored documents near each fingerprint, nearest first, as ``Store.query_many`` gives them."""
        check_query_options(max_distance, limit, method)
        self.scheme  # noqa: B018 - checks the store, as Store's reads do
        with self._cursor() as cursor:
            return query_many(cursor, fingerprints, max_distance, limit, method)

    @_database_errors
    def fingerprints(self, keys: Sequence[str]) -> dict[str, int]:
        """The fingerprint of each of the keys that is stored, as ``Store.fingerprints`` gives them."""
        keys = validate_keys(keys)
        self.scheme  # noqa: B018 - checks the store, as Store's reads do
        with self._cursor() as cursor:
            return stored_fingerprints(cursor, keys)

    @_database_errors
    def stored_digests(self, keys: Sequence[str]) -> dict[str, tuple[bytes | None, int, int | None]]:
        """(content digest, fingerprint, length) of each of the keys that is stored, as ``Store.stored_digests``."""
        keys = validate_keys(keys)
        self.scheme  # noqa: B018 - checks the store, as Store's reads do
        with self._cursor() as cursor:
            return stored_digests(cursor, keys)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> Lookup:
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
    for name, value in (
        ("host", url.host),
        ("dbname", url.database),
        ("user", url.username),
        ("password", url.password),
        ("port", url.port),
    ):
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
