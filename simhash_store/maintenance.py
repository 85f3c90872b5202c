"""Keeping ``simhash.documents`` query-ready, and the checks and the lock a bulk load needs.

SQL over a psycopg connection, nothing else. Why a store needs looking after: right
after a bulk write the planner has no statistics and the visibility map is empty, so
block probes read every candidate from the heap (and may not use the block indexes at
all) until autovacuum gets round to the table. ``VACUUM (ANALYZE)`` fixes both; it cannot
run inside a transaction, and only the table's owner (or the database owner, or from
PostgreSQL 17 a role with MAINTAIN) may run it: others get a warning from the server
and nothing done, which :func:`vacuum_analyze` turns into a fallback and a reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg

from .config import SEARCH_PATH
from .errors import LockTimeoutError

TABLE = "simhash.documents"
# A write that changes more than this share of the rows (and at least MIN_ROWS) is followed
# by VACUUM (ANALYZE): "a few percent", well before autovacuum (10 % for ANALYZE, 20 % of
# inserts for VACUUM) would get to it. Below MIN_ROWS nothing is slow enough to matter, and
# a writer adding batch after batch to a small store does not vacuum after every one.
GROWTH = 0.05
MIN_ROWS = 1_000
# A bulk load asks for its exclusive lock in attempts this long, pausing between them, so
# that readers arriving meanwhile queue behind it for at most this long at a time.
LOCK_ATTEMPT_SECONDS = 0.2
LOCK_PAUSE_SECONDS = 0.1


def needs_maintenance(changed_rows: int, rows_before: float) -> bool:
    """Whether a write of ``changed_rows`` into a table of about ``rows_before`` rows calls for VACUUM (ANALYZE)."""
    return changed_rows >= MIN_ROWS and changed_rows > GROWTH * max(rows_before, 0.0)


def estimated_rows(connection: psycopg.Connection) -> float:
    """The planner's row count (as of the last VACUUM, ANALYZE or index build; 0 if never)."""
    row = connection.execute(
        "SELECT reltuples FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) 'simhash.documents'::pg_catalog.regclass"
    ).fetchone()
    return max(float(row[0]), 0.0) if row else 0.0


@dataclass(frozen=True)
class Maintenance:
    """What :func:`vacuum_analyze` got done, and if not everything, why (the server's words)."""

    vacuumed: bool
    analyzed: bool
    reason: str | None = None


# vacuum_cost_delay too: any role may set it, and the database's owner for every session
# (ALTER DATABASE ... SET): at 100 ms with vacuum_cost_limit 1, a VACUUM of 5,000 documents took
# 39 s, and one of millions would take hours. 0 is PostgreSQL's own default for a VACUUM run by hand.
_SETTINGS = (
    "SELECT pg_catalog.current_setting('lock_timeout'), pg_catalog.current_setting('search_path'), "
    "pg_catalog.current_setting('vacuum_cost_delay')"
)
_SET = (
    "SELECT pg_catalog.set_config('lock_timeout', %s::pg_catalog.text, false), "
    "pg_catalog.set_config('search_path', %s::pg_catalog.text, false), "
    "pg_catalog.set_config('vacuum_cost_delay', %s::pg_catalog.text, false)"
)


