"""Writes: documents validated, COPY into a staging table and one upsert per batch (retried on
deadlock), the --skip-near-duplicates check under an advisory lock, stamps, and removal."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from sqlalchemy import Engine, Text, any_, bindparam, delete, func, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from .. import clusters, distributed, maintenance
from ..bits import to_signed
from ..config import lock_timeout
from ..errors import InvalidValueError, LockTimeoutError, SimhashStoreError
from ..models import Document
from ..validation import (
    INT4,
    MAX_KEY_BYTES,
    validate_fingerprint,
    validate_integer,
    validate_key,
    validate_metadata,
    validate_optional_bytes,
    validate_optional_text,
)
from . import reads, rebuild
from .documents import AddResult, Match, NewDocument, RemoveResult, SkippedNearDuplicate

T = TypeVar("T")
documents_table = Document.__table__

DEFAULT_BATCH_SIZE = 5000
# The decided documents of a dedup into an empty store go into the bare table, its indexes built after,
# if its exclusive lock is had within this; else into the indexed table (3.5x slower: docs/scale-out.md).
DECIDED_LOCK_SECONDS = 2.0
DECIDED_INDEX_MEMORY = "256MB"  # maintenance_work_mem of those index builds
# Advisory locks of the project: the two-integer key space, first key "SIMH", so no other
# application's single-bigint locks (or hashtext() keys) collide with ours by chance.
ADVISORY_LOCK_SPACE = 0x53494D48  # "SIMH"
# Serialises check-then-insert of --skip-near-duplicates writers across processes.
SKIP_NEAR_DUPLICATES_LOCK = (ADVISORY_LOCK_SPACE, 1)
_RETRYABLE = {"40P01", "40001"}  # deadlock detected, serialization failure

# Insert or update from the staging table (``rows`` selects at most one row per key); returns
# the counts of inserted and updated rows, and of updated rows that left their cluster (a new
# fingerprint, or a new value of the keep policy's field: the write's clustering places them
# again, so a corrected value ranks the copy again). An unchanged row is left alone.
_UPSERT = """
    WITH written AS (
        INSERT INTO simhash.documents AS d ({columns})
        {rows}
        ON CONFLICT (key) DO UPDATE
            SET fingerprint = excluded.fingerprint, digest = excluded.digest,
                length = excluded.length, metadata = excluded.metadata, stamp = excluded.stamp,
                keep_value = excluded.keep_value, updated_at = excluded.updated_at,
                cluster = CASE WHEN d.fingerprint = excluded.fingerprint
                                    AND d.keep_value IS NOT DISTINCT FROM excluded.keep_value THEN d.cluster END
            WHERE (d.fingerprint, d.digest, d.length, d.metadata, d.stamp, d.keep_value)
                  IS DISTINCT FROM (excluded.fingerprint, excluded.digest, excluded.length,
                                    excluded.metadata, excluded.stamp, excluded.keep_value)
        RETURNING (xmax = 0) AS inserted, cluster IS NULL AS unclustered
    )
    SELECT pg_catalog.count(*) FILTER (WHERE inserted), pg_catalog.count(*) FILTER (WHERE NOT inserted),
           pg_catalog.count(*) FILTER (WHERE NOT inserted AND unclustered)
    FROM written
"""

# In a store that keeps clusters, under the cluster lock: the staged rows whose key is not
# stored, numbered from %(first_id)s on in key order: (id, signed fingerprint, key, length,
# keep value as JSON text).
# An anti-join rather than NOT EXISTS: Citus cannot run a subquery of a distributed table correlated
# with a local (temporary) one, and joins them once it has sent the staged rows to the shards.
_NEW_ROWS = """
    SELECT %(first_id)s + pg_catalog.row_number() OVER (ORDER BY i.key), i.fingerprint, i.key, i.length,
           i.keep_value::pg_catalog.text
    FROM pg_temp.simhash_incoming i
    LEFT JOIN simhash.documents d ON d.key = i.key
    WHERE d.key IS NULL
    ORDER BY i.key
"""

# Those rows stored with their ids, clusters and arrivals already decided (clusters.place), so each
# is written once; the heads of the clusters they found, and stored clusters one of them now
# represents (of those actually stored: a key that another application inserted meanwhile is left as it is).
_INSERT_PLACED = """
    WITH placed AS (
        INSERT INTO simhash.documents AS d (id, key, fingerprint, digest, length, metadata, stamp, keep_value, cluster, arrival)
        SELECT p.id, i.key, i.fingerprint, i.digest, i.length, i.metadata, i.stamp, i.keep_value, p.cluster, p.arrival
        FROM pg_temp.simhash_incoming i
        JOIN ROWS FROM (pg_catalog.unnest(%(keys)s::pg_catalog.text[]), pg_catalog.unnest(%(ids)s::bigint[]),
                        pg_catalog.unnest(%(clusters)s::bigint[]), pg_catalog.unnest(%(arrivals)s::bigint[]))
             AS p(key, id, cluster, arrival) ON p.key = i.key
        ORDER BY i.key
        ON CONFLICT (key) DO NOTHING
        RETURNING id
    ), moved AS (
        UPDATE simhash.cluster_heads h SET representative_id = m.id
        FROM ROWS FROM (pg_catalog.unnest(%(moved)s::bigint[]), pg_catalog.unnest(%(movers)s::bigint[])) AS m(cluster, id)
        WHERE h.cluster = m.cluster AND m.id IN (SELECT id FROM placed)
    )
    INSERT INTO simhash.cluster_heads (cluster, representative_id)
    SELECT h.cluster, h.id
    FROM ROWS FROM (pg_catalog.unnest(%(founded)s::bigint[]), pg_catalog.unnest(%(founders)s::bigint[])) AS h(cluster, id)
    WHERE h.id IN (SELECT id FROM placed)
