"""The persistent index: fingerprints in PostgreSQL, exact radius search through ``simhash.near``.

The store knows nothing of files or terminals. It takes a URL (or an engine), keeps one
scheme, writes in batches through COPY, and answers single and batched queries in one
round trip each. Search runs in the database (``simhash.near``), so applications that
speak SQL get exactly the answers the library gets.

>>> with Store("postgresql://localhost/news") as store:            # doctest: +SKIP
...     store.add([NewDocument("a.txt", fingerprint("..."))])
...     store.query(fingerprint("..."), max_distance=3)
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError

from . import clusters
from . import distributed as citus
from . import maintenance, migrate
from .bits import from_signed, to_hex, to_signed
from .config import SEARCH_PATH, lock_timeout, network_timeout, redact, resolve_url, scrub, secrets_of, session_arguments
from .errors import (
    DatabaseError,
    DatabaseUnavailableError,
    InvalidValueError,
    LockTimeoutError,
    PermissionDeniedError,
    SchemeError,
    SchemeMismatchError,
    SimhashStoreError,
    SimhashStoreWarning,
)
from .pairs import near_clusters, near_groups, near_pairs
from .scheme import DEFAULT, DEFAULT_MAX_DISTANCE, Scheme, get_scheme
from .validation import (
    INT4,
    INT8,
    MAX_KEY_BYTES,  # re-exported: callers know the limit from the store
    validate_integer,
    validate_key,
    validate_keys,
    validate_metadata,
    validate_optional_bytes,
    validate_optional_text,
)
from .validation import validate_distance as _validate_distance
from .validation import validate_fingerprint as _validate_fingerprint
from .validation import validate_seconds as _validate_seconds

DEFAULT_BATCH_SIZE = 5000
DEFAULT_LOAD_BATCH_SIZE = 50_000  # a load into a store it may not rebuild: rows per transaction
DEFAULT_LOCK_TIMEOUT = 10.0  # seconds a bulk load or VACUUM waits for the table before giving up
# Advisory locks of the project: the two-integer key space, first key "SIMH", so no other
# application's single-bigint locks (or hashtext() keys) collide with ours by chance.
ADVISORY_LOCK_SPACE = 0x53494D48  # "SIMH"
# Serialises check-then-insert of --skip-near-duplicates writers across processes.
SKIP_NEAR_DUPLICATES_LOCK = (ADVISORY_LOCK_SPACE, 1)
_RETRYABLE = {"40P01", "40001"}  # deadlock detected, serialization failure
# A pooled connection idle longer than this is pinged before use (a restarted server leaves
# dead ones in the pool); one in steady use is not, so that a query stays one round trip.
PING_AFTER_IDLE_SECONDS = 1.0

# Queries run on a pooled connection in autocommit, as prepared statements: one round trip,
# no BEGIN or ROLLBACK around them. max_results NULL means all; it is applied inside the
# function, nearest first, so a limited query does not build the full answer.
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


T = TypeVar("T")


@dataclass(frozen=True)
class NewDocument:
    """A document to store: its key and fingerprint, and optionally what change detection needs."""

    key: str
    fingerprint: int
    digest: bytes | None = None
    length: int | None = None
    # Size and modification time of the file it came from ("size:mtime_ns"): a re-run
    # that finds the same stamp knows the file is unchanged without reading it.
    stamp: str | None = None
    metadata: dict[str, Any] | None = None


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


@dataclass(frozen=True)
class StoredDocument:
    id: int
    key: str
    fingerprint: int
    digest: bytes | None
    length: int | None
    metadata: dict[str, Any] | None
    added_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    distance: int


@dataclass(frozen=True)
class IdenticalGroup:
    """Two or more stored documents with one fingerprint (distance 0 from each other)."""

    keys: list[str]  # sorted

    @property
    def distance(self) -> int:
        return 0


@dataclass(frozen=True)
class RemoveResult:
    removed: list[str]
    missing: list[str]  # keys given that were not stored


@dataclass(frozen=True)
class SkippedNearDuplicate:
    key: str
    match: Match


@dataclass
class AddResult:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    near_duplicates: list[SkippedNearDuplicate] = field(default_factory=list)

    def merge(self, other: "AddResult") -> None:
        self.added += other.added
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.near_duplicates.extend(other.near_duplicates)


# Insert or update from a staging table (``rows`` selects at most one row per key); returns
# the counts of inserted and updated rows. An unchanged row is left alone.
_UPSERT = """
    WITH written AS (
        INSERT INTO simhash.documents AS d (key, fingerprint, digest, length, metadata, stamp)
        {rows}
        ON CONFLICT (key) DO UPDATE
            SET fingerprint = excluded.fingerprint, digest = excluded.digest,
                length = excluded.length, metadata = excluded.metadata, stamp = excluded.stamp,
                updated_at = excluded.updated_at
            WHERE (d.fingerprint, d.digest, d.length, d.metadata, d.stamp)
                  IS DISTINCT FROM (excluded.fingerprint, excluded.digest, excluded.length,
                                    excluded.metadata, excluded.stamp)
        RETURNING (xmax = 0) AS inserted
    )
    SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM written
"""


def _validated(document: NewDocument) -> NewDocument:
    """The document, if every field fits its column; else the field's SimhashStoreError."""
    validate_key(document.key)
    _validate_fingerprint(document.fingerprint)
    if document.length is not None:
        validate_integer(document.length, f"length of {document.key!r}", 0, INT4[1])
    validate_optional_bytes(document.digest, f"digest of {document.key!r}")
    validate_optional_text(document.stamp, f"stamp of {document.key!r}")
    try:
        validate_metadata(document.metadata)
    except InvalidValueError as exc:
        raise InvalidValueError(f"document {document.key!r}: {exc}") from None
    return document


def _copy_documents(cursor: psycopg.Cursor, table: str, documents: Iterable[NewDocument], *, freeze: bool = False) -> int:
    """Binary COPY of (already validated) documents into ``table``; returns how many.

    ``freeze``: rows go in frozen and all-visible, for a table emptied by TRUNCATE in this transaction.
    """
    count = 0
    statement = "COPY {} (key, fingerprint, digest, length, metadata, stamp) FROM STDIN (FORMAT BINARY{})"
    with cursor.copy(sql.SQL(statement).format(sql.SQL(table), sql.SQL(", FREEZE" if freeze else ""))) as copy:
        copy.set_types(["text", "int8", "bytea", "int4", "jsonb", "text"])
        for d in documents:
            metadata = Jsonb(d.metadata) if d.metadata is not None else None
            copy.write_row((d.key, to_signed(d.fingerprint), d.digest, d.length, metadata, d.stamp))
            count += 1
    return count


