"""The persistent index: fingerprints in PostgreSQL, exact radius search through ``simhash.near``.

The store knows nothing of files or terminals. It takes a URL (or an engine), keeps one
scheme, writes in batches through COPY, and answers single and batched queries in one
round trip each. Search runs in the database (``simhash.near``), so applications that
speak SQL get exactly the answers the library gets.

:class:`Store` is the one public face; each of its methods is a thin call into the module
of its responsibility:

- ``documents``: the values it takes and gives back (NewDocument, Match, AddResult, ...);
- ``connection``: engine and pool, pinned sessions, silent-server watch, idle ping, errors by SQLSTATE;
- ``schema``: create or upgrade (writes only), check (reads), record and compare the scheme;
- ``writes``: validation, COPY and upsert per batch, retries, --skip-near-duplicates, stamps, removal;
- ``load``: the bulk load's drop-indexes / COPY FREEZE / rebuild path;
- ``reads``: query, query_many, get, versions, count;
- ``allpairs``: pairs, clusters and near-duplicates of the whole store from one snapshot;
- ``containment``: one text inside another, from the segments a store with segments on keeps;
- ``admin``: grant read access, statistics, upkeep (VACUUM (ANALYZE));
- persistent clusters are :mod:`simhash_store.clusters` (the write path assigns them in ``writes``).

>>> with Store("postgresql://localhost/news") as store:  # doctest: +SKIP
...     store.add([NewDocument("a.txt", fingerprint("..."))])
...     store.query(fingerprint("..."), max_distance=3)
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from sqlalchemy import Engine, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from .. import clusters, maintenance, migrate
from .. import distributed as citus
from ..config import network_timeout, redact, resolve_url, secrets_of
from ..errors import InvalidValueError, SimhashStoreError
from ..keep import KeepPolicy
from ..scheme import DEFAULT, DEFAULT_MAX_DISTANCE, Scheme, get_scheme
from ..segments import DEFAULT_SEGMENT_DISTANCE, segment_fingerprints
from ..store_info import default_distance, requested_scheme
from ..validation import (
    INT4,
    INT8,
    MAX_KEY_BYTES,  # noqa: F401 - re-exported: callers know the limit from the store
    validate_distance,
    validate_fingerprint,
    validate_integer,
    validate_key,
    validate_keys,
    validate_optional_text,
)
from ..validation import validate_seconds as _validate_seconds
from . import admin, allpairs, connection, containment, reads, schema, writes
from . import layout as store_layout
from .connection import database_errors as _database_errors
from .documents import (
    AddResult,
    ContainmentMatch,
    ContainmentPair,
    IdenticalGroup,
    Match,
    NewDocument,
    Pair,
    RemoveResult,
    SkippedNearDuplicate,
    StoredDocument,
)
from .load import DEFAULT_LOAD_BATCH_SIZE, DEFAULT_LOCK_TIMEOUT, load_rebuilding
from .writes import ADVISORY_LOCK_SPACE, DEFAULT_BATCH_SIZE, SKIP_NEAR_DUPLICATES_LOCK  # noqa: F401 - re-exported


class Store:
    """A near-duplicate index in PostgreSQL.

    ``url``: a PostgreSQL URL, an SQLAlchemy engine, or None for ``SIMHASH_STORE_URL``
    and else the embedded server. ``scheme``: the scheme this caller computes
    fingerprints with; None means whatever the store was created with (the default
    scheme for a new store). Nothing connects until the first call.
    """

    def __init__(self, url: str | URL | Engine | None = None, *, scheme: Scheme | str | None = None) -> None:
        self._requested_scheme = requested_scheme(scheme)
        self._url = url
        self._engine: Engine | None = connection.guest_engine(url) if isinstance(url, Engine) else None
        self._owns_engine = self._engine is None
        self._secrets: list[str] = []
        self._scheme: Scheme | None = None
        self._ready = False
        self._checked_at = -float("inf")  # time.monotonic() of the last checks (migrate.RECHECK_SECONDS)
        self._upkeep = admin.Upkeep()  # rows changed since the last VACUUM: when to run one
        self._segments: bool | None = None  # whether writes keep segments (read once)

    # ------------------------------------------------------------ connection

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            url = resolve_url(self._url)  # type: ignore[arg-type]
            self._secrets = secrets_of(url)
            self._engine = connection.own_engine(url, network_timeout())
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

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _read(self, work):
        """``work`` on a pooled cursor in autocommit (see :func:`connection.read`)."""
        return connection.read(self.engine, self._owns_engine, work)

    # ------------------------------------------------------------ schema and scheme

    @_database_errors
    def init(
        self,
        scheme: Scheme | str | None = None,
        *,
        distributed: bool = False,
        segments: bool = False,
        layout: str | None = None,
    ) -> Scheme:
        """Create or upgrade the schema and record the scheme (idempotent); returns the store's scheme.

        ``distributed``: on a Citus coordinator, spread the store over the workers (see
        :mod:`simhash_store.distributed`); a server without Citus is refused before anything changes.
        ``segments``: from now on every write keeps the fingerprints of each document's segments,
        for :meth:`query_containment` (refused on a distributed store; see docs/containment.md).
        ``layout``: the block layout of the search indexes, ``"four16"`` (a new store's) or
        ``"wide3"`` (faster from about 30M documents; one server only) or ``"lean"`` (about 60% of
        four16's bytes a document, searches 2-9x slower; one server only); None
        keeps the store's.
        Changing it rebuilds the search indexes under an exclusive lock (see
        :mod:`simhash_store.store.layout`).
        """
        if layout is not None:
            layout = store_layout.validate_layout(layout)
            if distributed and layout != store_layout.DEFAULT_LAYOUT:
                raise InvalidValueError(
                    f"the {layout} layout is for one server: a distributed (Citus) store keeps the four16 layout"
                )
        if scheme is not None:
            self._requested_scheme = get_scheme(scheme)
        self._ready = False
        self._segments = None
        if distributed:
            citus.check_server(self.engine)
            recorded = self._prepare(record=True)
            citus.distribute_store(self.engine)
        else:
            recorded = self._prepare(record=True)
        if segments:
            with self.engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
                containment.switch_on(cursor, citus.is_distributed(cursor))
        if layout is not None:
            with self.engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
                store_layout.switch(cursor, layout, DEFAULT_LOCK_TIMEOUT)
        return recorded

    @property
    def layout(self) -> str:
        """The block layout of the store's search indexes, ``"four16"``, ``"wide3"`` or ``"lean"``: a read."""
        self._prepare(record=False)
        return self._read(store_layout.stored_layout)

    @property
    def keeps_segments(self) -> bool:
        """Whether writes keep the segments of each document (``init(segments=True)``): a read."""
        if self._segments is None:
            self._prepare(record=False)
            self._segments = self._read(containment.keeps_segments)
        return self._segments

    @_database_errors
    def upgrade(self) -> str:
        """Create the schema, or bring it to this version's newest revision keeping every row; returns it.

        Only this, :meth:`init` and the writes change the schema: a read of a store at an
        older revision raises :class:`StoreOutdatedError` instead.
        """
        schema.upgrade(self.engine, self.display_url)
        self._ready = False
        return migrate.HEAD_REVISION

    @property
    def scheme(self) -> Scheme:
        """The scheme of the store (recorded, or the one that will be recorded on first write).

        A read: raises :class:`StoreNotFoundError` where there is no store, and never creates one.
        """
        return self._prepare(record=False)

    @_database_errors
    def _prepare(self, record: bool) -> Scheme:
        """Ready to write (``record``: the schema created or upgraded, the scheme recorded) or to
        read (the schema checked, never changed); the store's scheme."""
        fresh = time.monotonic() - self._checked_at < migrate.RECHECK_SECONDS
        if self._ready and fresh and (self._scheme is not None or not record):
            return self._scheme or self._requested_scheme or DEFAULT
        self._scheme = schema.prepare(self.engine, self.display_url, self._requested_scheme, DEFAULT, record)
        self._ready = True
        self._checked_at = time.monotonic()
        return self._scheme or self._requested_scheme or DEFAULT

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
        validate_distance(max_distance)
        self._prepare(record=True)
        result = self._add_in_batches(documents, batch_size, skip_near_duplicates, max_distance)
        self._upkeep.optimize_if_grown(self.engine, DEFAULT_LOCK_TIMEOUT)
        return result

    def _add_in_batches(
        self, documents: Iterable[NewDocument], batch_size: int, skip_near_duplicates: bool, max_distance: int
    ) -> AddResult:
        result = AddResult()
        for batch in writes.batches(documents, batch_size):
            result.merge(self._add_batch(batch, skip_near_duplicates, max_distance))
        return result

    def _add_batch(self, documents: Sequence[NewDocument], skip_near_duplicates: bool, max_distance: int) -> AddResult:
        result = writes.add_batch(
            self.engine, self.display_url, documents, skip_near_duplicates, max_distance, self.keeps_segments
        )
        self._upkeep.changes += result.added + result.updated
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
        # With segments on, documents go in as add writes them (a segment row needs its document's id).
        if not self.keeps_segments and not connection.with_cursor(self.engine, maintenance.rebuild_blockers):
            # Checked as they stream in, before COPY sends them (the batches check their own).
            loaded = load_rebuilding(self.engine, map(writes.validated, documents), lock_timeout, index_memory)
            if loaded is not None:
                received, repeated = loaded
                # Analysed and all-visible, unless repeated keys left deleted rows that only VACUUM clears.
                self._upkeep.rows_at_optimize = float(received - repeated)
                self._upkeep.changes = received if repeated else 0
                result = AddResult(added=received - repeated, unchanged=repeated)
        if result is None:
            result = self._add_in_batches(documents, batch_size, False, DEFAULT_MAX_DISTANCE)
        self._upkeep.optimize_if_grown(self.engine, DEFAULT_LOCK_TIMEOUT)
        return result

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
        validate_distance(max_distance)
        self._prepare(record=True)
        result = self._add_batch(documents, skip_near_duplicates, max_distance)
        self._upkeep.optimize_if_grown(self.engine, DEFAULT_LOCK_TIMEOUT)
        return result

    @_database_errors
    def add_new_and_cluster(
        self, documents: Sequence[NewDocument], known: clusters.KnownNeighbours | None = None
    ) -> tuple[dict[str, clusters.Membership], list[tuple[str, str]]]:
        """Store the documents whose keys are not stored yet (a stored key keeps its text), put them
        in clusters by the store's keep policy, and return the membership of every given key that is
        stored, and each representative replaced by a better copy, (key replaced, key replacing):
        one transaction, the unit of progress of ``dedup``. The store must keep clusters.
        ``known``: the stored documents near each, found in advance (:class:`clusters.KnownNeighbours`).
        """
        self._prepare(record=True)
        found, added, replaced = writes.add_new_and_cluster(self.engine, documents, known)
        self._upkeep.changes += added
        self._upkeep.optimize_if_grown(self.engine, DEFAULT_LOCK_TIMEOUT)
        return found, replaced

    @_database_errors
    def add_decided(
        self, documents: Sequence[NewDocument], batches: Sequence[int], leaders: Sequence[int], distance: int
    ) -> list[int] | None:
        """Store, in one COPY, the documents of a ``dedup`` run (keep ``first``) whose clusters were decided
        in memory (``leaders``: the position of each one's representative, by :func:`clusters.leaders`),
        with the ids, clusters and arrivals its batches of ``batches`` (each document's batch number)
        would have stored: into a store that holds no documents and keeps clusters at ``distance``
        with keep ``first``. Returns each document's id; None, writing nothing, if the store is not so.
        """
        self._prepare(record=True)
        ids = writes.add_decided(self.engine, documents, batches, leaders, distance)
        if ids:
            self._upkeep.changes += len(ids)
            self._upkeep.optimize_if_grown(self.engine, DEFAULT_LOCK_TIMEOUT)
        return ids

    # The decided documents of ``dedup_dataset`` written from its workers (see ``writes.move_staged``).

    @_database_errors
    def decided_order(self, keys: Any, batches: Any) -> Any:
        """The positions of documents (``keys``: a pyarrow string array; ``batches``: each one's batch
        number, a numpy array) in the order ``dedup``'s batches number them (by batch, then by key in
        the database's collation), as a numpy array."""
        self._prepare(record=True)
        return writes.decided_order(self.engine, keys, batches)

    @contextlib.contextmanager
    def staging(self) -> Iterator[str | None]:
        """A staging table for documents written from many connections (:meth:`stage_block`) and moved
        into the store in one transaction (:meth:`move_staged`): its name (in schema simhash) while the
        block runs, dropped after; None where this role may not make one (it is not the store's owner).
        The driver's own connection is held meanwhile: a table whose run died is dropped by a later run."""
        self._prepare(record=True)
        try:
            held = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            cursor = held.connection.driver_connection.cursor()
            if not writes.may_stage(cursor):
                name = None
            else:
                name = writes.staging_name()
                writes.create_staging(cursor, name)
        except (psycopg.Error, DBAPIError) as exc:
            connection._raise_mapped(self, exc)
        try:
            yield name
        finally:
            try:
                if name is not None:
                    writes.drop_staging(cursor, name)
            except (psycopg.Error, DBAPIError):
                pass  # left for a later run to drop (its name says what it is)
            finally:
                cursor.close()
                held.close()

    @_database_errors
    def stage_block(self, name: str, block: int, payload: bytes) -> None:
        """One block's rows (``writes.staged_payload``) into the staging table ``name``, replacing any
        rows of that block already there (a task run again writes nothing twice)."""
        writes.stage_block(self.engine, name, block, payload)

    @_database_errors
    def move_staged(self, name: str, distance: int, blocks: dict[int, int], first_batch: int) -> int | None:
        """The staged documents into this store (holding none; clusters at ``distance``, keep ``first``)
        in one transaction, with the heads (the staging table is dropped when :meth:`staging` ends). The highest id used before
        (each document's id is it plus its rank); None, nothing written, if the store is not so."""
        self._prepare(record=True)
        first_id = writes.move_staged(self.engine, name, distance, blocks, first_batch)
        if first_id is not None:
            self._upkeep.changes += sum(blocks.values())
            self._upkeep.optimize_if_grown(self.engine, DEFAULT_LOCK_TIMEOUT)
        return first_id

    @_database_errors
    def remove(self, keys: str | Iterable[str]) -> RemoveResult:
        """Delete documents by key (a string is one key); says which were removed and which were not stored.
        Their ids are never given to another document (``store_info.highest_retired_id``).

        >>> store.remove(["a.txt", "gone.txt"])  # doctest: +SKIP
        RemoveResult(removed=['a.txt'], missing=['gone.txt'])
        """
        wanted = list(dict.fromkeys(validate_keys(keys)))
        self._prepare(record=False)
        with self.engine.begin() as connection:
            return writes.remove(connection, wanted)

    @_database_errors
    def set_stamps(self, stamps: dict[str, str]) -> None:
        """Record new file stamps of stored documents whose content did not change."""
        for key, stamp in stamps.items():
            validate_optional_text(stamp, f"stamp of {validate_key(key)!r}")
        self._prepare(record=True)
        with self.engine.begin() as connection:
            writes.set_stamps(connection, stamps)

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
        return self._upkeep.optimize(self.engine, lock_timeout)

    # ------------------------------------------------------------ reading

    @_database_errors
    def query(
        self,
        fingerprint: int,
        max_distance: int = DEFAULT_MAX_DISTANCE,
        *,
        limit: int | None = None,
        method: str = "auto",
    ) -> list[Match]:
        """Stored documents within ``max_distance`` bits of a fingerprint, nearest first (exact)."""
        reads.check_query_options(max_distance, limit, method)
        value = validate_fingerprint(fingerprint)
        self._prepare(record=False)
        return self._read(lambda cursor: reads.query(cursor, value, max_distance, limit, method))

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
        reads.check_query_options(max_distance, limit, method)
        self._prepare(record=False)
        return self._read(lambda cursor: reads.query_many(cursor, fingerprints, max_distance, limit, method))

    @_database_errors
    def get(self, key: str) -> StoredDocument | None:
        validate_key(key)
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return reads.get(connection, key)

    @_database_errors
    def fingerprints(self, keys: Sequence[str]) -> dict[str, int]:
        """The fingerprint of each of the given keys that is stored (a key not stored is left out)."""
        keys = validate_keys(keys)
        self._prepare(record=False)
        return self._read(lambda cursor: reads.stored_fingerprints(cursor, keys))

    @_database_errors
    def versions(self, keys: Sequence[str]) -> dict[str, tuple[bytes | None, str | None]]:
        """(digest, stamp) of each of the given keys that is stored: how a re-run skips unchanged inputs."""
        keys = validate_keys(keys)
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return reads.versions(connection, keys)

    @_database_errors
    def stored_metadata(self, keys: Sequence[str]) -> dict[str, object]:
        """The metadata (None for none) of each of the given keys that is stored."""
        keys = validate_keys(keys)
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return reads.stored_metadata(connection, keys)

    @_database_errors
    def stored_keep_values(self, keys: Sequence[str]) -> dict[str, object]:
        """The value of the keep policy's field (None for none) of each of the given keys that is stored."""
        keys = validate_keys(keys)
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return reads.stored_keep_values(connection, keys)

    @_database_errors
    def count(self) -> int:
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return reads.count(connection)

    @_database_errors
    def is_empty(self) -> bool:
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return reads.is_empty(connection)

    @_database_errors
    def is_distributed(self) -> bool:
        """Whether the documents are spread over a Citus cluster (``init --distributed``)."""
        self._prepare(record=False)
        result: bool = self._read(citus.is_distributed)
        return result

    @_database_errors
    def store_state(self) -> tuple[int, int]:
        """(documents stored, largest arrival or id): any write by anyone changes it
        (:func:`clusters.store_state`)."""
        self._prepare(record=False)
        result: tuple[int, int] = self._read(clusters.store_state)
        return result

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

    _keys_of = staticmethod(allpairs.keys_of)  # through the class, so a test can stand in for it

    @_database_errors
    def near_duplicates(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> list[IdenticalGroup | Pair]:
        """Every near-duplicate among stored documents, exactly, from one snapshot, without n² blow-up.

        First each set of two or more documents sharing one fingerprint, as an
        :class:`IdenticalGroup` of all its keys; then each pair of distinct fingerprints
        within ``max_distance`` bits, nearest first, as a :class:`Pair` that names the
        first key of each side's group (standing for all of it). Memory grows with the
        documents and the distinct pairs, never with the square of a group.
        """
        return list(self.iter_near_duplicates(max_distance))

    @_database_errors
    def iter_near_duplicates(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> Iterator[IdenticalGroup | Pair]:
        """:meth:`near_duplicates` as an iterator: the search runs at the call, in one snapshot, and the
        pairs are made as they are taken, so printing millions of them holds a few dozen bytes each."""
        max_distance = validate_distance(max_distance)  # a numpy int8 overflowed in the layout's arithmetic
        with self._snapshot() as raw:
            return allpairs.near_duplicates(raw, max_distance, self._keys_of)

    @_database_errors
    def pairs(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> list[Pair]:
        """Every pair of stored documents within ``max_distance`` bits, nearest first (exact), from one snapshot.

        Every pair is materialised: n documents sharing one fingerprint make n² / 2 of them.
        :meth:`near_duplicates` gives the same answer in memory proportional to n.
        """
        validate_distance(max_distance)
        with self._snapshot() as raw:
            return allpairs.pairs(raw, max_distance, self._keys_of)

    @_database_errors
    def clusters(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> list[list[str]]:
        """Groups of two or more documents connected by near-duplicate links, largest first (one snapshot)."""
        validate_distance(max_distance)
        with self._snapshot() as raw:
            return allpairs.clusters(raw, max_distance, self._keys_of)

    # ------------------------------------------------------------ containment (see containment.py)

    @_database_errors
    def query_containment(
        self,
        text: str,
        *,
        min_score: float = containment.DEFAULT_MIN_SCORE,
        max_distance: int = DEFAULT_SEGMENT_DISTANCE,
    ) -> list[ContainmentMatch]:
        """Stored documents that hold most of ``text``, or lie mostly inside it, best first.

        From the segments (:mod:`simhash_store.segments`) of the text and of the stored documents
        (a store with segments on): the score is the share of the shorter one's segments with a
        segment within ``max_distance`` (0 to 3) bits in the other; ``inner`` says which is inside.

        >>> store.query_containment(page_text)  # doctest: +SKIP
        [ContainmentMatch(key='story.txt', score=1.0, inner='stored', matched=6, segments=6)]
        """
        if not isinstance(text, str):
            raise InvalidValueError(f"the text must be a string, not {type(text).__name__}")
        return self.query_segments(segment_fingerprints(text), min_score=min_score, max_distance=max_distance)

    @_database_errors
    def query_segments(
        self,
        fingerprints: Sequence[int],
        *,
        min_score: float = containment.DEFAULT_MIN_SCORE,
        max_distance: int = DEFAULT_SEGMENT_DISTANCE,
    ) -> list[ContainmentMatch]:
        """:meth:`query_containment` of a text given by its segments' fingerprints (``segment_fingerprints``)."""
        containment.check_options(max_distance, min_score)
        values = [validate_fingerprint(value) for value in fingerprints]
        self._require_segments()
        return self._read(lambda cursor: containment.query(cursor, values, max_distance, min_score))

    @_database_errors
    def containment_pairs(
        self, *, min_score: float = containment.DEFAULT_MIN_SCORE, max_distance: int = DEFAULT_SEGMENT_DISTANCE
    ) -> list[ContainmentPair]:
        """Every pair of stored documents with one mostly inside the other, best first, from one snapshot."""
        return list(self.iter_containment_pairs(min_score=min_score, max_distance=max_distance))

    @_database_errors
    def iter_containment_pairs(
        self, *, min_score: float = containment.DEFAULT_MIN_SCORE, max_distance: int = DEFAULT_SEGMENT_DISTANCE
    ) -> Iterator[ContainmentPair]:
        """:meth:`containment_pairs` as they are read, a few thousand at a time: the snapshot's
        transaction stays open until the last is taken (or the iterator is closed)."""
        containment.check_options(max_distance, min_score)
        self._require_segments()
        return self._containment_pairs(min_score, max_distance)

    @_database_errors
    def _containment_pairs(self, min_score: float, max_distance: int) -> Iterator[ContainmentPair]:
        with self._snapshot() as raw:
            yield from containment.pairs(raw, max_distance, min_score)

    def _require_segments(self) -> None:
        if not self.keeps_segments:
            raise SimhashStoreError(
                f"the store at {self.display_url} keeps no segments: run `simhash-store init --segments` "
                "(then add the documents again) for containment search"
            )

    # ------------------------------------------------------------ persistent clusters (see clusters.py)

    @_database_errors
    def recluster(self, max_distance: int | None = None, *, keep: KeepPolicy | str | None = None) -> tuple[int, int]:
        """Cluster every stored document afresh, and keep clusters from now on; (documents, clusters).

        At ``max_distance``, else the store's cluster distance, else the k recorded by
        ``calibrate --apply``, else the default distance; representatives chosen by ``keep``
        (``first``, ``longest``, ``shortest``, ``field:NAME[:asc|desc]``), else the store's
        policy, which is recorded. Every later write then assigns clusters to its documents.
        """
        if max_distance is not None:
            validate_distance(max_distance)
        policy = None if keep is None else KeepPolicy.parse(keep)
        self._prepare(record=True)
        with self.engine.begin() as connection:
            raw = connection.connection.driver_connection
            if max_distance is None:
                with raw.cursor() as cursor:
                    max_distance = default_distance(clusters.max_distance(cursor), schema.recommended_distance(cursor))
            return clusters.recluster(raw, max_distance, policy)

    @_database_errors
    def keep_policy(self) -> KeepPolicy:
        """The keep policy of this store's clusters (``first`` for a store that never chose one)."""
        self._prepare(record=False)
        return self._read(clusters.keep_policy)

    @_database_errors
    def cluster_state(self) -> tuple[int | None, bool]:
        """The distance at which this store clusters (None: it keeps no clusters), and whether any
        stored document has no cluster."""
        self._prepare(record=False)
        return self._read(clusters.state)

    @_database_errors
    def computed_clusters(self, max_distance: int = DEFAULT_MAX_DISTANCE) -> list[clusters.Cluster]:
        """The clusters of two or more documents that :meth:`recluster` would keep at ``max_distance``, not stored."""
        validate_distance(max_distance)
        with self._snapshot() as raw:
            ids, values = allpairs.all_fingerprints(raw)
            return clusters.computed_clusters(ids, values, lambda chosen: self._keys_of(raw, chosen), max_distance)

    @_database_errors
    def stored_digests(self, keys: Sequence[str]) -> dict[str, tuple[bytes | None, int, int | None]]:
        """(content digest, fingerprint, length) of each stored key among ``keys``: what a rerun needs
        to recognise an unchanged record without fingerprinting it again."""
        keys = validate_keys(keys)
        self._prepare(record=False)
        with self.engine.connect() as connection:
            return reads.stored_digests(connection, keys)

    @_database_errors
    def sample_keys(self, count: int, seed: str = "") -> list[str]:
        """Up to ``count`` stored keys, the same ones for the same seed and contents (for calibrate)."""
        count = validate_integer(count, "count", 0, INT8[1])
        seed = validate_optional_text(seed, "seed") or ""
        self._prepare(record=False)
        return self._read(lambda cursor: clusters.sample_keys(cursor, count, seed))

    @_database_errors
    def recommended_distance(self) -> int | None:
        """The k recorded by ``calibrate --apply`` (``store_info.recommended_max_distance``), or None."""
        self._prepare(record=False)
        return self._read(schema.recommended_distance)

    @_database_errors
    def record_recommended_distance(self, max_distance: int) -> None:
        """Record the k that ``calibrate`` recommends in ``store_info.recommended_max_distance``."""
        validate_distance(max_distance)
        self._prepare(record=True)
        with self.engine.begin() as connection:
            schema.record_recommended_distance(connection, max_distance)

    @_database_errors
    def memberships(self, keys: Sequence[str]) -> dict[str, clusters.Membership]:
        """Cluster, representative and distance to it of each stored key among ``keys``."""
        keys = validate_keys(keys)
        self._prepare(record=False)
        return self._read(lambda cursor: clusters.memberships(cursor, keys))

    @_database_errors
    def stored_clusters(self, min_size: int = 2) -> list[clusters.Cluster]:
        """The stored clusters of at least ``min_size`` documents, largest first."""
        self._prepare(record=False)
        return self._read(lambda cursor: clusters.stored_clusters(cursor, min_size))

    # ------------------------------------------------------------ access for other applications

    @_database_errors
    def grant_read_only(self, role: str, password: str | None = None) -> None:
        """Let an existing role search and read the store in SQL, and nothing more.

        It may call ``simhash.near`` and ``simhash.distance`` and read every table of the
        schema (including tables later migrations add); it cannot insert, update or delete.
        With ``password``, the role's password is set too (for TCP; only a superuser or a
        role with CREATEROLE may), in the same transaction as the grants.
        Raises :class:`PermissionDeniedError`, granting nothing, when this role may not
        grant that (PostgreSQL itself only warns "no privileges were granted"), or when
        ``role`` could write the store anyway (a write privilege on one of its tables or
        sequences, CREATE on the schema, or membership in its owner).
        """
        if not role or "\x00" in role:
            raise ValueError("a role name must be a non-empty string")
        if password is not None and (not isinstance(password, str) or not password or "\x00" in password):
            raise ValueError("a password must be a non-empty string without NUL characters")
        self._prepare(record=False)
        with self.engine.begin() as connection:
            admin.grant_read_only(connection.connection.driver_connection, role, password)

    @_database_errors
    def superuser_reach(self) -> list[str]:
        """The roles through which this connection's role has a superuser's reach: a superuser
        it is or may become, or a role that runs programs or touches files as the server's OS
        account. Empty for a role a service may safely hold (``serve --http`` refuses others)."""
        return self._read(admin.superuser_reach)

    # ------------------------------------------------------------ statistics

    @_database_errors
    def stats(self, buckets: int = 5) -> dict[str, Any]:
        """Size and shape of the store: documents, scheme, database size, largest block buckets."""
        buckets = validate_integer(buckets, "buckets", 0, 65_536)
        scheme = self._prepare(record=False)
        with self.engine.connect() as connection:
            found = admin.stats(connection, buckets)
        return {
            "database": self.display_url,
            "server_version": found["server_version"],
            "documents": found["documents"],
            "scheme": scheme.name,
            "scheme_version": scheme.version,
            "scheme_recorded": self._scheme is not None,
            "default_max_distance": DEFAULT_MAX_DISTANCE,
            "recommended_max_distance": self.recommended_distance(),  # calibrate --apply; None: not recorded
            "cluster_max_distance": self._read(clusters.max_distance),  # None: the store keeps no clusters
            "layout": self._read(store_layout.stored_layout),  # four16, wide3 or lean: the search indexes
            **{name: found[name] for name in ("table_bytes", "heap_bytes", "database_bytes", "largest_block_buckets")},
        }


__all__ = [
    "AddResult",
    "ContainmentMatch",
    "ContainmentPair",
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