"""

_COLUMNS = "key, fingerprint, digest, length, metadata, stamp, keep_value"
# New rows arrive after every arrival and id stored, in input order (the staging table's position).
_ARRIVAL = (
    "(SELECT GREATEST(pg_catalog.max(arrival), pg_catalog.max(id), 0) FROM simhash.documents) "
    "+ pg_catalog.row_number() OVER (ORDER BY i.position)"
)
# Sorted by key, so concurrent writers lock rows in one order: ids from the identity sequence.
_ROWS = f"SELECT {', '.join('i.' + c for c in _COLUMNS.split(', '))}, {_ARRIVAL} FROM pg_temp.simhash_incoming i ORDER BY i.key"
# In a store that keeps clusters: ids numbered under the cluster lock from %(first_id)s on
# (clusters.allocate_ids), in key order, counting only keys not stored yet.
_NUMBERED_ROWS = (
    "SELECT %(first_id)s + pg_catalog.count(*) FILTER (WHERE stored.id IS NULL) OVER (ORDER BY i.key), "
    + ", ".join(f"i.{column}" for column in _COLUMNS.split(", "))
    + f", {_ARRIVAL} FROM pg_temp.simhash_incoming i LEFT JOIN simhash.documents stored ON stored.key = i.key ORDER BY i.key"
)


_UNSIGNED_64 = 1 << 64


def validated(document: NewDocument) -> NewDocument:
    """The document, if every field fits its column; else the field's SimhashStoreError."""
    key, value, length, digest = document.key, document.fingerprint, document.length, document.digest
    if (  # the common case (an ASCII key, no metadata), checked inline: a few times faster than the checks below
        type(key) is str
        and key.isascii()
        and 0 < len(key) <= MAX_KEY_BYTES
        and "\x00" not in key
        and type(value) is int
        and 0 <= value < _UNSIGNED_64
        and (length is None or (type(length) is int and 0 <= length <= INT4[1]))
        and (digest is None or type(digest) is bytes)
        and document.stamp is None
        and document.metadata is None
        and document.keep_value is None
        and not document.segments
    ):
        return document
    validate_key(document.key)
    validate_fingerprint(document.fingerprint)
    if document.length is not None:
        validate_integer(document.length, f"length of {document.key!r}", 0, INT4[1])
    validate_optional_bytes(document.digest, f"digest of {document.key!r}")
    validate_optional_text(document.stamp, f"stamp of {document.key!r}")
    for value in document.segments or ():
        validate_fingerprint(value)
    try:
        validate_metadata(document.metadata)
        # Written as jsonb too: NaN or an object JSON cannot hold was the driver's error, the batch lost.
        validate_metadata(None if document.keep_value is None else {"keep_value": document.keep_value})
    except InvalidValueError as exc:
        raise InvalidValueError(f"document {document.key!r}: {exc}") from None
    return document


def copy_documents(
    cursor: psycopg.Cursor, table: str, documents: Iterable[NewDocument], *, freeze: bool = False
) -> int:
    """Binary COPY of (already validated) documents into ``table``; returns how many.

    Raw psycopg: SQLAlchemy has no COPY, and binary COPY is the fast way in.
    ``freeze``: rows go in frozen and all-visible, for a table emptied by TRUNCATE in this transaction.
    """
    count = 0
    statement = "COPY {} (key, fingerprint, digest, length, metadata, stamp, keep_value) FROM STDIN (FORMAT BINARY{})"
    with cursor.copy(sql.SQL(statement).format(sql.SQL(table), sql.SQL(", FREEZE" if freeze else ""))) as copy:
        copy.set_types(["text", "int8", "bytea", "int4", "jsonb", "text", "jsonb"])
        for d in documents:
            metadata = Jsonb(d.metadata) if d.metadata is not None else None
            keep_value = Jsonb(d.keep_value) if d.keep_value is not None else None
            copy.write_row((d.key, to_signed(d.fingerprint), d.digest, d.length, metadata, d.stamp, keep_value))
            count += 1
    return count


def batches(documents: Iterable[NewDocument], size: int) -> Iterator[list[NewDocument]]:
    batch: list[NewDocument] = []
    for document in documents:
        batch.append(document)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def add_batch(
    engine: Engine,
    display_url: str,
    documents: Sequence[NewDocument],
    skip_near_duplicates: bool,
    max_distance: int,
    segments: bool = False,
) -> AddResult:
    """One batch in one transaction; of repeated keys the last wins."""
    latest: dict[str, NewDocument] = {}
    for document in map(validated, documents):
        latest.pop(document.key, None)  # the last of repeated keys wins, in its place
        latest[document.key] = document
    # Input order matters to --skip-near-duplicates (the first of near-duplicates is kept);
    # the INSERT sorts by key, so concurrent writers lock rows in one order.
    ordered = list(latest.values())
    repeated = len(documents) - len(ordered)
    result = retry(engine, lambda: _write(engine, display_url, ordered, skip_near_duplicates, max_distance, segments))
    result.unchanged += repeated
    return result


