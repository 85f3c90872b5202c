"""Schema upgrades through Alembic, from inside the library (the CLI's ``init`` and first use)."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import as_file, files

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from .models import SCHEMA


@lru_cache(maxsize=1)
def alembic_config() -> Config:
    """Alembic settings pointing at the packaged migrations (no URL: env.py resolves it)."""
    config = Config()
    with as_file(files("simhash_store.migrations")) as location:
        config.set_main_option("script_location", str(location))
    return config


@lru_cache(maxsize=1)
def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        exists = connection.execute(
            text("SELECT to_regclass(:table) IS NOT NULL"), {"table": f"{SCHEMA}.alembic_version"}
        ).scalar()
        if not exists:
            return None
        context = MigrationContext.configure(
            connection, opts={"version_table": "alembic_version", "version_table_schema": SCHEMA}
        )
        return context.get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (a no-op when it is there already)."""
    _run(engine, command.upgrade, revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    _run(engine, command.downgrade, revision)


def _run(engine: Engine, action, revision: str) -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        try:
            action(config, revision)
        finally:
            config.attributes.pop("connection", None)