def vacuum_analyze(connection: psycopg.Connection, lock_timeout: float) -> Maintenance:
    """``VACUUM (ANALYZE)`` of the documents table, else ``ANALYZE``, else nothing, with the reason.

    ``connection`` must be in autocommit (VACUUM refuses a transaction). Waits for the
    table's maintenance lock (another VACUUM, an index build) at most ``lock_timeout`` seconds.
    """
    warnings: list[str] = []

    def collect(diagnostic: psycopg.errors.Diagnostic) -> None:
        if diagnostic.severity_nonlocalized == "WARNING":
            warnings.append(diagnostic.message_primary or "the server skipped the table")

    # In autocommit, on an engine the caller made, no transaction pins the search_path: it is
    # set here for the session and put back afterwards, with the lock timeout.
    previous = connection.execute(_SETTINGS).fetchone()
    connection.execute(_SET, (_milliseconds(lock_timeout), SEARCH_PATH, "0"))
    connection.add_notice_handler(collect)
    # A wait on a page another session pins, which lock_timeout does not bound, is bounded by the
    # connection's watch (session.WatchedConnection) to as long.
    watched = hasattr(connection, "pin_cancelled")
    if watched:
        connection.pin_wait, connection.pin_cancelled = lock_timeout, None  # type: ignore[attr-defined]
    try:
        # INDEX_CLEANUP ON: without it VACUUM leaves a few dead rows (fewer than 2 % of pages) in
        # place, and their pages out of the visibility map; with no dead rows it costs nothing.
        connection.execute("VACUUM (ANALYZE, INDEX_CLEANUP ON) simhash.documents")
        if not warnings:
            return Maintenance(vacuumed=True, analyzed=True)
        reason = warnings[0]
        warnings.clear()
        connection.execute("ANALYZE simhash.documents")
        return Maintenance(vacuumed=False, analyzed=not warnings, reason=reason)
    except psycopg.errors.LockNotAvailable:
        return Maintenance(False, False, f"{TABLE} was busy (another VACUUM or an index build) for {lock_timeout:g} s")
    except psycopg.errors.QueryCanceled:
        pinned: str | None = getattr(connection, "pin_cancelled", None)
        if not pinned:
            raise
        warnings.clear()
        connection.execute("ANALYZE simhash.documents")
        return Maintenance(vacuumed=False, analyzed=not warnings, reason=pinned)
    finally:
        if watched:
            connection.pin_wait = connection.pin_cancelled = None  # type: ignore[attr-defined]
        connection.remove_notice_handler(collect)
        connection.execute(_SET, previous)


def rebuild_blockers(cursor: psycopg.Cursor) -> list[str]:
    """Why a bulk load may not drop and rebuild the table's indexes and constraints (empty: it may).

    Only on an empty table that this role owns and that nothing else hangs off: no other
    application's foreign key (it depends on the key's unique index), view rule or trigger.
    """
    # On its own: Citus cannot run a statement that reads a distributed table beside pg_index.
    empty = cursor.execute("SELECT NOT EXISTS (SELECT 1 FROM simhash.documents)").fetchone()[
        0
    ]  # Citus 13.2 cannot plan the empty form
    cursor.execute(
        """
        WITH own_foreign_key AS (  -- simhash.segments' own, which the load drops and adds again
            SELECT oid FROM pg_catalog.pg_constraint
            WHERE conname OPERATOR(pg_catalog.=) 'fk_segments_document_id_documents'
              AND conrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass('simhash.segments')
        )
        SELECT pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE'),
               ARRAY(
                   SELECT DISTINCT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
                   FROM pg_catalog.pg_depend AS d
                   WHERE d.deptype = 'n' AND NOT (d.classid = 'pg_catalog.pg_constraint'::pg_catalog.regclass
                                                  AND d.objid IN (SELECT oid FROM own_foreign_key))
                     AND ((d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
                           AND d.refobjid IN (SELECT indexrelid FROM pg_catalog.pg_index WHERE indrelid = c.oid))
                       OR (d.refclassid = 'pg_catalog.pg_constraint'::pg_catalog.regclass
                           AND d.refobjid IN (SELECT oid FROM pg_catalog.pg_constraint WHERE conrelid = c.oid)))
                   UNION
                   SELECT pg_catalog.format('foreign key %I on %s', conname, conrelid::pg_catalog.regclass)
                   FROM pg_catalog.pg_constraint WHERE confrelid = c.oid AND contype = 'f'
                     AND oid NOT IN (SELECT oid FROM own_foreign_key)
                   UNION
                   SELECT pg_catalog.format('trigger %I', tgname)
                   FROM pg_catalog.pg_trigger WHERE tgrelid = c.oid AND NOT tgisinternal
                   ORDER BY 1
               )
        FROM pg_catalog.pg_class AS c WHERE c.oid = 'simhash.documents'::pg_catalog.regclass
        """
    )
    owner, dependents = cursor.fetchone()
    blockers = []
    if not owner:
        blockers.append(f"this role does not own {TABLE}")
    if not empty:
        blockers.append(f"{TABLE} holds documents")
    blockers += [f"{TABLE} is referenced by {dependent}" for dependent in dependents]
    return blockers