def retry(engine: Engine, work: Callable[[], T], attempts: int = 6) -> T:
    """``work`` again after a deadlock or serialization failure, and after an id taken by a row
    another application inserted with an explicit id (the sequence is moved past it first)."""
    for attempt in range(attempts):
        try:
            return work()
        except (DBAPIError, psycopg.Error) as exc:  # through SQLAlchemy, or the raw cursor of COPY
            error = exc.orig if isinstance(exc, DBAPIError) else exc
            sqlstate = getattr(error, "sqlstate", None)
            id_taken = (
                sqlstate == "23505" and getattr(getattr(error, "diag", None), "constraint_name", None) == "pk_documents"
            )
            if not (sqlstate in _RETRYABLE or id_taken) or attempt == attempts - 1:
                raise
            if id_taken:
                with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
                    maintenance.resync_id_sequence(cursor)
            else:
                time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


def _write(
    engine: Engine,
    display_url: str,
    documents: list[NewDocument],
    skip_near_duplicates: bool,
    max_distance: int,
    segments: bool,
) -> AddResult:
    result = AddResult()
    with engine.begin() as connection:
        if skip_near_duplicates and documents:
            _take_skip_near_duplicates_lock(engine, display_url, connection)
            documents, result.near_duplicates = _drop_near_duplicates(connection, documents, max_distance)
        if not documents:
            return result
        raw = connection.connection.driver_connection
        placement = None
        with raw.cursor() as cursor:  # raw psycopg: COPY into the staging table, then one upsert
            distance = clusters.lock_for_write(cursor)
            _stage(cursor, documents)
            cursor.execute(*_insert_statement(_UPSERT, cursor, distance, len(documents)))
            added, updated, moved = cursor.fetchone()
            # Same transaction: new rows, and rows re-written with a new fingerprint, join clusters.
            placement = clusters.assign(cursor, [d.key for d in documents], distance=distance, moved=moved > 0)
            if segments:  # same transaction: a document and its segments are stored together
                _write_segments(cursor, documents)
    result.added, result.updated = added, updated
    if placement is not None:
        result.replaced = placement.replaced
    result.unchanged += len(documents) - added - updated
    return result


def add_new_and_cluster(
    engine: Engine, documents: Sequence[NewDocument], known: clusters.KnownNeighbours | None = None
) -> tuple[dict[str, clusters.Membership], int, list[tuple[str, str]]]:
    """Store the documents whose keys are not stored (a stored key keeps its text), cluster them
    by the store's keep policy, and read back the membership of every given key, all in one
    transaction; how many were stored; and each representative replaced: (key replaced, key
    replacing). The store keeps clusters. ``known``: see :class:`clusters.KnownNeighbours`."""
    checked = list(map(validated, documents))
    return retry(engine, lambda: _add_new_and_cluster(engine, checked, known))


def _add_new_and_cluster(
    engine: Engine, documents: list[NewDocument], known: clusters.KnownNeighbours | None
) -> tuple[dict[str, clusters.Membership], int, list[tuple[str, str]]]:
    keys = [d.key for d in documents]
    replaced: list[tuple[str, str]] = []
    state = None
    with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
        distance = clusters.lock_for_write(cursor)
        if distance is None:
            raise SimhashStoreError("this store keeps no clusters (run `simhash-store recluster` first)")
        if known is not None:
            known.check(cursor)
        if distributed.is_distributed(cursor):
            # The memberships are read back in this transaction, from the shards the insert wrote. Citus
            # runs a multi-shard write over several connections to a worker when its tasks are slow to
            # start (a loaded machine) or it has them open already (the radius searches of a store past
            # the in-memory bound), and then refuses the read ("cannot perform query with placements that
            # were modified over multiple connections"). One connection a worker for the writes avoids it.
            cursor.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        _stage(cursor, documents)
        new = cursor.execute(_NEW_ROWS, {"first_id": clusters.allocate_ids(cursor, len(documents))}).fetchall()
        if new:
            placement = clusters.place(cursor, keys, new, distance, known=known)
            cursor.execute(_INSERT_PLACED, placement.parameters())
            replaced = placement.replaced
        if clusters.keep_policy(cursor).kind == "field":
            replaced += _take_up_corrected_keep_values(cursor, distance)
        found = clusters.memberships(cursor, keys)
        if known is not None and known.state is not None:
            state = clusters.store_state(cursor)  # what the next batch must find: nobody else wrote
    if known is not None and known.state is not None:  # committed: a retried transaction sets it once
        known.state = state
        known.record(found)
    return found, len(new), replaced


# Stored keys given again with the same text but another value of the field the store keeps by: a
# value corrected at the source. (key, keep value as JSON text), in input order.
_CORRECTED_KEEP_VALUES = """
    SELECT i.key, i.keep_value::pg_catalog.text
    FROM pg_temp.simhash_incoming i
    JOIN simhash.documents d ON d.key = i.key
    WHERE d.digest = i.digest AND d.keep_value IS DISTINCT FROM i.keep_value
    ORDER BY i.position
"""


