"""The bulk load's fast path: into an empty table nothing references, drop the key, id and block
indexes, COPY FREEZE every row, and build the indexes again over them.

Raw psycopg throughout: COPY, and DDL read back from the catalogue (pg_get_constraintdef).
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg
from psycopg import sql
from sqlalchemy import Engine

from .. import maintenance
from .documents import NewDocument
from .writes import copy_documents

DEFAULT_LOAD_BATCH_SIZE = 50_000  # a load into a store it may not rebuild: rows per transaction
DEFAULT_LOCK_TIMEOUT = 10.0  # seconds a bulk load or VACUUM waits for the table before giving up
SEGMENTS_FOREIGN_KEY = "fk_segments_document_id_documents"
_HAS_SEGMENTS_FOREIGN_KEY = (
    "SELECT EXISTS (SELECT FROM pg_catalog.pg_constraint WHERE conname OPERATOR(pg_catalog.=) "
    f"'{SEGMENTS_FOREIGN_KEY}' AND conrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass('simhash.segments'))"
)


def load_rebuilding(
    engine: Engine, documents: Iterable[NewDocument], lock_timeout: float, index_memory: str
) -> tuple[int, int] | None:
    """(rows received, repeated keys dropped); None (nothing read) if, once locked, the table no
    longer qualifies."""
    with engine.begin() as connection:
        raw = connection.connection.driver_connection
        with raw.cursor() as cursor:
            maintenance.lock_exclusively(cursor, lock_timeout, "a bulk load")
            if maintenance.rebuild_blockers(cursor):  # someone wrote or referenced it meanwhile
                return None
            cursor.execute("SELECT pg_catalog.set_config('maintenance_work_mem', %s, true)", (index_memory,))
            # The segments' foreign key hangs off the id's index: it goes first and comes back last
            # (the segments are empty, as the documents are).
            had_foreign_key = cursor.execute(_HAS_SEGMENTS_FOREIGN_KEY).fetchone()[0]
            if had_foreign_key:
                cursor.execute(f"ALTER TABLE simhash.segments DROP CONSTRAINT {SEGMENTS_FOREIGN_KEY}")
            indexes = _drop_indexes_and_constraints(cursor)
            received = copy_documents(cursor, "simhash.documents", documents, freeze=True)
            repeated = _rebuild_indexes_and_constraints(cursor, indexes)
            if had_foreign_key:
                cursor.execute(
                    f"ALTER TABLE simhash.segments ADD CONSTRAINT {SEGMENTS_FOREIGN_KEY} FOREIGN KEY (document_id) "
                    "REFERENCES simhash.documents (id) ON DELETE CASCADE"
                )
            # Statistics now; COPY FREEZE already set the visibility map (PostgreSQL 14+).
            cursor.execute("ANALYZE simhash.documents")
    return received, repeated


def _drop_indexes_and_constraints(cursor: psycopg.Cursor) -> list[tuple[str | None, str]]:
    """Empty the table (TRUNCATE, so COPY may FREEZE) and drop its key, id and block indexes; returns how
    to build each again: (constraint name or None, definition)."""
    cursor.execute("TRUNCATE simhash.documents")
    # pg_get_constraintdef leaves out the index's storage parameters (pk_documents's fillfactor).
    cursor.execute(
        "SELECT k.conname, pg_catalog.pg_get_constraintdef(k.oid) || coalesce(' WITH (' || "
        "pg_catalog.array_to_string(i.reloptions, ', ') || ')', '') "
        "FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class i ON i.oid = k.conindid "
        "WHERE k.conrelid = 'simhash.documents'::regclass AND k.contype IN ('p', 'u') ORDER BY k.conname"
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


def _rebuild_indexes_and_constraints(cursor: psycopg.Cursor, definitions: list[tuple[str | None, str]]) -> int:
    """Build what :func:`_drop_indexes_and_constraints` dropped; if keys repeat, only the last
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
            "(SELECT key, pg_catalog.max(id) AS last FROM simhash.documents GROUP BY key HAVING pg_catalog.count(*) > 1) r "
            "WHERE d.key = r.key AND d.id < r.last"
        )
        repeated = cursor.rowcount
        for statement in add_constraints:
            cursor.execute(statement)
    for name, definition in definitions:
        if name is None:
            cursor.execute(definition)
    return repeated
