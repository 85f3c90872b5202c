"""Schema upgrades through Alembic, from inside the library (the CLI's ``init`` and first use).

Alembic is imported only when the schema has to change: every command checks the
revision, and that check is one plain query against the version table.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import as_file, files
from typing import TYPE_CHECKING

from sqlalchemy import Engine, text

if TYPE_CHECKING:
    from alembic.config import Config

# The store's PostgreSQL schema. models.py takes it from here: every command checks the
# revision, and importing the models for it would load the SQLAlchemy ORM (60 ms) each time.
SCHEMA = "simhash"

# The newest revision in migrations/versions; a test checks it against Alembic's view.
HEAD_REVISION = "0005"


@lru_cache(maxsize=1)
def alembic_config() -> "Config":
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


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for a database without the store's schema)."""
    with engine.connect() as connection:
        exists = connection.execute(
            text("SELECT to_regclass(:table) IS NOT NULL"), {"table": f"{SCHEMA}.alembic_version"}
        ).scalar()
        if not exists:
            return None
        return connection.execute(text(f"SELECT version_num FROM {SCHEMA}.alembic_version")).scalar()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (a no-op when it is there already)."""
    from alembic import command

    _run(engine, command.upgrade, revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    from alembic import command

    _run(engine, command.downgrade, revision)


def _run(engine: Engine, action, revision: str) -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        try:
            action(config, revision)
        finally:
            config.attributes.pop("connection", None)