def _take_up_corrected_keep_values(cursor: psycopg.Cursor, distance: int) -> list[tuple[str, str]]:
    """Write the corrected keep values of the staged documents stored with the same text, and rank
    those copies again in their clusters (a better one takes over, as ``add`` of it does): the
    replacements, (key replaced, key replacing). A stored key otherwise keeps what it has."""
    corrected = cursor.execute(_CORRECTED_KEEP_VALUES).fetchall()
    if not corrected:
        return []
    cursor.executemany(
        "UPDATE simhash.documents SET keep_value = %s::pg_catalog.jsonb, cluster = NULL, "
        "updated_at = pg_catalog.now() WHERE key = %s",
        [(value, key) for key, value in corrected],
    )
    placement = clusters.assign(cursor, [key for key, _ in corrected], distance=distance, moved=True)
    return placement.replaced if placement is not None else []


def add_decided(
    engine: Engine, documents: Sequence[NewDocument], batches: Sequence[int], leaders: Sequence[int], distance: int
) -> list[int] | None:
    """Store the documents of a ``dedup`` run whose clusters were decided in memory, in one COPY, into a
    store that holds no documents and keeps clusters at ``distance`` with keep ``first``: each document's
    id, cluster and arrival are those the run's batches would have given them (``batches``: each
    document's batch number, in input order; ``leaders``: the position of each one's representative).
    Returns each document's id; None, writing nothing, if the store (under the cluster lock) is not so."""
    checked = list(map(validated, documents))
    return retry(engine, lambda: _add_decided(engine, checked, batches, leaders, distance))


def _add_decided(
    engine: Engine, documents: list[NewDocument], batches: Sequence[int], leaders: Sequence[int], distance: int
) -> list[int] | None:
    with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
        if clusters.lock_for_write(cursor) != distance or clusters.keep_policy(cursor).kind != "first":
            return None
        if cursor.execute("SELECT EXISTS (SELECT 1 FROM simhash.documents)").fetchone()[0]:
            return None
        if not documents:
            return []
        bare = _may_rebuild(cursor)
        if bare is None:  # someone wrote while this waited for the table
            return None
        # Each batch numbers its new documents in the order of their keys (_NEW_ROWS), in the
        # database's collation: asked of the database, in one statement for every batch.
        cursor.execute(
            "CREATE TEMP TABLE pg_temp.simhash_decided (position bigint, batch bigint, key pg_catalog.text) "
            "ON COMMIT DROP"
        )
        with cursor.copy("COPY pg_temp.simhash_decided (position, batch, key) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8", "text"])
            for position, (document, batch) in enumerate(zip(documents, batches)):
                copy.write_row((position, batch, document.key))
        order = [row[0] for row in cursor.execute("SELECT position FROM pg_temp.simhash_decided ORDER BY batch, key")]
        first_id = clusters.allocate_ids(cursor, len(documents))
        ids = [0] * len(documents)
        for rank, position in enumerate(order, start=first_id + 1):
            ids[position] = rank
        # Each batch arrives after every arrival and id stored before it (clusters._LAST_ARRIVAL).
        arrivals: list[int] = []
        last_arrival, last_id, start = 0, 0, 0
        for end in [*(i for i in range(1, len(batches)) if batches[i] != batches[i - 1]), len(batches)]:
            first = max(last_arrival, last_id) + 1
            arrivals.extend(range(first, first + end - start))
            last_arrival, last_id, start = first + end - start - 1, max(ids[start:end]), end
        statement = (
            "COPY simhash.documents (id, key, fingerprint, digest, length, metadata, stamp, keep_value, cluster, arrival) "
            f"FROM STDIN (FORMAT BINARY{', FREEZE' if bare else ''})"
        )
        with (
            rebuild.indexes_dropped(cursor, DECIDED_INDEX_MEMORY) if bare else nullcontext(),
            cursor.copy(statement) as copy,
        ):
            copy.set_types(["int8", "text", "int8", "bytea", "int4", "jsonb", "text", "jsonb", "int8", "int8"])
            for position in order:  # in id order, as the batches insert them
                d = documents[position]
                metadata = Jsonb(d.metadata) if d.metadata is not None else None
                keep_value = Jsonb(d.keep_value) if d.keep_value is not None else None
                copy.write_row(
                    (
                        ids[position],
                        d.key,
                        to_signed(d.fingerprint),
                        d.digest,
                        d.length,
                        metadata,
                        d.stamp,
                        keep_value,
                        ids[leaders[position]],
                        arrivals[position],
                    )
                )
        with cursor.copy("COPY simhash.cluster_heads (cluster, representative_id) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8"])
            for position in sorted((p for p, leader in enumerate(leaders) if leader == p), key=ids.__getitem__):
                copy.write_row((ids[position], ids[position]))
    return ids


def _may_rebuild(cursor: psycopg.Cursor) -> bool | None:
    """Whether the decided documents may go into the bare table, its indexes built after
    (:mod:`.rebuild`): with its exclusive lock had within :data:`DECIDED_LOCK_SECONDS` and nothing
    referencing it. False: into the indexed table, as the batches write (another session holds
    the table, or something hangs off it). None: someone stored documents meanwhile."""
    if maintenance.rebuild_blockers(cursor):
        return False
    try:
        maintenance.lock_exclusively(cursor, DECIDED_LOCK_SECONDS, "the decided documents")
    except LockTimeoutError:
        return False
    blockers = maintenance.rebuild_blockers(cursor)
    if any(blocker.endswith("holds documents") for blocker in blockers):
        return None
    return not blockers


