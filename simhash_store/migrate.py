"""Schema upgrades through Alembic, from inside the library (``init`` and writes), and the
check a read makes instead: reads never create or upgrade the schema.

Alembic is imported only when the schema has to change or the revision is not the newest:
every command checks the revision, and that check is one plain query against the version table.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from importlib.resources import as_file, files
from typing import TYPE_CHECKING, Any

from .errors import DatabaseError, StoreNotFoundError, StoreOutdatedError, StoreTooNewError
from .trust import check_default_privileges, check_records, check_schema

if TYPE_CHECKING:
    from alembic.config import Config
    from psycopg import Cursor
    from sqlalchemy import Engine

# The store's PostgreSQL schema. models.py takes it from here: every command checks the
# revision, and importing the models for it would load the SQLAlchemy ORM (60 ms) each time.
SCHEMA = "simhash"

# The newest revision in migrations/versions; a test checks it against Alembic's view.
HEAD_REVISION = "0015"
# How long a store or lookup that stays open trusts the checks it made (the schema, its grants,
# the masks tables, the scheme record) before it makes them again, on its next call: a role that
# may write the store's tables without a grant the checks see (pg_write_all_data) could change
# them while it is open.
RECHECK_SECONDS = 10.0


@lru_cache(maxsize=1)
def alembic_config() -> Config:
    """Alembic settings pointing at the packaged migrations (no URL: env.py resolves it)."""
    from alembic.config import Config

    config = Config()
    with as_file(files("simhash_store.migrations")) as location:
        config.set_main_option("script_location", str(location))
    return config


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest revision as Alembic sees the migration scripts."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine, where: str | None = None) -> str | None:
    """The revision the database is at (None for a database without the store's schema); raises
    :class:`UntrustedSchemaError` for a schema another role can change (``where``: the database, for it)."""
    from .config import redact

    with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
        return revision_of(cursor, where or (lambda: redact(engine.url)))


def revision_of(cursor: Cursor, where: str | Callable[[], str]) -> str | None:
    """:func:`current_revision` on a psycopg cursor (what ``query`` reads through, without SQLAlchemy)."""
    if not check_schema(cursor, SCHEMA, where):
        return None
    # At most a few rows, whatever is there (a role that may write the table could add them): all of them,
    # and whether the store's tables are there too, in one round trip.
    rows = cursor.execute(
        f"SELECT version_num, pg_catalog.to_regclass('{SCHEMA}.documents') IS NOT NULL FROM {SCHEMA}.alembic_version "
        f"UNION ALL SELECT NULL, pg_catalog.to_regclass('{SCHEMA}.documents') IS NOT NULL LIMIT 3"
    ).fetchall()
    revisions = [row[0] for row in rows if row[0] is not None]
    if len(revisions) > 1 or (not revisions and rows[-1][1]):
        where = where() if callable(where) else where
        said = f"holds {len(revisions)} revisions ({', '.join(revisions)})" if revisions else "is empty"
        raise DatabaseError(
            f"the store in database {where} has its tables, but its revision record simhash.alembic_version {said}, "
            "where every migration leaves exactly one: a role that may write the store's tables (a member of "
            "pg_write_all_data, or one granted writes on it) changed it, and no upgrade can tell what to run: have "
            f"the store's owner put back the one row of the revision its tables are at (this version writes "
            f"{HEAD_REVISION}) and take that right away"
        )
    revision = revisions[0] if revisions else None
    if revision == HEAD_REVISION:
        check_records(cursor, SCHEMA, where)
    return revision


def is_known_revision(revision: str) -> bool:
    """Whether ``revision`` is one of this version's migrations (not one made by a newer version).

    Compared with their names, not resolved by Alembic: the record is text any role that may write the
    table can set, and Alembic reads prefixes, ``head``, ``base`` and ``x@y`` in it (``''``, ``'@'`` and
    ``'0013@'`` ended every command in an AssertionError traceback)."""
    from alembic.script import ScriptDirectory

    return revision in {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


def check_upgradable(revision: str | None, where: str) -> None:
    """Refuse a store this version cannot upgrade: one made by a newer version of simhash-store."""
    if revision is not None and revision != HEAD_REVISION and not is_known_revision(revision):
        raise StoreTooNewError(
            f"the store in database {where} is at revision {revision}, which this version of simhash-store "
            f"(newest revision {HEAD_REVISION}) does not know: it was written by a newer version; "
            "upgrade simhash-store to use it"
        )


def check_readable(revision: str | None, where: str) -> None:
    """What a read says instead of changing the schema: no store, an older one, or a newer one."""
    if revision == HEAD_REVISION:
        return
    if revision is None:
        raise StoreNotFoundError(f"no simhash store in database {where}: run `simhash-store add` or `init` first")
    check_upgradable(revision, where)
    raise StoreOutdatedError(
        f"this store is at revision {revision} (this version writes {HEAD_REVISION}); "
        "run `simhash-store init` to upgrade"
    )


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (a no-op when it is there already)."""
    from alembic import command

    from .config import redact

    with engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
        check_default_privileges(cursor, SCHEMA, lambda: redact(engine.url))
    _run(engine, command.upgrade, revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    from alembic import command

    _run(engine, command.downgrade, revision)


def _run(engine: Engine, action: Callable[[Any, str], object], revision: str) -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        try:
            action(config, revision)
        finally:
            config.attributes.pop("connection", None)
