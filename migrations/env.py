"""Alembic environment: the same URL resolution as the CLI and library, one schema of our own.

Run programmatically (``simhash_store.migrate``) with a connection in
``config.attributes["connection"]``, or from the command line with
``SIMHASH_STORE_URL=... alembic upgrade head``.
"""

from alembic import context
from sqlalchemy import create_engine, pool, text

from simhash_store import distributed
from simhash_store.config import redact, resolve_url, session_arguments
from simhash_store.models import SCHEMA, Base
from simhash_store.trust import check_schema

VERSION_TABLE = "alembic_version"
# Serialises concurrent upgrades (two CLI processes on a fresh database). Schema-qualified: a
# role that can create functions in a schema on the caller's search_path (public, often) must
# not get its pg_advisory_xact_lock(integer) called instead, with the migrating role's rights.
MIGRATION_LOCK = "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('simhash-store migrations'))"

config = context.config
target_metadata = Base.metadata


def include_name(name, type_, parent_names):
    # Only our schema: the store may share a database with an application.
    if type_ == "schema":
        return name == SCHEMA
    return True


def run_migrations(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        version_table=VERSION_TABLE,
        version_table_schema=SCHEMA,
        include_schemas=True,
        include_name=include_name,
        compare_type=True,
    )
    with context.begin_transaction():
        connection.execute(text(MIGRATION_LOCK))
        distributed.before_migrations(connection)
        connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
        # Before any revision runs in it: a schema another role made (or can create in) is
        # refused, whoever runs the migration (the library, or alembic by hand). Checked after
        # CREATE SCHEMA, in its transaction, so no one can slip a schema of theirs in between.
        with connection.connection.driver_connection.cursor() as cursor:
            check_schema(cursor, SCHEMA, redact(connection.engine.url))
        context.run_migrations()
        distributed.after_migrations(connection)  # a Citus store: re-adapt the functions just created


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_migrations(connection)
        return
    # `alembic upgrade head` by hand: the library's session (search_path pinned to pg_catalog,
    # lock_timeout, keepalives), as when the library migrates over its own connection.
    url = resolve_url()
    engine = create_engine(url, poolclass=pool.NullPool, connect_args=session_arguments(url))
    with engine.connect() as connection:
        run_migrations(connection)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("simhash-store migrations run online only: they take a lock and create a schema")
run_migrations_online()