def _stage(cursor: psycopg.Cursor, documents: Iterable[NewDocument]) -> None:
    """The documents into this transaction's staging table (emptied at commit)."""
    cursor.execute(
        "CREATE TEMP TABLE IF NOT EXISTS pg_temp.simhash_incoming "
        "(key pg_catalog.text, fingerprint bigint, digest pg_catalog.bytea, length integer, metadata pg_catalog.jsonb, "
        "stamp pg_catalog.text, keep_value pg_catalog.jsonb, position bigserial) "
        "ON COMMIT DELETE ROWS"
    )
    copy_documents(cursor, "pg_temp.simhash_incoming", documents)


# The segments of every staged key are replaced by the ones given (none: the document keeps none).
_REPLACE_SEGMENTS = (
    "DELETE FROM simhash.segments s USING simhash.documents d, pg_temp.simhash_incoming i "
    "WHERE s.document_id = d.id AND d.key = i.key",
    "INSERT INTO simhash.segments (document_id, segment, fingerprint) "
    "SELECT d.id, g.segment, g.fingerprint FROM pg_temp.simhash_incoming_segments g "
    "JOIN simhash.documents d ON d.key = g.key ORDER BY d.id, g.segment",
)


def _write_segments(cursor: psycopg.Cursor, documents: Iterable[NewDocument]) -> None:
    """Replace the stored segments of the staged documents by theirs (binary COPY, then two statements)."""
    cursor.execute(
        "CREATE TEMP TABLE IF NOT EXISTS pg_temp.simhash_incoming_segments "
        "(key pg_catalog.text, segment integer, fingerprint bigint) ON COMMIT DELETE ROWS"
    )
    with cursor.copy(
        "COPY pg_temp.simhash_incoming_segments (key, segment, fingerprint) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["text", "int4", "int8"])
        for document in documents:
            for number, value in enumerate(document.segments or ()):
                copy.write_row((document.key, number, to_signed(value)))
    for statement in _REPLACE_SEGMENTS:
        cursor.execute(statement)


def _insert_statement(
    template: str, cursor: psycopg.Cursor, distance: int | None, count: int
) -> tuple[str, dict | None]:
    """``template`` over the staged rows: with ids from the identity sequence in a store that keeps
    no clusters, numbered under the cluster lock in one that does (``distance`` not None)."""
    if distance is None:
        return template.format(columns=_COLUMNS + ", arrival", rows=_ROWS), None
    first_id = clusters.allocate_ids(cursor, count)
    return template.format(columns="id, " + _COLUMNS + ", arrival", rows=_NUMBERED_ROWS), {"first_id": first_id}


def _take_skip_near_duplicates_lock(engine: Engine, display_url: str, connection: Connection) -> None:
    """Wait (at most the lock timeout) for this transaction's turn to check and insert."""
    space, key = SKIP_NEAR_DUPLICATES_LOCK
    try:
        connection.execute(select(func.pg_catalog.pg_advisory_xact_lock(space, key)))
    except DBAPIError as exc:
        if getattr(exc.orig, "sqlstate", None) != "55P03":
            raise
        with engine.connect() as other:  # this transaction is aborted
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
            f"database {display_url}: another session held the --skip-near-duplicates lock "
            f"(advisory lock {space}, {key}) for over {lock_timeout():g} s{': ' + who if who else ''}; "
            "nothing of this batch was stored (SIMHASH_STORE_LOCK_TIMEOUT sets the wait)"
        ) from None


def _drop_near_duplicates(
    connection: Connection, documents: list[NewDocument], max_distance: int
) -> tuple[list[NewDocument], list[SkippedNearDuplicate]]:
    """Keep documents with no near-duplicate stored or kept before them (under the advisory lock)."""
    with connection.connection.driver_connection.cursor() as cursor:
        matches = reads.query_many(cursor, [d.fingerprint for d in documents], max_distance, None)
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


def set_stamps(connection: Connection, stamps: dict[str, str]) -> None:
    """Record new file stamps of stored documents whose content did not change."""
    c = documents_table.c
    given = (
        func.unnest(bindparam("keys", type_=ARRAY(Text)), bindparam("stamps", type_=ARRAY(Text)))
        .table_valued("key", "stamp")
        .render_derived(name="s")
    )
    connection.execute(
        update(documents_table)
        .values(stamp=given.c.stamp)
        .where(c.key == given.c.key, c.stamp.is_distinct_from(given.c.stamp)),
        {"keys": list(stamps), "stamps": list(stamps.values())},
    )


# The largest id removed, kept so that no new document takes it again (clusters.allocate_ids numbers
# from above it). The row is locked only when the id is above what is recorded.
_RETIRE = """
    UPDATE simhash.store_info SET highest_retired_id = GREATEST(highest_retired_id, CAST(:id AS bigint))
    WHERE highest_retired_id IS DISTINCT FROM GREATEST(highest_retired_id, CAST(:id AS bigint))
"""


def remove(connection: Connection, keys: list[str]) -> RemoveResult:
    """Delete documents by (distinct) key, retiring their ids; which were removed and which were not stored."""
    c = documents_table.c
    rows = connection.execute(
        delete(documents_table).where(c.key == any_(bindparam("keys", type_=ARRAY(Text)))).returning(c.key, c.id),
        {"keys": keys},
    )
    removed = {key: id_ for key, id_ in rows}
    if removed and _may_retire(connection):
        connection.execute(text(_RETIRE), {"id": max(removed.values())})
    return RemoveResult([k for k in keys if k in removed], [k for k in keys if k not in removed])