def _check_query_options(max_distance: int, limit: int | None, method: str) -> None:
    _validate_distance(max_distance)
    if method not in ("auto", "probe", "scan"):
        raise ValueError(f"method must be auto, probe or scan, not {method!r}")
    if limit is not None:
        validate_integer(limit, "limit", 1, INT8[1])  # a bigint in SQL: refused here, not by the driver


def _database_errors(method: Callable[..., T]) -> Callable[..., T]:
    """Turn lost or refused connections, and lock or statement timeouts, into one clear error."""

    @functools.wraps(method)
    def wrapper(self: "Store", *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (DBAPIError, psycopg.Error) as exc:
            driver_error = exc.orig if isinstance(exc, DBAPIError) else exc
            # Cleaning up after a silent server fails in turn ("the connection is closed"): say why.
            driver_error = _silent_server_in(exc) or driver_error
            message = f"database {self.display_url}: {scrub(_first_line(driver_error or exc), self._secrets)}"
            sqlstate = getattr(driver_error, "sqlstate", None)
            if sqlstate == "55P03":
                raise LockTimeoutError(
                    f"{message} (waited {lock_timeout():g} s for a lock another session holds; "
                    "SIMHASH_STORE_LOCK_TIMEOUT sets the wait)"
                ) from None
            if sqlstate == "57014":
                raise DatabaseError(f"{message} (SIMHASH_STORE_STATEMENT_TIMEOUT or the server's statement_timeout)") from None
            if sqlstate == "42501":
                raise PermissionDeniedError(message) from None
            if isinstance(exc, DBAPIError) and exc.connection_invalidated:
                raise DatabaseUnavailableError(f"{message} (connection lost)") from None
            if isinstance(exc, (OperationalError, psycopg.OperationalError)):
                raise DatabaseUnavailableError(message) from None
            raise

    return wrapper


class _ServerSilentError(psycopg.OperationalError):
    """The server sent nothing for the network timeout and took no new connection."""


def _silent_server_in(error: BaseException | None) -> _ServerSilentError | None:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, _ServerSilentError):
            return error
        if isinstance(error, DBAPIError) and isinstance(error.orig, _ServerSilentError):
            return error.orig
        error = error.__cause__ or error.__context__
    return None


class _WatchedConnection(psycopg.Connection):
    """A psycopg connection that notices a server gone silent, whatever the transport.

    TCP keepalives catch a partitioned network or a frozen host, but not a server whose
    host still answers TCP while PostgreSQL does not (a stopped postmaster, a proxy that
    stopped forwarding), and not a Unix socket. So: once the server has sent nothing for
    ``silence`` seconds while an answer is awaited, a second connection is tried; if that
    cannot be made within the connect timeout either, the wait ends with
    ``OperationalError`` and this connection is closed. A server that is merely busy
    (an index build) accepts the second connection, and the wait goes on.
    """

    silence: float = 0.0
    probe_arguments: dict[str, Any] = {}

    def wait(self, gen, *args, **kwargs):
        if self.silence <= 0:
            return super().wait(gen, *args, **kwargs)
        return super().wait(self._watched(gen), *args, **kwargs)

    def _watched(self, gen):
        heard = time.monotonic()
        try:
            state = next(gen)
            while True:
                ready = yield state
                now = time.monotonic()
                if ready:
                    heard = now
                elif now - heard >= self.silence:
                    if not self._server_answers():
                        self.pgconn.finish()
                        raise _ServerSilentError(
                            f"the server sent nothing for {self.silence:g} s and takes no new connection: "
                            f"it is unreachable or frozen (SIMHASH_STORE_NETWORK_TIMEOUT sets the wait)"
                        )
                    heard = time.monotonic()
                state = gen.send(ready)
        except StopIteration as done:
            return done.value

    def _server_answers(self) -> bool:
        arguments = {**self.probe_arguments, "connect_timeout": max(2, min(10, round(self.silence / 2)))}
        try:
            psycopg.connect(**arguments).close()
        except psycopg.OperationalError as exc:
            return "timeout expired" not in str(exc)
        return True


def _watched_connections(engine: Engine, silence: float) -> None:
    """The engine's connections are :class:`_WatchedConnection` (when ``silence`` > 0)."""
    if silence <= 0:
        return

    @event.listens_for(engine, "do_connect")
    def connect(dialect, record, cargs, cparams):
        connection = _WatchedConnection.connect(*cargs, **cparams)
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
            # through its wait loop, so a silent server is noticed (_WatchedConnection).
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


def _guest_engine(engine: Engine) -> Engine:
    """A view of a caller's engine (same pool) whose transactions run under the pinned search_path."""
    guest = engine.execution_options()  # an OptionEngine: its own event listeners, the caller's pool

    @event.listens_for(guest, "begin")
    def pin(connection) -> None:
        raw = connection.connection.driver_connection
        if not raw.autocommit:
            with raw.cursor() as cursor:
                _pin_transaction(cursor)

    return guest


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