def lock_exclusively(cursor: psycopg.Cursor, lock_timeout: float, purpose: str) -> None:
    """ACCESS EXCLUSIVE on the documents table within ``lock_timeout`` seconds, else :class:`LockTimeoutError`.

    Asked for in short attempts (``LOCK_ATTEMPT_SECONDS``) with pauses between: a waiting
    lock request makes every later reader queue behind it, so each wait is kept short.
    Must run inside a transaction; the lock is held until it ends.
    """
    previous = cursor.execute("SELECT pg_catalog.current_setting('lock_timeout')").fetchone()[0]
    deadline = time.monotonic() + lock_timeout
    while True:
        attempt = min(LOCK_ATTEMPT_SECONDS, max(deadline - time.monotonic(), 0.001))
        cursor.execute("SAVEPOINT simhash_lock")
        cursor.execute("SELECT pg_catalog.set_config('lock_timeout', %s, true)", (_milliseconds(attempt),))
        try:
            cursor.execute("LOCK TABLE simhash.documents IN ACCESS EXCLUSIVE MODE")
        except psycopg.errors.LockNotAvailable:
            cursor.execute("ROLLBACK TO SAVEPOINT simhash_lock")
            if time.monotonic() + LOCK_PAUSE_SECONDS >= deadline:
                raise LockTimeoutError(
                    f"could not lock {TABLE} for {purpose} within {lock_timeout:g} s: another session holds a lock "
                    "on it (for example a transaction left open, see pg_stat_activity); nothing was stored"
                ) from None
            time.sleep(LOCK_PAUSE_SECONDS)
            continue
        cursor.execute("RELEASE SAVEPOINT simhash_lock")
        cursor.execute("SELECT pg_catalog.set_config('lock_timeout', %s, true)", (previous,))
        return


# The largest id given: of a stored document, or of a removed one (ids are never given twice).
_GIVEN = (
    "GREATEST((SELECT pg_catalog.max(id) FROM simhash.documents), "
    "(SELECT highest_retired_id FROM simhash.store_info), 0)"
)
_SEQUENCE = (
    "(SELECT pg_catalog.pg_get_serial_sequence('simhash.documents', 'id')::pg_catalog.regclass AS sequence) AS s"
)


def resync_id_sequence(cursor: psycopg.Cursor) -> None:
    """Move the id sequence past the largest id given (rows inserted with explicit ids overtake it); never back."""
    cursor.execute(
        f"SELECT pg_catalog.setval(s.sequence, GREATEST({_GIVEN}, pg_catalog.nextval(s.sequence))) FROM {_SEQUENCE}"
    )


def id_sequence_past_given_ids(cursor: psycopg.Cursor) -> None:
    """Before a writer's first write, where its role may: the id sequence moved past the largest id
    given, if it is behind. A role that may update the sequence (a member of pg_write_all_data) can
    set it back, and new documents of a store that keeps no clusters then took the ids of removed
    ones (when past every stored id, nothing conflicts). Uses no value of the sequence."""
    cursor.execute(
        f"SELECT pg_catalog.setval(s.sequence, {_GIVEN}) FROM {_SEQUENCE} "
        "WHERE CASE WHEN pg_catalog.has_sequence_privilege(s.sequence, 'UPDATE') "
        "AND pg_catalog.has_sequence_privilege(s.sequence, 'SELECT, USAGE') "
        f"THEN {_GIVEN} OPERATOR(pg_catalog.>) COALESCE(pg_catalog.pg_sequence_last_value(s.sequence), 0) "
        "ELSE false END"
    )


def _milliseconds(seconds: float) -> str:
    return f"{max(int(seconds * 1000), 1)}ms"