def _may_retire(connection: Connection) -> bool:
    """Whether this role may record retired ids (UPDATE is checked when a statement is planned,
    whatever its WHERE says, so it is asked first)."""
    return connection.execute(
        text("SELECT pg_catalog.has_column_privilege('simhash.store_info', 'highest_retired_id', 'UPDATE')")
    ).scalar_one()


# ------------------------------------------------------------ decided documents written from many writers
#
# ``dedup_dataset`` (keep first, an empty store) decides on its driver; the documents' rows are written
# by the Ray workers that hold the records, each block in one transaction into a staging table the
# driver made for the run, and moved into the store by the driver in one transaction under the
# cluster lock. The rows are built as whole columns (numpy, Arrow): no Python object a document.

_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8  # header: signature, flags, no extension
_COPY_TRAILER = b"\xff\xff"
STAGING_PREFIX = "dedup_staging_"  # simhash.dedup_staging_<32 hex digits>: one a run, dropped at its end
# Held shared by each run while its staging table exists (a session lock of the driver's): a stale
# table (a driver that died) is dropped only by a run that gets it exclusively, when no run is live.
STAGING_LOCK = (ADVISORY_LOCK_SPACE, 3)  # 1: --skip-near-duplicates, 2: the cluster lock (clusters.py)
_STAGED_COLUMNS = ("block", "key", "fingerprint", "digest", "length", "rank", "leader", "arrival")


def binary_copy(columns: Sequence[tuple[str, Any]]) -> bytes:
    """The rows of ``columns`` as a PostgreSQL binary COPY stream, built column by column.

    Each column is (kind, values): ``int8`` or ``int4`` (a numpy integer array), or ``text`` or
    ``bytea`` (a pyarrow string or binary array; a null is NULL). Text goes as UTF-8 (the caller's
    session must use that client encoding)."""
    import pyarrow as pa

    count = len(columns[0][1])
    widths: list[np.ndarray] = []
    pieces: list[tuple[str, Any, np.ndarray | None]] = []
    array: Any
    for kind, values in columns:
        if kind in ("int8", "int4"):
            size = 8 if kind == "int8" else 4
            array = np.asarray(values).astype(f">i{size}")
            widths.append(np.full(count, 4 + size, dtype=np.int64))
            pieces.append((kind, array, None))
            continue
        array = pa.array(values) if not isinstance(values, (pa.Array, pa.ChunkedArray)) else values
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        array = array.cast(pa.large_binary())  # 64-bit offsets; a string's bytes are its UTF-8
        offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + count + 1]
        lengths = np.diff(offsets)
        valid = ~np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        lengths = np.where(valid, lengths, 0)
        widths.append(4 + lengths)
        pieces.append((kind, array, np.where(valid, lengths, -1)))
    row_sizes = 2 + np.sum(widths, axis=0) if widths else np.full(count, 2, dtype=np.int64)
    starts = len(_COPY_SIGNATURE) + np.concatenate(([0], np.cumsum(row_sizes)[:-1])).astype(np.int64)
    out = np.zeros(len(_COPY_SIGNATURE) + int(row_sizes.sum()) + 2, dtype=np.uint8)
    out[: len(_COPY_SIGNATURE)] = np.frombuffer(_COPY_SIGNATURE, dtype=np.uint8)
    out[-2:] = 0xFF
    field_count = np.array([len(columns)], dtype=">i2").view(np.uint8)
    out[starts[:, None] + np.arange(2)] = field_count
    at = starts + 2
    for (_, array, sizes_or_none), width in zip(pieces, widths):
        if sizes_or_none is None:  # fixed width: the length, then the value, big-endian
            size = width[0] - 4 if count else 0
            fixed = np.empty((count, 4 + size), dtype=np.uint8)
            fixed[:, :4] = np.array([size], dtype=">i4").view(np.uint8)
            fixed[:, 4:] = np.asarray(array).view(np.uint8).reshape(count, size)
            out[at[:, None] + np.arange(4 + size)] = fixed
        else:
            lengths = sizes_or_none
            out[at[:, None] + np.arange(4)] = lengths.astype(">i4").view(np.uint8).reshape(count, 4)
            data = np.frombuffer(array.buffers()[2], dtype=np.uint8) if array.buffers()[2] is not None else None
            offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + count + 1]
            sizes = np.maximum(lengths, 0)
            total = int(sizes.sum())
            if total and data is not None:
                # Each byte of each value, from its place in the array's data to its place in the row.
                source = np.repeat(offsets[:-1], sizes) + (
                    np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
                )
                target = source - np.repeat(offsets[:-1], sizes) + np.repeat(at + 4, sizes)
                out[target] = data[source]
        at = at + width
    return out.tobytes()


_ORDER_PART = 50_000_000  # documents whose order is read back in one value (8 bytes each)