class Store:
    """A near-duplicate index in PostgreSQL.

    ``url``: a PostgreSQL URL, an SQLAlchemy engine, or None for ``SIMHASH_STORE_URL``
    and else the embedded server. ``scheme``: the scheme this caller computes
    fingerprints with; None means whatever the store was created with (the default
    scheme for a new store). Nothing connects until the first call.
    """

    def __init__(self, url: str | URL | Engine | None = None, *, scheme: Scheme | str | None = None) -> None:
        self._requested_scheme = get_scheme(scheme) if scheme is not None else None
        if self._requested_scheme is not None and self._requested_scheme.bits != 64:
            raise SchemeError(
                f"the PostgreSQL store keeps 64-bit fingerprints; scheme {self._requested_scheme.name!r} "
                f"makes {self._requested_scheme.bits}-bit ones"
            )
        self._url = url
        self._engine: Engine | None = _guest_engine(url) if isinstance(url, Engine) else None
        self._owns_engine = self._engine is None
        self._secrets: list[str] = []
        self._scheme: Scheme | None = None
        self._ready = False
        # Upkeep: rows this store changed since it last vacuumed, and the table's size then.
        self._changes_since_optimize = 0
        self._rows_at_optimize: float | None = None
        self._warned_about_optimize = False

    # ------------------------------------------------------------ connection

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            url = resolve_url(self._url)  # type: ignore[arg-type]
            self._secrets = secrets_of(url)
            engine = create_engine(url, pool_size=2, max_overflow=4, connect_args=session_arguments(url))
            _watched_connections(engine, network_timeout())
            _ping_when_idle(engine)
            self._engine = engine
        return self._engine

    @property
    def display_url(self) -> str:
        """The database URL without its password, for messages."""
        if self._engine is not None:
            return redact(self._engine.url)
        if self._url is None or isinstance(self._url, (str, URL)):
            try:
                return redact(self._url if self._url is not None else "embedded")
            except Exception:  # noqa: BLE001 - a bad URL must not break an error message
                return "<database>"
        return "<database>"

    def close(self) -> None:
        if self._engine is not None and self._owns_engine:
            self._engine.dispose()
            self._engine = None
        self._ready = False

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ------------------------------------------------------------ schema and scheme

    @_database_errors
    def init(self, scheme: Scheme | str | None = None, *, distributed: bool = False) -> Scheme:
        """Create or upgrade the schema and record the scheme (idempotent); returns the store's scheme.

        ``distributed``: on a Citus coordinator, spread the store over the workers (see
        :mod:`simhash_store.distributed`); a server without Citus is refused before anything changes.
        """
        if scheme is not None:
            self._requested_scheme = get_scheme(scheme)
        self._ready = False
        if distributed:
            citus.check_server(self.engine)
            recorded = self._prepare(record=True)
            citus.distribute_store(self.engine)
            return recorded
        return self._prepare(record=True)

    @_database_errors
    def upgrade(self) -> str:
        """Create the schema, or bring it to this version's newest revision keeping every row; returns it.

        Only this, :meth:`init` and the writes change the schema: a read of a store at an
        older revision raises :class:`StoreOutdatedError` instead.
        """
        self._upgrade_schema()
        self._ready = False
        return migrate.HEAD_REVISION

    @property
    def scheme(self) -> Scheme:
        """The scheme of the store (recorded, or the one that will be recorded on first write).

        A read: raises :class:`StoreNotFoundError` where there is no store, and never creates one.
        """
        return self._prepare(record=False)

    def _upgrade_schema(self) -> None:
        revision = migrate.current_revision(self.engine)
        migrate.check_upgradable(revision, self.display_url)
        if revision != migrate.HEAD_REVISION:
            migrate.upgrade(self.engine)

    @_database_errors
    def _prepare(self, record: bool) -> Scheme:
        """Ready to write (``record``: the schema created or upgraded, the scheme recorded) or to
        read (the schema checked, never changed); the store's scheme."""
        if self._ready and (self._scheme is not None or not record):
            return self._scheme or self._requested_scheme or DEFAULT
        if record:
            self._upgrade_schema()
        else:
            migrate.check_readable(migrate.current_revision(self.engine), self.display_url)
        with self.engine.begin() as connection:
            stored = self._stored_scheme(connection)
            if stored is None and record:
                wanted = self._requested_scheme or DEFAULT
                connection.execute(
                    text(
                        "INSERT INTO simhash.store_info (singleton, scheme_name, scheme) "
                        "VALUES (true, :name, CAST(:scheme AS jsonb)) ON CONFLICT (singleton) DO NOTHING"
                    ),
                    {"name": wanted.name, "scheme": wanted.to_json()},
                )
                stored = self._stored_scheme(connection)
        if stored is not None and self._requested_scheme is not None and stored != self._requested_scheme:
            raise SchemeMismatchError(
                f"the store was created with scheme {stored.label}, not {self._requested_scheme.label}; "
                "fingerprints of different schemes cannot be compared (use another database, "
                f"or --scheme {stored.name})"
            )
        self._scheme = stored
        self._ready = True
        return stored or self._requested_scheme or DEFAULT

    @staticmethod
    def _stored_scheme(connection: Connection) -> Scheme | None:
        row = connection.execute(text("SELECT scheme FROM simhash.store_info")).first()
        if row is None:
            return None
        try:
            return Scheme.from_dict(row.scheme)
        except SchemeError as exc:
            raise SchemeError(f"the store records a scheme this version cannot read: {exc}") from None

    # ------------------------------------------------------------ writing

    @_database_errors
    def add(
        self,
        documents: Iterable[NewDocument],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        skip_near_duplicates: bool = False,
        max_distance: int = DEFAULT_MAX_DISTANCE,
    ) -> AddResult:
        """Store documents, each batch in one transaction through COPY.

        A key already stored with the same fingerprint and digest is left alone
        (``unchanged``); with another, it is updated. With ``skip_near_duplicates``,
        a document is stored only if nothing within ``max_distance`` is stored yet,
        counting documents earlier in the same call; writers doing this in several
        processes take turns on an advisory lock, so two near-duplicates added at
        the same time cannot both get in. A call that changes more than a few percent
        of the store leaves it query-ready (see :meth:`optimize`) before it returns.
        """
        batch_size = validate_integer(batch_size, "batch size", 1, INT4[1])
        _validate_distance(max_distance)
        self._prepare(record=True)
        result = self._add_in_batches(documents, batch_size, skip_near_duplicates, max_distance)
        self._optimize_if_grown()
        return result

    def _add_in_batches(
        self, documents: Iterable[NewDocument], batch_size: int, skip_near_duplicates: bool, max_distance: int
    ) -> AddResult:
        result = AddResult()
        batch: list[NewDocument] = []
        for document in documents:
            batch.append(document)
            if len(batch) >= batch_size:
                result.merge(self._add_batch(batch, skip_near_duplicates, max_distance))
                batch = []
        if batch:
            result.merge(self._add_batch(batch, skip_near_duplicates, max_distance))
        return result

    @_database_errors
    def load(
        self,
        documents: Iterable[NewDocument],
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        batch_size: int = DEFAULT_LOAD_BATCH_SIZE,
        index_memory: str = "1GB",
    ) -> AddResult:
        """Bulk load (importing millions of existing fingerprints), leaving the store query-ready.

        Into an empty store that this role owns and that nothing else references (no other
        application's foreign key, view rule or trigger hangs off it), all documents go in
        one transaction: COPY FREEZE into the bare table, then the key, id and block indexes
        are built over the rows, many times cheaper than inserting each row into six B-trees.
        That needs the table to itself: the exclusive lock is asked for in short attempts, so
        readers queue behind it for at most a fraction of a second at a time, and after
        ``lock_timeout`` seconds the load gives up with :class:`LockTimeoutError`, storing
        nothing. Meanwhile queries and other writers wait; an interrupted load stores nothing.

        Anywhere else (rows already stored, another owner, something referencing the
        table) nothing is dropped: the documents go in with the indexes in place, in
        transactions of ``batch_size``, as :meth:`add` does. Either way keys repeated in the
        input keep the last, and the table is vacuumed and analysed before this returns.
        ``index_memory`` is ``maintenance_work_mem`` for the index builds.
        """
        lock_timeout = _validate_seconds(lock_timeout, "lock timeout")
        batch_size = validate_integer(batch_size, "batch size", 1, INT4[1])
        self._prepare(record=True)
        documents = iter(documents)
        first = next(documents, None)
        if first is None:
            return AddResult()  # nothing to load: no lock, no upkeep
        documents = itertools.chain([first], documents)
        result = None
        if not self._with_maintenance_connection(maintenance.rebuild_blockers):
            # Checked as they stream in, before COPY sends them (the batches check their own).
            result = self._load_rebuilding(map(_validated, documents), lock_timeout, index_memory)
        if result is None:
            result = self._add_in_batches(documents, batch_size, False, DEFAULT_MAX_DISTANCE)
        self._optimize_if_grown()
        return result

    def _load_rebuilding(self, documents: Iterable[NewDocument], lock_timeout: float, index_memory: str) -> AddResult | None:
        """The bulk path into an empty table nothing references; None (nothing read) if, once
        locked, the table no longer qualifies."""
        with self.engine.begin() as connection:
            raw = connection.connection.driver_connection
            with raw.cursor() as cursor:
                maintenance.lock_exclusively(cursor, lock_timeout, "a bulk load")
                if maintenance.rebuild_blockers(cursor):  # someone wrote or referenced it meanwhile
                    return None
                cursor.execute("SELECT set_config('maintenance_work_mem', %s, true)", (index_memory,))
                indexes = self._drop_indexes_and_constraints(cursor)
                received = _copy_documents(cursor, "simhash.documents", documents, freeze=True)
                repeated = self._rebuild_indexes_and_constraints(cursor, indexes)
                # Statistics now; COPY FREEZE already set the visibility map (PostgreSQL 14+).
                cursor.execute("ANALYZE simhash.documents")
        # Analysed and all-visible, unless repeated keys left deleted rows that only VACUUM clears.
        self._rows_at_optimize = float(received - repeated)
        self._changes_since_optimize = received if repeated else 0
        return AddResult(added=received - repeated, unchanged=repeated)

    @staticmethod
    def _drop_indexes_and_constraints(cursor: psycopg.Cursor) -> list[tuple[str, str]]:
        """Empty the table (TRUNCATE, so COPY may FREEZE) and drop its key, id and block indexes; returns how
        to build each again: (constraint name or None, definition)."""
        cursor.execute("TRUNCATE simhash.documents")
        cursor.execute(
            "SELECT conname, pg_catalog.pg_get_constraintdef(oid) FROM pg_catalog.pg_constraint "
            "WHERE conrelid = 'simhash.documents'::regclass AND contype IN ('p', 'u') ORDER BY conname"
        )
        constraints = cursor.fetchall()
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_catalog.pg_indexes WHERE schemaname = 'simhash' "
            "AND tablename = 'documents' AND indexname NOT IN (SELECT conname FROM pg_catalog.pg_constraint "
            "WHERE conrelid = 'simhash.documents'::regclass) ORDER BY indexname"
        )
        indexes = cursor.fetchall()
        for name, _ in constraints:
            cursor.execute(sql.SQL("ALTER TABLE simhash.documents DROP CONSTRAINT {}").format(sql.Identifier(name)))
        for name, _ in indexes:
            cursor.execute(sql.SQL("DROP INDEX simhash.{}").format(sql.Identifier(name)))
        return [(name, definition) for name, definition in constraints] + [(None, definition) for _, definition in indexes]

    @staticmethod
    def _rebuild_indexes_and_constraints(cursor: psycopg.Cursor, definitions: list[tuple[str | None, str]]) -> int:
        """Build what :meth:`_drop_indexes_and_constraints` dropped; if keys repeat, only the last
        row of each (identity ids follow input order) is kept. Returns how many rows were dropped."""
        constraints = [(name, definition) for name, definition in definitions if name is not None]
        # One statement each: Citus runs no ADD CONSTRAINT beside other subcommands.
        add_constraints = [
            sql.SQL("ALTER TABLE simhash.documents ADD CONSTRAINT {} {}").format(sql.Identifier(name), sql.SQL(definition))
            for name, definition in constraints
        ]
        repeated = 0
        cursor.execute("SAVEPOINT simhash_constraints")
        try:
            for statement in add_constraints:
                cursor.execute(statement)
        except psycopg.errors.UniqueViolation:
            cursor.execute("ROLLBACK TO SAVEPOINT simhash_constraints")
            cursor.execute(
                "DELETE FROM simhash.documents d USING "
                "(SELECT key, max(id) AS last FROM simhash.documents GROUP BY key HAVING count(*) > 1) r "
                "WHERE d.key = r.key AND d.id < r.last"
            )
            repeated = cursor.rowcount
            for statement in add_constraints:
                cursor.execute(statement)
        for name, definition in definitions:
            if name is None:
                cursor.execute(definition)
        return repeated

    @_database_errors
    def add_batch(
        self,
        documents: Sequence[NewDocument],
        *,
        skip_near_duplicates: bool = False,
        max_distance: int = DEFAULT_MAX_DISTANCE,
    ) -> AddResult:
        """Store one batch in one transaction (the unit of progress of an interrupted run).

        Once the batches written through this store add up to more than a few percent of
        it, the store is made query-ready (see :meth:`optimize`) before this returns.
        """
        _validate_distance(max_distance)
        self._prepare(record=True)
        result = self._add_batch(documents, skip_near_duplicates, max_distance)
        self._optimize_if_grown()
        return result

    def _add_batch(self, documents: Sequence[NewDocument], skip_near_duplicates: bool, max_distance: int) -> AddResult:
        latest: dict[str, NewDocument] = {}
        for document in map(_validated, documents):
            latest.pop(document.key, None)  # the last of repeated keys wins, in its place
            latest[document.key] = document
        # Input order matters to --skip-near-duplicates (the first of near-duplicates is kept);
        # the INSERT sorts by key, so concurrent writers lock rows in one order.
        ordered = list(latest.values())
        repeated = len(documents) - len(ordered)
        result = self._retry(lambda: self._write(ordered, skip_near_duplicates, max_distance))
        result.unchanged += repeated
        self._changes_since_optimize += result.added + result.updated
        return result

    def _retry(self, work: Callable[[], T], attempts: int = 6) -> T:
        """``work`` again after a deadlock or serialization failure, and after an id taken by a row
        another application inserted with an explicit id (the sequence is moved past it first)."""
        for attempt in range(attempts):
            try:
                return work()
            except (DBAPIError, psycopg.Error) as exc:  # through SQLAlchemy, or the raw cursor of COPY
                error = exc.orig if isinstance(exc, DBAPIError) else exc
                sqlstate = getattr(error, "sqlstate", None)
                id_taken = sqlstate == "23505" and getattr(getattr(error, "diag", None), "constraint_name", None) == "pk_documents"
                if not (sqlstate in _RETRYABLE or id_taken) or attempt == attempts - 1:
                    raise
                if id_taken:
                    with self.engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
                        maintenance.resync_id_sequence(cursor)
                else:
                    time.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    def _write(self, documents: list[NewDocument], skip_near_duplicates: bool, max_distance: int) -> AddResult:
        result = AddResult()
        with self.engine.begin() as connection:
            if skip_near_duplicates and documents:
                self._take_skip_near_duplicates_lock(connection)
                documents, result.near_duplicates = self._drop_near_duplicates(connection, documents, max_distance)
            if not documents:
                return result
            raw = connection.connection.driver_connection
            with raw.cursor() as cursor:
                cursor.execute(
                    "CREATE TEMP TABLE IF NOT EXISTS simhash_incoming "
                    "(key text, fingerprint bigint, digest bytea, length integer, metadata jsonb, stamp text) "
                    "ON COMMIT DELETE ROWS"
                )
                _copy_documents(cursor, "simhash_incoming", documents)
                # Sorted by key, so concurrent writers lock rows in one order.
                cursor.execute(
                    _UPSERT.format(
                        rows="SELECT key, fingerprint, digest, length, metadata, stamp FROM simhash_incoming ORDER BY key"
                    )
                )
                added, updated = cursor.fetchone()
                clusters.assign(cursor, [d.key for d in documents])  # same transaction: new rows join clusters
        result.added, result.updated = added, updated
        result.unchanged += len(documents) - added - updated
        return result

    def _take_skip_near_duplicates_lock(self, connection: Connection) -> None:
        """Wait (at most the lock timeout) for this transaction's turn to check and insert."""
        space, key = SKIP_NEAR_DUPLICATES_LOCK
        try:
            connection.execute(text("SELECT pg_catalog.pg_advisory_xact_lock(:space, :key)"), {"space": space, "key": key})
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) != "55P03":
                raise
            with self.engine.connect() as other:  # this transaction is aborted
                holders = other.execute(
                    text(
                        "SELECT a.pid, a.usename, a.application_name FROM pg_catalog.pg_locks l "
                        "JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid "
                        "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
                        "AND l.classid = CAST(:space AS pg_catalog.oid) AND l.objid = CAST(:key AS pg_catalog.oid) "
                        "AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())"
                    ),
                    {"space": space, "key": key},
                ).all()
            who = ", ".join(f"pid {pid} (role {user}{', ' + app if app else ''})" for pid, user, app in holders)
            raise LockTimeoutError(
                f"database {self.display_url}: another session held the --skip-near-duplicates lock "
                f"(advisory lock {space}, {key}) for over {lock_timeout():g} s{': ' + who if who else ''}; "
                "nothing of this batch was stored (SIMHASH_STORE_LOCK_TIMEOUT sets the wait)"
            ) from None

    def _drop_near_duplicates(
        self, connection: Connection, documents: list[NewDocument], max_distance: int
    ) -> tuple[list[NewDocument], list[SkippedNearDuplicate]]:
        """Keep documents with no near-duplicate stored or kept before them (under the advisory lock)."""
        with connection.connection.driver_connection.cursor() as cursor:
            matches = self._query_many(cursor, [d.fingerprint for d in documents], max_distance, None)
        kept: list[NewDocument] = []
        kept_values = np.empty(len(documents), dtype=np.uint64)
        skipped: list[SkippedNearDuplicate] = []
        for document, found in zip(documents, matches):
            others = [m for m in found if m.key != document.key]
            if others:
                skipped.append(SkippedNearDuplicate(document.key, others[0]))
                continue
            if kept:
                distances = np.bitwise_count(kept_values[: len(kept)] ^ np.uint64(document.fingerprint))
                nearest = int(np.argmin(distances))
                if distances[nearest] <= max_distance:
                    twin = kept[nearest]
                    skipped.append(
                        SkippedNearDuplicate(document.key, Match(twin.key, twin.fingerprint, int(distances[nearest]), 0))
                    )
                    continue
            kept_values[len(kept)] = document.fingerprint
            kept.append(document)
        return kept, skipped

    @_database_errors
    def remove(self, keys: str | Iterable[str]) -> "RemoveResult":
        """Delete documents by key (a string is one key); says which were removed and which were not stored.

        >>> store.remove(["a.txt", "gone.txt"])                 # doctest: +SKIP
        RemoveResult(removed=['a.txt'], missing=['gone.txt'])
        """
        wanted = list(dict.fromkeys(validate_keys(keys)))
        self._prepare(record=False)
        with self.engine.begin() as connection:
            removed = set(
                connection.execute(
                    text("DELETE FROM simhash.documents WHERE key = ANY(CAST(:keys AS text[])) RETURNING key"),
                    {"keys": wanted},
                ).scalars()
            )
        return RemoveResult([k for k in wanted if k in removed], [k for k in wanted if k not in removed])

    # ------------------------------------------------------------ upkeep

    @_database_errors
    def optimize(self, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> maintenance.Maintenance:
        """``VACUUM (ANALYZE)`` of the documents: fresh statistics and visibility map, so block
        probes are index-only scans with the right plan. Loads and large adds do this
        themselves; run it after a restore from a dump (statistics are not dumped) or after
        other applications bulk-insert. A role that may not vacuum falls back to ANALYZE;
        returns what was done and, if not everything, why.
        """
        lock_timeout = _validate_seconds(lock_timeout, "lock timeout")
        self._prepare(record=False)
        return self._optimize(lock_timeout)

    def _optimize(self, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> maintenance.Maintenance:
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            raw = connection.connection.driver_connection
            done = maintenance.vacuum_analyze(raw, lock_timeout)
            self._rows_at_optimize = maintenance.estimated_rows(raw)
        self._changes_since_optimize = 0
        return done

    def _optimize_if_grown(self) -> None:
        """After a write: VACUUM (ANALYZE) once the rows changed through this store since the last one
        exceed a few percent of the table; a role that may not says so once, as a warning."""
        if self._changes_since_optimize < maintenance.MIN_ROWS:
            return
        if self._rows_at_optimize is None:
            self._rows_at_optimize = self._with_maintenance_connection(maintenance.estimated_rows)
        if not maintenance.needs_maintenance(self._changes_since_optimize, self._rows_at_optimize):
            return
        done = self._optimize()
        if done.reason and not self._warned_about_optimize:
            self._warned_about_optimize = True
            what = "analyzed it only" if done.analyzed else "its statistics and visibility map are stale until autovacuum"
            warnings.warn(
                f"could not vacuum {maintenance.TABLE} after the write ({done.reason}); {what}: "
                "queries may be slow until its owner runs `simhash-store optimize`",
                SimhashStoreWarning,
                stacklevel=4,
            )

    def _with_maintenance_connection(self, work: Callable[[Any], T]) -> T:
        """``work`` with a cursor of a short transaction of its own."""
        with self.engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
            return work(cursor)

    # ------------------------------------------------------------ reading

    def _read(self, work: Callable[[psycopg.Cursor], T]) -> T:
        """Run ``work`` on a pooled connection's cursor in autocommit, again on a fresh one if the first was dead."""
        for attempt in (1, 2):
            pooled = self.engine.raw_connection()
            raw = pooled.driver_connection
            try:
                raw.autocommit = True
                with raw.cursor() as cursor:
                    if not self._owns_engine:  # the caller's session: pin the path for this read only
                        with raw.pipeline(), raw.transaction():
                            _pin_transaction(cursor)
                            return work(cursor)
                    return work(cursor)
            except psycopg.OperationalError as exc:
                if raw.broken:
                    pooled.invalidate(exc)  # closed, not reset: a rollback on it would fail and be logged
                if not raw.broken or attempt == 2 or isinstance(exc, _ServerSilentError):
                    raise  # a server found silent is not asked again: that would wait out a connect timeout
            finally:
                if not raw.broken:
                    raw.autocommit = False
                pooled.close()
        raise AssertionError("unreachable")

    @_database_errors
    def query(
        self, fingerprint: int, max_distance: int = DEFAULT_MAX_DISTANCE, *, limit: int | None = None, method: str = "auto"
    ) -> list[Match]:
        """Stored documents within ``max_distance`` bits of a fingerprint, nearest first (exact)."""
        _check_query_options(max_distance, limit, method)
        signed = to_signed(_validate_fingerprint(fingerprint))
        self._prepare(record=False)
        parameters = {"fingerprint": signed, "k": max_distance, "method": method, "limit": _max_results(limit)}
        rows = self._read(lambda cursor: cursor.execute(_NEAR, parameters, prepare=True).fetchall())
        return [Match(key, from_signed(value), distance, id_) for id_, key, value, distance in rows]

    @_database_errors
    def query_many(
        self,
        fingerprints: Sequence[int],
        max_distance: int = DEFAULT_MAX_DISTANCE,
        *,
        limit: int | None = None,
        method: str = "auto",
    ) -> list[list[Match]]:
        """:meth:`query` for many fingerprints in one round trip; results in the same order."""
        _check_query_options(max_distance, limit, method)
        self._prepare(record=False)
        return self._read(lambda cursor: self._query_many(cursor, fingerprints, max_distance, limit, method))

    @staticmethod
    def _query_many(
        cursor: psycopg.Cursor,
        fingerprints: Sequence[int],
        max_distance: int,
        limit: int | None,
        method: str = "auto",
    ) -> list[list[Match]]:
        _check_query_options(max_distance, limit, method)
        signed = [to_signed(_validate_fingerprint(f)) for f in fingerprints]
        results: list[list[Match]] = [[] for _ in signed]
        if not signed:
            return results
        parameters = {"fingerprints": signed, "k": max_distance, "method": method, "limit": _max_results(limit)}
        rows = cursor.execute(_NEAR_MANY, parameters, prepare=True).fetchall()
        for query_index, id_, key, value, distance in rows:
            results[query_index - 1].append(Match(key, from_signed(value), distance, id_))
        return results

    @_database_errors
    def get(self, key: str) -> StoredDocument | None:
        self._prepare(record=False)
        with self.engine.connect() as connection:
            row = connection.execute(
                text(
                    "SELECT id, key, fingerprint, digest, length, metadata, added_at, updated_at "
                    "FROM simhash.documents WHERE key = :key"
                ),
                {"key": key},
            ).first()
        if row is None:
            return None
        return StoredDocument(
            row.id, row.key, from_signed(row.fingerprint), row.digest, row.length, row.metadata, row.added_at, row.updated_at
        )

    @_database_errors
    def set_stamps(self, stamps: dict[str, str]) -> None:
        """Record new file stamps of stored documents whose content did not change."""
        self._prepare(record=True)
        with self.engine.begin() as connection:
            connection.execute(
                text(
                    "UPDATE simhash.documents AS d SET stamp = s.stamp "
                    "FROM unnest(CAST(:keys AS text[]), CAST(:stamps AS text[])) AS s(key, stamp) "
                    "WHERE d.key = s.key AND d.stamp IS DISTINCT FROM s.stamp"
                ),
                {"keys": list(stamps), "stamps": list(stamps.values())},
            )

    @_database_errors
    def versions(self, keys: Sequence[str]) -> dict[str, tuple[bytes | None, str | None]]:
        """(digest, stamp) of each of the given keys that is stored: how a re-run skips unchanged inputs."""
        self._prepare(record=False)
        with self.engine.connect() as connection:
            rows = connection.execute(
                text("SELECT key, digest, stamp FROM simhash.documents WHERE key = ANY(:keys)"), {"keys": list(keys)}
            )
            return {key: (bytes(digest) if digest is not None else None, stamp) for key, digest, stamp in rows}

    @_database_errors
    def count(self) -> int:
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return connection.execute(text("SELECT count(*) FROM simhash.documents")).scalar_one()

    @_database_errors
    def is_empty(self) -> bool:
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return connection.execute(text("SELECT NOT EXISTS (SELECT 1 FROM simhash.documents)")).scalar_one()

    # ------------------------------------------------------------ all pairs

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[psycopg.Connection]:
        """A read-only REPEATABLE READ transaction: every statement in it sees one snapshot, so a
        row another application deletes meanwhile is seen by all of them or by none."""
        self._prepare(record=False)
        with self.engine.connect().execution_options(isolation_level="REPEATABLE READ") as connection:
            with connection.begin():
                connection.execute(text("SET TRANSACTION READ ONLY"))
                yield connection.connection.driver_connection

    @staticmethod
    def _all_fingerprints(raw: psycopg.Connection) -> tuple[np.ndarray, np.ndarray]:
        """Every (id, fingerprint), read with one binary COPY straight into numpy."""
        buffer = bytearray()
        with raw.cursor() as cursor:
            with cursor.copy("COPY (SELECT id, fingerprint FROM simhash.documents) TO STDOUT (FORMAT BINARY)") as copy:
                for chunk in copy:
                    buffer += chunk
        if len(buffer) < 21:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)
        # Header: 11-byte signature, 4-byte flags, 4-byte extension length; trailer: int16 -1.
        body = memoryview(buffer)[19:-2]
        row = np.dtype([("fields", ">i2"), ("id_len", ">i4"), ("id", ">i8"), ("fp_len", ">i4"), ("fp", ">i8")])
        rows = np.frombuffer(body, dtype=row)
        return rows["id"].astype(np.int64), rows["fp"].astype(np.int64).view(np.uint64)

    @staticmethod
    def _keys_of(raw: psycopg.Connection, ids: np.ndarray) -> dict[int, str]:
        keys: dict[int, str] = {}
        with raw.cursor() as cursor:
            for start in range(0, len(ids), 50_000):
                chunk = [int(i) for i in ids[start : start + 50_000]]
                cursor.execute("SELECT id, key FROM simhash.documents WHERE id = ANY(%s)", (chunk,))
                keys.update(cursor.fetchall())
        return keys

    @_database_errors
    def near_duplicates(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> list[IdenticalGroup | Pair]:
        """Every near-duplicate among stored documents, exactly, from one snapshot, without n² blow-up.

        First each set of two or more documents sharing one fingerprint, as an
        :class:`IdenticalGroup` of all its keys; then each pair of distinct fingerprints
        within ``max_distance`` bits, nearest first, as a :class:`Pair` that names the
        first key of each side's group (standing for all of it). Memory grows with the
        documents and the distinct pairs, never with the square of a group.
        """
        _validate_distance(max_distance)
        with self._snapshot() as raw:
            ids, values = self._all_fingerprints(raw)
            grouped = near_groups(values, max_distance)
            group_of = np.empty(len(ids), dtype=np.int64)
            group_of[grouped.members] = np.repeat(np.arange(len(grouped.sizes)), grouped.sizes)
            wanted = np.zeros(len(grouped.sizes), dtype=bool)
            wanted[grouped.sizes > 1] = True
            wanted[grouped.left] = wanted[grouped.right] = True
            keys = self._keys_of(raw, ids[wanted[group_of]])
        names: dict[int, list[str]] = {}
        for position in np.flatnonzero(wanted[group_of]).tolist():
            names.setdefault(int(group_of[position]), []).append(keys[int(ids[position])])
        for members in names.values():
            members.sort()
        found: list[IdenticalGroup | Pair] = sorted(
            (IdenticalGroup(members) for members in names.values() if len(members) > 1), key=lambda g: g.keys
        )
        pairs = [
            Pair(*sorted((names[a][0], names[b][0])), d)
            for a, b, d in zip(grouped.left.tolist(), grouped.right.tolist(), grouped.distance.tolist())
        ]
        return found + sorted(pairs, key=lambda p: (p.distance, p.a, p.b))

    @_database_errors
    def pairs(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> list[Pair]:
        """Every pair of stored documents within ``max_distance`` bits, nearest first (exact), from one snapshot.

        Every pair is materialised: n documents sharing one fingerprint make n² / 2 of them.
        :meth:`near_duplicates` gives the same answer in memory proportional to n.
        """
        _validate_distance(max_distance)
        with self._snapshot() as raw:
            ids, values = self._all_fingerprints(raw)
            left, right, distance = near_pairs(values, max_distance)
            keys = self._keys_of(raw, np.unique(np.concatenate([ids[left], ids[right]])))
        return [
            Pair(*sorted((keys[int(ids[i])], keys[int(ids[j])])), int(d))
            for i, j, d in zip(left.tolist(), right.tolist(), distance.tolist())
        ]

    @_database_errors
    def clusters(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> list[list[str]]:
        """Groups of two or more documents connected by near-duplicate links, largest first (one snapshot)."""
        _validate_distance(max_distance)
        with self._snapshot() as raw:
            ids, values = self._all_fingerprints(raw)
            labels = near_clusters(values, max_distance)
            sizes = np.bincount(labels, minlength=len(labels))
            members = np.flatnonzero(sizes[labels] > 1)
            keys = self._keys_of(raw, ids[members])
        groups: dict[int, list[str]] = {}
        for position in members.tolist():
            groups.setdefault(int(labels[position]), []).append(keys[int(ids[position])])
        return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))

    # ------------------------------------------------------------ persistent clusters (see clusters.py)

    @_database_errors
    def recluster(self, max_distance: int | None = None) -> tuple[int, int]:
        """Cluster every stored document afresh, and keep clusters from now on; (documents, clusters).

        At ``max_distance``, else the store's cluster distance, else the default distance.
        Every later write then assigns clusters to its documents, at the cost of a radius search each.
        """
        if max_distance is not None:
            _validate_distance(max_distance)
        self._prepare(record=True)
        with self.engine.begin() as connection:
            raw = connection.connection.driver_connection
            if max_distance is None:
                with raw.cursor() as cursor:
                    max_distance = clusters.max_distance(cursor) or DEFAULT_MAX_DISTANCE
            return clusters.recluster(raw, max_distance)

    @_database_errors
    def cluster_state(self) -> tuple[int | None, bool]:
        """The distance at which this store clusters (None: it keeps no clusters), and whether any
        stored document has no cluster."""
        self._prepare(record=False)
        return self._read(clusters.state)

    @_database_errors
    def computed_clusters(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> list[clusters.Cluster]:
        """The clusters of two or more documents that :meth:`recluster` would keep at ``max_distance``, not stored."""
        _validate_distance(max_distance)
        with self._snapshot() as raw:
            ids, values = self._all_fingerprints(raw)
            return clusters.computed_clusters(ids, values, lambda chosen: self._keys_of(raw, chosen), max_distance)

    @_database_errors
    def prefer_longest(self, keys: Sequence[str]) -> int:
        """Make each stored key its cluster's representative if it is longer than the current one."""
        self._prepare(record=True)
        with self.engine.begin() as connection:
            with connection.connection.driver_connection.cursor() as cursor:
                return clusters.prefer_longest(cursor, keys)

    @_database_errors
    def sample_keys(self, count: int, seed: str = "") -> list[str]:
        """Up to ``count`` stored keys, the same ones for the same seed and contents (for calibrate)."""
        self._prepare(record=False)
        return self._read(lambda cursor: clusters.sample_keys(cursor, count, seed))

    @_database_errors
    def record_recommended_distance(self, max_distance: int) -> None:
        """Record the k that ``calibrate`` recommends in ``store_info.recommended_max_distance``."""
        _validate_distance(max_distance)
        self._prepare(record=True)
        with self.engine.begin() as connection:
            connection.execute(text("UPDATE simhash.store_info SET recommended_max_distance = :k"), {"k": max_distance})

    @_database_errors
    def memberships(self, keys: Sequence[str]) -> dict[str, clusters.Membership]:
        """Cluster, representative and distance to it of each stored key among ``keys``."""
        self._prepare(record=False)
        return self._read(lambda cursor: clusters.memberships(cursor, keys))

    @_database_errors
    def stored_clusters(self, min_size: int = 2) -> list[clusters.Cluster]:
        """The stored clusters of at least ``min_size`` documents, largest first."""
        self._prepare(record=False)
        return self._read(lambda cursor: clusters.stored_clusters(cursor, min_size))

    # ------------------------------------------------------------ access for other applications

    @_database_errors
    def grant_read_only(self, role: str) -> None:
        """Let an existing role search and read the store in SQL, and nothing more.

        It may call ``simhash.near`` and ``simhash.distance`` and read every table of the
        schema (including tables later migrations add); it cannot insert, update or delete.
        Raises :class:`PermissionDeniedError`, granting nothing, when this role may not
        grant that (PostgreSQL itself only warns "no privileges were granted").
        """
        from psycopg import sql

        if not role or "\x00" in role:
            raise ValueError("a role name must be a non-empty string")
        self._prepare(record=False)
        who = sql.Identifier(role)
        statements = [
            sql.SQL("GRANT USAGE ON SCHEMA simhash TO {}"),
            sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA simhash TO {}"),
            sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA simhash GRANT SELECT ON TABLES TO {}"),
            sql.SQL("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA simhash TO {}"),
        ]
        with self.engine.begin() as connection:
            raw = connection.connection.driver_connection
            exists = raw.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone()
            if not exists:
                raise PermissionDeniedError(f"there is no role {role!r}; create it first (CREATE ROLE ... LOGIN)")
            for statement in statements:
                raw.execute(statement.format(who))
            # Checked, not trusted: a GRANT by a role without the grant option succeeds with a warning.
            missing = raw.execute(
                "SELECT 'schema simhash' WHERE NOT pg_catalog.has_schema_privilege(%(role)s, 'simhash', 'USAGE') "
                "UNION ALL SELECT 'table simhash.' || c.relname FROM pg_catalog.pg_class c "
                "WHERE c.relnamespace = CAST('simhash' AS pg_catalog.regnamespace) AND c.relkind IN ('r', 'p', 'v', 'm') "
                "AND NOT pg_catalog.has_table_privilege(%(role)s, c.oid, 'SELECT') "
                "UNION ALL SELECT 'function simhash.' || p.proname FROM pg_catalog.pg_proc p "
                "WHERE p.pronamespace = CAST('simhash' AS pg_catalog.regnamespace) "
                "AND NOT pg_catalog.has_function_privilege(%(role)s, p.oid, 'EXECUTE')",
                {"role": role},
            ).fetchall()
            if missing:
                me, owner = raw.execute(
                    "SELECT current_user, pg_catalog.pg_get_userbyid(nspowner) FROM pg_catalog.pg_namespace "
                    "WHERE nspname = 'simhash'"
                ).fetchone()
                raise PermissionDeniedError(
                    f"role {me} may not grant read access to the store ({missing[0][0]} not granted; "
                    f"PostgreSQL granted nothing): run grant-read as the store's owner ({owner}) or a superuser"
                )

    # ------------------------------------------------------------ statistics

    @_database_errors
    def stats(self, buckets: int = 5) -> dict[str, Any]:
        """Size and shape of the store: documents, scheme, database size, largest block buckets."""
        buckets = validate_integer(buckets, "buckets", 0, 65_536)
        scheme = self._prepare(record=False)
        with self.engine.connect() as connection:
            documents = connection.execute(text("SELECT count(*) FROM simhash.documents")).scalar_one()
            total, heap = citus.size_functions(connection.connection.driver_connection)
            sizes = connection.execute(
                text(
                    f"SELECT {total}('simhash.documents') AS total, "
                    f"{heap}('simhash.documents') AS heap, pg_database_size(current_database()) AS database, "
                    "current_setting('server_version') AS version"
                )
            ).one()
            largest = {}
            for n in range(4):
                rows = connection.execute(
                    text(
                        f"SELECT block{n} AS value, count(*) AS documents FROM simhash.documents "
                        f"GROUP BY block{n} ORDER BY count(*) DESC, block{n} LIMIT :buckets"
                    ),
                    {"buckets": buckets},
                )
                largest[f"block{n}"] = [{"value": f"{r.value:04x}", "documents": r.documents} for r in rows]
        return {
            "database": self.display_url,
            "server_version": sizes.version,
            "documents": documents,
            "scheme": scheme.name,
            "scheme_version": scheme.version,
            "scheme_recorded": self._scheme is not None,
            "default_max_distance": DEFAULT_MAX_DISTANCE,
            "table_bytes": sizes.total,
            "heap_bytes": sizes.heap,
            "database_bytes": sizes.database,
            "largest_block_buckets": largest,
        }


__all__ = [
    "AddResult",
    "IdenticalGroup",
    "Match",
    "NewDocument",
    "Pair",
    "RemoveResult",
    "SimhashStoreError",
    "SkippedNearDuplicate",
    "Store",
    "StoredDocument",
    "validate_key",
]
