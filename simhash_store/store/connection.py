"""The store's connection to PostgreSQL: engine and pool, pinned sessions, a watch on silent
servers, a ping for idle pooled connections, and driver errors mapped (by SQLSTATE) to ours."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import NoReturn, TypeVar

import psycopg
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import ArgumentError, DBAPIError, DisconnectionError, OperationalError

from ..config import SEARCH_PATH, lock_timeout, session_arguments
from ..errors import ConfigError
from ..session import ServerSilentError, WatchedConnection, first_line, library_error, silent_server_in  # noqa: F401 - first_line re-exported

T = TypeVar("T")

# A pooled connection idle longer than this is pinged before use (a restarted server leaves
# dead ones in the pool); one in steady use is not, so that a query stays one round trip.
PING_AFTER_IDLE_SECONDS = 1.0


def database_errors(method: Callable[..., T]) -> Callable[..., T]:
    """Turn lost or refused connections, and lock or statement timeouts, into one clear error.

    Decorates a method of an object with ``display_url`` and ``_secrets`` (the :class:`Store`);
    a generator method's errors are turned as they are raised, item by item.
    """
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator_wrapper(self, *args, **kwargs):
            try:
                yield from method(self, *args, **kwargs)
            except (DBAPIError, psycopg.Error) as exc:
                _raise_mapped(self, exc)

        return generator_wrapper

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (DBAPIError, psycopg.Error) as exc:
            _raise_mapped(self, exc)

    return wrapper


def _raise_mapped(owner, exc: DBAPIError | psycopg.Error) -> NoReturn:
    driver_error = exc.orig if isinstance(exc, DBAPIError) else exc
    error = library_error(
        silent_server_in(exc) or driver_error or exc,
        owner.display_url,
        owner._secrets,
        lost=isinstance(exc, DBAPIError) and exc.connection_invalidated,
        unavailable=isinstance(exc, (OperationalError, psycopg.OperationalError)),
    )
    if error is None:
        raise exc
    raise error from None


def own_engine(url, silence: float) -> Engine:
    """The store's own engine for a resolved URL: a small pool of watched (``silence`` > 0),
    pinged-when-idle connections whose sessions are pinned (:func:`config.session_arguments`)."""
    try:
        engine = create_engine(url, pool_size=2, max_overflow=4, connect_args=session_arguments(url))
    except ArgumentError:  # SQLAlchemy's refusal of hosts and ports that do not pair up ("host=a,b&port=1")
        raise ConfigError(
            "bad hosts or ports in the database URL: as many ports as hosts (host=h1,h2&port=p1,p2), "
            "each a number from 1 to 65535"
        ) from None
    _watched_connections(engine, silence)
    _ping_when_idle(engine)
    return engine


def _watched_connections(engine: Engine, silence: float) -> None:
    """The engine's connections are :class:`WatchedConnection` (when ``silence`` > 0)."""
    if silence <= 0:
        return

    @event.listens_for(engine, "do_connect")
    def connect(dialect, record, cargs, cparams):
        connection = WatchedConnection.connect(*cargs, **cparams)
        connection.silence = silence
        connection.probe_arguments = dict(cparams)
        return connection


def _ping_when_idle(engine: Engine) -> None:
    """Pessimistic disconnect handling for connections that sat idle, without a ping per checkout."""

    @event.listens_for(engine, "checkin")
    def checked_in(dbapi_connection, record) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def checked_out(dbapi_connection, record, proxy) -> None:
        idle_since = record.info.pop("idle_since", None)
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            # Outside psycopg's transaction handling (it would open one around the ping), but
            # through its wait loop, so a silent server is noticed (WatchedConnection).
            pgconn = dbapi_connection.pgconn
            pgconn.send_query(b"SELECT 1")
            results = dbapi_connection.wait(psycopg.generators.execute(pgconn))
            ok = bool(results) and results[-1].status == psycopg.pq.ExecStatus.TUPLES_OK
        except psycopg.Error:
            ok = False
        if not ok:
            raise DisconnectionError("the pooled connection is dead")  # the pool replaces it


# For an engine the caller made, sessions are the caller's: the path is pinned for each of
# the library's transactions only (SET LOCAL), never for the session.
# One statement, so that it can go down a pipeline with the query it guards.
_PIN_FOR_TRANSACTION = (
    f"SELECT pg_catalog.set_config('search_path', '{SEARCH_PATH}', true), "
    "pg_catalog.set_config('lock_timeout', %s, true)"
)


def _pin_transaction(cursor) -> None:
    cursor.execute(_PIN_FOR_TRANSACTION, (f"{round(lock_timeout() * 1000)}ms",))


def guest_engine(engine: Engine) -> Engine:
    """A view of a caller's engine (same pool) whose transactions run under the pinned search_path."""
    guest = engine.execution_options()  # an OptionEngine: its own event listeners, the caller's pool

    @event.listens_for(guest, "begin")
    def pin(connection) -> None:
        raw = connection.connection.driver_connection
        if not raw.autocommit:
            with raw.cursor() as cursor:
                _pin_transaction(cursor)

    return guest


def read(engine: Engine, owns_engine: bool, work: Callable[[psycopg.Cursor], T]) -> T:
    """Run ``work`` on a pooled connection's cursor in autocommit, again on a fresh one if the first was dead.

    Raw psycopg, not SQLAlchemy: the hot query path is one prepared statement in one round
    trip, with no BEGIN or ROLLBACK around it (and on a caller's engine, one pipeline).
    """
    for attempt in (1, 2):
        pooled = engine.raw_connection()
        raw = pooled.driver_connection
        try:
            raw.autocommit = True
            with raw.cursor() as cursor:
                if not owns_engine:  # the caller's session: pin the path for this read only
                    with raw.pipeline(), raw.transaction():
                        _pin_transaction(cursor)
                        return work(cursor)
                return work(cursor)
        except psycopg.OperationalError as exc:
            if raw.broken:
                pooled.invalidate(exc)  # closed, not reset: a rollback on it would fail and be logged
            if not raw.broken or attempt == 2 or isinstance(exc, ServerSilentError):
                raise  # a server found silent is not asked again: that would wait out a connect timeout
        finally:
            if not raw.broken:
                raw.autocommit = False
            pooled.close()
    raise AssertionError("unreachable")


def with_cursor(engine: Engine, work: Callable[[psycopg.Cursor], T]) -> T:
    """``work`` with a raw cursor of a short transaction of its own."""
    with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
        return work(cursor)