def decided_order(engine: Engine, keys: object, batches: np.ndarray) -> np.ndarray:
    """The positions of the documents (``keys``, a pyarrow string array, with each one's batch
    number) in the order their batches number them: by batch, then by key in the database's collation."""
    count = len(batches)
    payload = binary_copy([("int8", np.arange(count, dtype=np.int64)), ("int8", batches), ("text", keys)])
    with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
        cursor.execute("SELECT pg_catalog.set_config('client_encoding', 'UTF8', true)")
        cursor.execute(
            "CREATE TEMP TABLE pg_temp.simhash_decided (position bigint, batch bigint, key pg_catalog.text) "
            "ON COMMIT DROP"
        )
        with cursor.copy("COPY pg_temp.simhash_decided (position, batch, key) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(payload)
        # Read back as one bytea of big-endian bigints per part (one value, not a row a document),
        # each part some batches whole, well under the 1 GB a value may hold.
        parts: list[np.ndarray] = []
        ends = np.flatnonzero(np.diff(batches)) + 1
        start = 0
        while start < count:
            end = count
            if start + _ORDER_PART < count:  # at the last batch boundary within the part, else the next one
                within = ends[(ends > start) & (ends <= start + _ORDER_PART)]
                later = ends[ends > start]
                end = int(within[-1]) if len(within) else int(later[0]) if len(later) else count
            row = cursor.execute(
                "SELECT pg_catalog.string_agg(pg_catalog.int8send(position), ''::pg_catalog.bytea ORDER BY batch, key) "
                "FROM pg_temp.simhash_decided WHERE batch BETWEEN %s AND %s",
                (int(batches[start]), int(batches[end - 1])),
            ).fetchone()
            parts.append(np.frombuffer(row[0] if row and row[0] else b"", dtype=">i8").astype(np.int64))
            start = end
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def staging_name() -> str:
    """A fresh name for a run's staging table (in schema simhash)."""
    import secrets

    return STAGING_PREFIX + secrets.token_hex(16)


def _checked_name(name: str) -> str:
    if len(name) != len(STAGING_PREFIX) + 32 or not name.startswith(STAGING_PREFIX):
        raise ValueError(f"not a staging table's name: {name!r}")
    int(name[len(STAGING_PREFIX) :], 16)
    return name


def _staging(name: str) -> sql.Composed:
    return sql.SQL("simhash.{}").format(sql.Identifier(_checked_name(name)))


def may_stage(cursor: psycopg.Cursor) -> bool:
    """Whether this role may make the run's staging table: it may create tables in schema simhash
    and is (a member of) the owner of simhash.documents, so the table is the store owner's."""
    row = cursor.execute(
        "SELECT pg_catalog.has_schema_privilege('simhash', 'CREATE') "
        "AND pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE') "
        "FROM pg_catalog.pg_class c WHERE c.oid = 'simhash.documents'::pg_catalog.regclass"
    ).fetchone()
    return bool(row and row[0])


def create_staging(cursor: psycopg.Cursor, name: str) -> None:
    """On the driver's own session (autocommit), held for the run: drop the staging tables of runs
    whose driver is gone (only if no run is live), then make this run's (unlogged; on Citus
    distributed by key, colocated with simhash.documents, so the move runs on every shard)."""
    space, key = STAGING_LOCK
    row = cursor.execute("SELECT pg_catalog.pg_try_advisory_lock(%s, %s)", (space, key)).fetchone()
    if row is not None and row[0]:
        try:
            stale = cursor.execute(
                "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname OPERATOR(pg_catalog.=) 'simhash' AND c.relkind OPERATOR(pg_catalog.=) 'r' "
                "AND pg_catalog.starts_with(c.relname::pg_catalog.text, %s) "
                "AND pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE')",
                (STAGING_PREFIX,),
            ).fetchall()
            for (old,) in stale:
                try:
                    _drop_unless_held(cursor, old)
                except ValueError:
                    continue  # not a name this module makes: not ours to drop
        finally:
            cursor.execute("SELECT pg_catalog.pg_advisory_unlock(%s, %s)", (space, key))
    cursor.execute("SELECT pg_catalog.pg_advisory_lock_shared(%s, %s)", (space, key))
    # Only the store's owner sees it: the grants default privileges of schema simhash give (a reader's
    # SELECT; TRIGGER, with which another role put a trigger of its own function on the table, run by
    # the workers' COPY with the owner's rights) are revoked in the transaction that makes it, so no
    # other session ever sees the table with them.
    with cursor.connection.transaction():
        cursor.execute(
            sql.SQL(
                "CREATE UNLOGGED TABLE {} (block integer NOT NULL, key pg_catalog.text NOT NULL, "
                "fingerprint bigint NOT NULL, digest pg_catalog.bytea, length integer, rank bigint NOT NULL, "
                "leader bigint NOT NULL, arrival bigint NOT NULL)"
            ).format(_staging(name))
        )
        grantees = cursor.execute(
            "SELECT DISTINCT r.rolname FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a "
            "JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee "
            "WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(%s) "
            "AND a.grantee OPERATOR(pg_catalog.<>) c.relowner",
            (f"simhash.{_checked_name(name)}",),
        ).fetchall()
        for (grantee,) in grantees:
            cursor.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(_staging(name), sql.Identifier(grantee)))
        cursor.execute(sql.SQL("REVOKE ALL ON {} FROM PUBLIC").format(_staging(name)))
    if distributed.is_distributed(cursor):
        cursor.execute(
            "SELECT pg_catalog.create_distributed_table(%s, 'key', colocate_with => 'simhash.documents')",
            (f"simhash.{_checked_name(name)}",),
        )


# How long dropping a staging table waits for another session's lock on it: any role that may read it
# (a member of pg_read_all_data needs no grant) can hold it in an open transaction. A table held is
# left for a later run to drop, rather than failing this one (or every later one, a stale table held).
_DROP_WAIT = "1s"


