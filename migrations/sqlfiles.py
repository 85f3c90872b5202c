"""The SQL functions revisions create, one file per version: ``migrations/sql/<function>.v<N>.sql``.

A file is a version of ``simhash.<function>`` as one server runs it: a ``CREATE OR REPLACE
FUNCTION`` statement and its ``COMMENT``, the text a reviewer reads. Where a Citus coordinator
needs another text, ``<function>.v<N>.citus.sql`` beside it is that version written out for
Citus (``<function>.v<N>.citus.sql`` alone: a function only a Citus store has). Once a released
revision loads a file, the file is frozen like the revision (``tests/test_migrations.py`` holds
the hash of every one): a change is a new version in a new file, loaded by a new revision.

Revisions from 0008 on call :func:`create`, which picks the Citus file on a distributed store;
``simhash_store.distributed`` uses :func:`citus_variants` to lay out a store distributed later.
This module imports nothing of the library: the library may read the files through it.

>>> "RETURNS SETOF simhash.match" in read("near.v3")
True
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SQL_DIRECTORY = Path(__file__).with_name("sql")
# The versions of near and near_many a store of each block layout (store_info.layout, revision
# 0011) runs at the newest revision. A revision that brings a new version of either replaces
# the one of the store's layout, and updates this.
# lean (revision 0012) keeps four16's block columns: it runs four16's functions.
LAYOUT_FUNCTIONS = {
    "four16": ("near.v4", "near_many.v2"),
    "wide3": ("near.wide3.v2", "near_many.wide3.v2"),
    "lean": ("near.v4", "near_many.v2"),
}
VERSIONS_DIRECTORY = Path(__file__).with_name("versions")
CITUS_SUFFIX = ".citus.sql"


def path(version: str, citus: bool = False) -> Path:
    """The file of ``version`` ("near.v3"), or of its Citus variant."""
    return SQL_DIRECTORY / f"{version}{CITUS_SUFFIX if citus else '.sql'}"


def read(version: str, citus: bool = False) -> str:
    return path(version, citus).read_text(encoding="utf-8")


def has_citus_variant(version: str) -> bool:
    return path(version, citus=True).exists()


def body(statement: str) -> str:
    """The body of the function a file creates, as PostgreSQL keeps it (``pg_proc.prosrc``): between ``AS $$`` and ``$$``.

    Empty for an SQL-standard body (``RETURN ...``), which PostgreSQL keeps parsed, not as text.
    """
    start = statement.find("AS $$")
    if start < 0:
        return ""
    start += len("AS $$")
    return statement[start : statement.index("$$", start)]


def citus_variants() -> dict[str, str]:
    """For every version with a Citus variant: the body of its one-server form -> the Citus file's text.

    A function installed with that body is that version (bodies are compared, never rewritten).
    """
    variants = {}
    for citus_file in sorted(SQL_DIRECTORY.glob(f"*{CITUS_SUFFIX}")):
        version = citus_file.name[: -len(CITUS_SUFFIX)]
        if path(version).exists():
            variants[body(read(version))] = citus_file.read_text(encoding="utf-8")
    return variants


def citus_bodies() -> set[str]:
    """The bodies of every Citus file: a function installed with one needs nothing more."""
    return {body(citus_file.read_text(encoding="utf-8")) for citus_file in SQL_DIRECTORY.glob(f"*{CITUS_SUFFIX}")}


def is_distributed(connection) -> bool:
    """Whether simhash.documents is a Citus distributed table (a SQLAlchemy connection).

    Asked of the catalog here rather than through ``simhash_store.distributed``, which reads
    the files through this module: this one stays below the library.
    """
    from sqlalchemy import text

    if not connection.execute(
        text("SELECT pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL")
    ).scalar():
        return False
    return bool(
        connection.execute(
            text(
                "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition "
                "WHERE logicalrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass('simhash.documents'))"
            )
        ).scalar()
    )


def create(*versions: str) -> None:
    """Run each version's file in the migration (its Citus variant on a distributed store)."""
    from alembic import op

    citus = is_distributed(op.get_bind())
    for version in versions:
        op.execute(read(version, citus=citus and has_citus_variant(version)))


def revision(number: str) -> ModuleType:
    """An earlier revision's module ("0004"), for its frozen text."""
    (found,) = VERSIONS_DIRECTORY.glob(f"{number}_*.py")
    spec = importlib.util.spec_from_file_location(f"simhash_store_revision_{number}", found)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
