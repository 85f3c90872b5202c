"""Database URLs without SQLAlchemy: taken apart as SQLAlchemy would, checked, normalised to
psycopg 3, and shown to people without their secrets.

Below both :mod:`config` (which resolves the URL a command uses) and :mod:`embedded` (which
makes the embedded server's): neither has to import the other for it.

>>> redact(normalize_url("postgresql://app:s3cr@t@db.example/news"))
'postgresql+psycopg://app:***@db.example/news?connect_timeout=10'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

# The variable naming the embedded server's data directory: config.py reads it, and the
# embedded server's errors name it.
DATA_DIR_VARIABLE = "SIMHASH_STORE_DATA_DIR"
CONNECT_TIMEOUT_SECONDS = 10
_POSTGRES_DRIVERS = {"postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2", "postgresql+psycopg3"}
# Connection options holding secrets: shown as *** like the password.
_SECRET_OPTIONS = ("password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key")
_INTEGER_OPTIONS = (
    "connect_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
)


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
    if not at and (match := _URL_PATTERN.match(raw.strip())) is not None:
        # No "@" before the first "?": the password may hold the "?" (user:pa?ss@host), as _parse reads it.
        found, query = [match["password"] or ""], match["query"] or ""
    from urllib.parse import unquote_plus

    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        # Names are decoded as the URL is parsed to connect (parse_qsl): ?pass%77ord=... is a password too.
        if unquote_plus(name) in _SECRET_OPTIONS:
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

        return URL.create(
            self.drivername, self.username, self.password, self.host, self.port, self.database, self.query
        )


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
    username, password = (
        unquote(found[name]) if found[name] is not None else None for name in ("username", "password")
    )
    return UrlParts(
        found["name"],
        username,
        password,
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
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 on the command line or in the environment
        raise ConfigError("the database URL is not valid UTF-8 (percent-encode other bytes: %FF)") from None
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
    parts = [url.username, url.password, url.host, url.database]
    parts += [
        item for name, value in url.query.items() for item in (name, *((value,) if isinstance(value, str) else value))
    ]
    if any(part is not None and "\x00" in part for part in parts):
        # libpq reads each value up to it: `db%00x` connected to the database `db`.
        raise ConfigError("the database URL holds a NUL character (%00), which libpq cannot take")
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
        if name == "port":
            for item in value if isinstance(value, tuple) else (value,):
                if not all(not part or part.isdigit() and 1 <= int(part) <= 65535 for part in item.split(",")):
                    # Not shown either: SQLAlchemy's refusal of it was a traceback.
                    raise ConfigError("bad port in the database URL: a number from 1 to 65535")
        if name in _INTEGER_OPTIONS:
            for item in value if isinstance(value, tuple) else (value,):
                if not item.strip().lstrip("-").isdigit():
                    # The value is not shown: a mistyped URL may have run a password into it.
                    raise ConfigError(
                        f"bad {name} in the database URL: a whole number (seconds, or ms for tcp_user_timeout)"
                    )