def _drop_unless_held(cursor: psycopg.Cursor, name: str) -> bool:
    """Drop the staging table ``name`` (autocommit session) unless another session holds a lock on it
    past :data:`_DROP_WAIT`; whether it is gone."""
    try:
        with cursor.connection.transaction():
            cursor.execute("SELECT pg_catalog.set_config('lock_timeout', %s, true)", (_DROP_WAIT,))
            cursor.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(_staging(name)))
        return True
    except psycopg.errors.LockNotAvailable:
        return False


def drop_staging(cursor: psycopg.Cursor, name: str) -> None:
    """On the driver's session: the run's staging table dropped (unless another session holds it: then
    a later run drops it), its lock let go."""
    try:
        _drop_unless_held(cursor, name)
    finally:
        cursor.execute("SELECT pg_catalog.pg_advisory_unlock_shared(%s, %s)", STAGING_LOCK)


def stage_block(engine: Engine, name: str, block: int, payload: bytes) -> None:
    """One block's rows (a binary COPY of :data:`_STAGED_COLUMNS`, every row of block ``block``)
    into the run's staging table, in one transaction that first deletes the block's rows: a block
    written again (a task Ray retried) is there once."""
    table = _staging(name)

    def work() -> None:
        with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
            cursor.execute("SELECT pg_catalog.set_config('client_encoding', 'UTF8', true)")
            cursor.execute(sql.SQL("DELETE FROM {} WHERE block = %s").format(table), (block,))
            statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
                table, sql.SQL(", ").join(map(sql.Identifier, _STAGED_COLUMNS))
            )
            with cursor.copy(statement) as copy:
                copy.write(payload)

    retry(engine, work)


def staged_payload(
    block: int,
    keys: object,
    values: np.ndarray,
    digests: object,
    lengths: np.ndarray,
    ranks: np.ndarray,
    leaders: np.ndarray,
    arrivals: np.ndarray,
) -> bytes:
    """The staged rows of one block (see :func:`stage_block`), from its documents' columns."""
    count = len(values)
    return binary_copy(
        [
            ("int4", np.full(count, block, dtype=np.int32)),
            ("text", keys),
            ("int8", np.asarray(values, dtype=np.uint64).view(np.int64)),
            ("bytea", digests),
            ("int4", np.asarray(lengths, dtype=np.int64).astype(np.int32)),
            ("int8", ranks),
            ("int8", leaders),
            ("int8", arrivals),
        ]
    )


def move_staged(engine: Engine, name: str, distance: int, blocks: dict[int, int], first_batch: int) -> int | None:
    """Under the cluster lock, in one transaction: the staged documents into a store that holds none
    and keeps clusters at ``distance`` with keep ``first``, each with its id (the highest id the store
    has used, plus its rank), cluster (its leader's id) and arrival (each batch after everything stored
    before it: the first ``first_batch`` documents from 1 on, the later ones after their ids too), the
    heads of the clusters (the staging table is dropped after, by :func:`drop_staging`: dropping it
    here waited for any session that read it and held it, and the move failed). ``blocks``: how many rows each block staged
    (checked first: a block missing or written twice is an error, nothing stored). Returns the highest
    id used before (ids are it plus the ranks); None, writing nothing, if the store is not so."""
    table = _staging(name)

    def work() -> int | None:
        with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
            if clusters.lock_for_write(cursor) != distance or clusters.keep_policy(cursor).kind != "first":
                return None
            if cursor.execute("SELECT EXISTS (SELECT 1 FROM simhash.documents)").fetchone()[0]:
                return None
            staged = dict(
                cursor.execute(
                    sql.SQL("SELECT block, pg_catalog.count(*) FROM {} GROUP BY block").format(table)
                ).fetchall()
            )
            if staged != {block: rows for block, rows in blocks.items() if rows}:
                wrong = sorted(b for b in set(staged) | set(blocks) if staged.get(b, 0) != blocks.get(b, 0))
                raise SimhashStoreError(
                    f"the staged documents of blocks {wrong[:5]} are not the rows the run decided: nothing was stored"
                )
            count = sum(blocks.values())
            bare = _may_rebuild(cursor) if count else False
            if bare is None:
                return None
            first_id = clusters.allocate_ids(cursor, count)
            citus = distributed.is_distributed(cursor)
            order = sql.SQL("" if citus else " ORDER BY s.rank")  # Citus: on each shard, in parallel
            values = {"first_id": first_id, "first_batch": first_batch}
            with rebuild.indexes_dropped(cursor, DECIDED_INDEX_MEMORY) if bare else nullcontext():
                cursor.execute(
                    sql.SQL(
                        "INSERT INTO simhash.documents (id, key, fingerprint, digest, length, cluster, arrival) "
                        "SELECT %(first_id)s + s.rank, s.key, s.fingerprint, s.digest, s.length, %(first_id)s + s.leader, "
                        "s.arrival + CASE WHEN s.arrival > %(first_batch)s THEN %(first_id)s ELSE 0 END "
                        "FROM {} s{}"
                    ).format(table, order),
                    values,
                )
            cursor.execute(
                sql.SQL(
                    "INSERT INTO simhash.cluster_heads (cluster, representative_id) "
                    "SELECT %(first_id)s + s.rank, %(first_id)s + s.rank FROM {} s WHERE s.leader = s.rank{}"
                ).format(table, order),
                values,
            )
        return first_id

    return retry(engine, work)
