"""The documents table bare while rows are COPYed in, its indexes built over them after: many times
cheaper than inserting each row into six B-trees. For the bulk load and for ``dedup``'s decided
documents, into an empty table this role owns and nothing else references
(:func:`maintenance.rebuild_blockers`), under its exclusive lock (:func:`maintenance.lock_exclusively`).

Raw psycopg: DDL read back from the catalogue (pg_get_constraintdef).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import sql

SEGMENTS_FOREIGN_KEY = "fk_segments_document_id_documents"
_HAS_SEGMENTS_FOREIGN_KEY = (
    "SELECT EXISTS (SELECT FROM pg_catalog.pg_constraint WHERE conname OPERATOR(pg_catalog.=) "
    f"'{SEGMENTS_FOREIGN_KEY}' AND conrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass('simhash.segments'))"
)


@dataclass
class Rebuilt:
    """What the rebuild found: rows dropped because their key repeated (the last of each kept)."""

    repeated: int = 0


@contextmanager
def indexes_dropped(cursor: psycopg.Cursor, index_memory: str) -> Iterator[Rebuilt]:
    """Inside: the documents table emptied by TRUNCATE (so COPY may FREEZE) without its key, id and
    block indexes; after: every one built again over the rows, and statistics taken. The caller holds
    the table's exclusive lock and has checked that nothing blocks a rebuild."""
    cursor.execute("SELECT pg_catalog.set_config('maintenance_work_mem', %s, true)", (index_memory,))
    # The segments' foreign key hangs off the id's index: it goes first and comes back last
    # (the segments are empty, as the documents are).
    row = cursor.execute(_HAS_SEGMENTS_FOREIGN_KEY).fetchone()
    had_foreign_key = bool(row and row[0])
    if had_foreign_key:
        cursor.execute(f"ALTER TABLE simhash.segments DROP CONSTRAINT {SEGMENTS_FOREIGN_KEY}")
    indexes = _drop_indexes_and_constraints(cursor)
    rebuilt = Rebuilt()
    yield rebuilt
    rebuilt.repeated = _rebuild_indexes_and_constraints(cursor, indexes)
    if had_foreign_key:
        cursor.execute(
            f"ALTER TABLE simhash.segments ADD CONSTRAINT {SEGMENTS_FOREIGN_KEY} FOREIGN KEY (document_id) "
            "REFERENCES simhash.documents (id) ON DELETE CASCADE"
        )
    # Statistics now; COPY FREEZE already set the visibility map (PostgreSQL 14+).
    cursor.execute("ANALYZE simhash.documents")


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
