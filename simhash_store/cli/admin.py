"""Commands that look after the store and its server: init, remove, stats, optimize, grant-read,
schemes, serve, url."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..config import URL_VARIABLE
from ..errors import SimhashStoreError
from ..plural import counted
from ..scheme import DEFAULT, SCHEMES
from ..terminal import json_line, visible
from .common import (
    JsonFlag,
    SchemeOption,
    fail,
    opened_store,
    out,
    parse_size,
    state,
    warn,
)
from .render import megabytes


def init(
    scheme: SchemeOption = None,
    distributed: Annotated[
        bool, typer.Option("--distributed", help="On a Citus coordinator: spread the store over the worker nodes.")
    ] = False,
    segments: Annotated[
        bool,
        typer.Option(
            "--segments",
            help="Keep the fingerprints of each document's segments from now on, for query --containment and "
            "dups --containment (about 3x the space and 1.5x to 2x the add time; not on a distributed store).",
        ),
    ] = False,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            metavar="four16|wide3|lean",
            help="Block layout of the search indexes: four16 (a new store's: four 16-bit blocks, best up to "
            "about 10-20M documents), wide3 (three blocks of 21-22 bits, faster from about 30M; one server "
            "only) or lean (four16's blocks in about 60% of the bytes, searches 2-9x slower; one "
            "server only). Changing it rebuilds the search indexes, locking the table meanwhile. Default: keep the store's.",
        ),
    ] = None,
) -> None:
    """Create or upgrade the schema and record the fingerprint scheme.

    Example: simhash-store --db postgresql://localhost/news init --scheme zh-jieba-v1
    """
    with opened_store(scheme) as store:
        recorded = store.init(distributed=distributed, segments=segments, layout=layout)
        shape = (", distributed" if distributed else "") + (", keeping segments" if store.keeps_segments else "")
        shape += f", layout {store.layout}"
        out.print(
            visible(
                f"store ready at {store.display_url}{shape}: scheme {recorded.label}, {counted(store.count(), 'document')}"
            )
        )


def remove(keys: Annotated[list[str], typer.Argument(help="Keys of documents to delete.")]) -> None:
    """Delete documents by key; keys that were not stored are named on stderr.

    Example: simhash-store remove news/2024/0001.txt
    """
    with opened_store() as store:
        result = store.remove(keys)
    out.print(f"removed {len(result.removed)} of {len(result.removed) + len(result.missing)}", markup=False)
    if result.missing:  # named, but not an error: what should be gone is gone
        warn("not stored, so not removed: " + ", ".join(result.missing))


def stats(as_json: JsonFlag = False) -> None:
    """Documents, scheme, the distances in use, database size and the largest block buckets.

    Example: simhash-store stats --json
    """
    with opened_store() as store:
        info = store.stats()
    if as_json:
        out.print(json_line(info))
        return
    table = Table(show_header=False, box=None)
    table.add_column()
    table.add_column(overflow="fold")  # the whole URL, over several lines if need be, never cut
    for name in ("database", "server_version", "documents", "scheme", "default_max_distance"):
        table.add_row(name.replace("_", " "), visible(str(info[name])))
    recommended, clustered = info["recommended_max_distance"], info["cluster_max_distance"]
    table.add_row("recommended max distance", "-" if recommended is None else f"{recommended} (calibrate --apply)")
    table.add_row("cluster max distance", "- (no clusters kept)" if clustered is None else str(clustered))
    table.add_row("layout", info["layout"])
    table.add_row("table + indexes", megabytes(info["table_bytes"]))
    table.add_row("database size", megabytes(info["database_bytes"]))
    for block, buckets in info["largest_block_buckets"].items():
        table.add_row(f"largest {block} buckets", ", ".join(f"{b['value']}: {b['documents']}" for b in buckets) or "-")
    out.print(table)


def optimize(
    lock_timeout: Annotated[
        float,
        typer.Option(
            "--lock-timeout", min=0.001, max=86_400, metavar="SECONDS", help="How long to wait for the table."
        ),
    ] = 10.0,
) -> None:
    """VACUUM (ANALYZE) the store: run it after restoring a dump, or after other applications bulk-insert.

    Loads and large adds do this themselves. Example: simhash-store optimize
    """
    with opened_store() as store:
        done = store.optimize(lock_timeout=lock_timeout)
    if done.vacuumed:
        out.print("optimized: vacuumed and analyzed simhash.documents")
    elif done.analyzed:
        warn(f"Warning: could not vacuum ({done.reason}); analyzed only")
    else:
        fail(f"could not vacuum or analyze simhash.documents: {done.reason}")


def grant_read(
    role: Annotated[
        str, typer.Argument(help="A PostgreSQL role (with --password, created on the embedded server if missing).")
    ],
    password: Annotated[
        bool,
        typer.Option(
            "--password",
            help="Also give ROLE a new generated password, printed once and kept nowhere, for TCP "
            "(serve --listen). Generated, not typed: a value on the command line shows in process lists.",
        ),
    ] = False,
) -> None:
    """Let another application's role search and read the store in SQL, but not write.

    With --password on the embedded server, ROLE is created if missing.

    Example: simhash-store grant-read news_reader --password
    """
    from .. import embedded
    from ..config import EMBEDDED_DATABASE, data_dir, uses_embedded

    if not role.strip() or "\x00" in role:
        raise typer.BadParameter("a role name: not empty, no NUL character", param_hint="ROLE")
    secret = embedded.new_password() if password else None
    local = uses_embedded(state.db)
    if secret is not None and local:
        # The embedded server's superuser creates it if missing (no password yet); the grants are
        # the owner's, checked to leave it unable to write; only then is its password set.
        try:
            embedded.set_login_password(data_dir(), role, None)
        except SimhashStoreError as exc:
            fail(str(exc))
    with opened_store() as store:
        store.grant_read_only(role, password=None if local else secret)
    if secret is not None and local:
        try:
            embedded.set_login_password(data_dir(), role, secret)
        except SimhashStoreError as exc:
            fail(str(exc))
    out.print(f"{visible(role)} may now read simhash.documents and call simhash.near(); it cannot write", markup=False)
    if secret is not None:
        out.print(f"password of {visible(role)} (shown once, kept nowhere): {secret}", markup=False)
        if local:
            tcp = embedded.tcp_address(data_dir(), EMBEDDED_DATABASE, role, secret)
            if tcp is None:
                out.print("read-only over TCP once `simhash-store serve --listen HOST:PORT` runs", markup=False)
            else:
                out.print(f"read-only URL: {tcp.libpq()}", markup=False)


def schemes() -> None:
    """List the named fingerprint schemes: the default, and which ones the PostgreSQL store can hold.

    Example: simhash-store schemes
    """
    for name in sorted(SCHEMES):
        s = SCHEMES[name]
        top = f", top {s.top_k}" if s.top_k else ""
        mark = "*" if name == DEFAULT.name else " "
        # The store keeps fingerprints in a bigint column (and 16-bit blocks of it).
        where = "store and fingerprint" if s.bits == 64 else "fingerprint only (the store holds 64-bit fingerprints)"
        description = f"{s.bits}-bit {s.tokenizer}, {s.weighting}{top}, {s.hash}"
        out.print(f"{mark} {name:<20} {description:<56} {where}", markup=False)
    out.print("(* the default, for a new store and for fingerprint; --scheme NAME chooses another)", markup=False)


def serve(
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen",
            metavar="HOST:PORT",
            help="Also accept TCP connections here: as the store's owner role, with a password; never as the superuser.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON object (url, host, port, user, database, superuser).")
    ] = False,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve the fingerprint service (HTTP, JSON, bearer tokens) here; a PORT alone listens on 127.0.0.1; "
            "unix:PATH on a Unix socket only you can reach (unix: alone: http.sock in the data directory). "
            "Prints a JSON object (url, token files). Works with --db too; never as a superuser.",
        ),
    ] = None,
    print_tokens: Annotated[
        bool, typer.Option("--print-tokens", help="With --http: the tokens too, in the JSON object.")
    ] = False,
    tls_cert: Annotated[
        Path | None,
        typer.Option(
            "--tls-cert",
            metavar="FILE",
            help="With --http HOST:PORT: answer HTTPS with this certificate (PEM, the chain); needs --tls-key.",
        ),
    ] = None,
    tls_key: Annotated[
        Path | None,
        typer.Option("--tls-key", metavar="FILE", help="With --tls-cert: its private key (PEM, mode 0600)."),
    ] = None,
    max_body: Annotated[str, typer.Option(help="With --http: the largest request body, e.g. 16M.")] = "16M",
    max_texts: Annotated[
        int, typer.Option(min=1, max=1_000_000, help="With --http: texts or documents per request.")
    ] = 1000,
) -> None:
    """Run the embedded server in the foreground for other applications, until Ctrl-C or SIGTERM.

    Prints one line: a postgresql:// URL that psql, psycopg and SQLAlchemy take as it is
    (JDBC after a jdbc: prefix, over --listen). Meanwhile other simhash-store commands
    use this server. Without --listen: the Unix socket only you can reach, as the
    server's superuser until a serve --listen hands the store to simhash_owner. With
    --listen: TCP, as simhash_owner, which owns the store and is not a superuser; its
    password is generated once and kept, readable by you only, in the data directory.
    Read-only roles: grant-read ROLE --password.

    With --http: the fingerprint service for other languages (docs/http.md), with a
    read-write and a read-only token kept in the data directory (mode 0600).

    Example: simhash-store serve --listen 127.0.0.1:5433
    """
    address = _listen_address(listen)
    from .. import embedded
    from ..config import EMBEDDED_DATABASE, data_dir, uses_embedded
    from ..ownership import make_directories

    if http is not None:
        unix_socket = None
        if http.startswith("unix:"):
            unix_socket = str(Path(http[len("unix:") :] or data_dir() / "http.sock").absolute())
            host, port = "localhost", 0
        else:
            host, port = _host_and_port(http if ":" in http else f"127.0.0.1:{http}", "--http")
        if address is not None:
            fail("--http and --listen: run them as two serve commands (the second joins the first's server)")
        if (tls_cert is None) != (tls_key is None):
            fail("--tls-cert and --tls-key go together")
        if tls_cert is not None and unix_socket is not None:
            fail("--tls-cert is for --http HOST:PORT: a unix: socket only you can reach needs no TLS")
        try:
            from .. import http_service
        except ImportError as exc:
            fail(f"serve --http needs the http extra (pip install 'simhash-store[http]'): {exc}")
        try:
            tls = http_service.tls(tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None
            if unix_socket is not None:
                make_directories(Path(unix_socket).parent)
                listening = [http_service.listen_unix(Path(unix_socket))]
            else:
                listening = http_service.listen_on_every_address(host, port)
            service = http_service.open_service(
                state.db, limits=http_service.Limits(parse_size(max_body, "--max-body"), max_texts)
            )
            announced = service.announcement(
                host, port, with_tokens=print_tokens, unix_socket=unix_socket, tls=tls is not None
            )
            print(json.dumps(announced), flush=True)
            where = f"the Unix socket {unix_socket}" if unix_socket else service.url(host, port, tls=tls is not None)
            warn(
                f"serving the fingerprint service on {where} for {service.store.display_url}, "
                "not as a superuser; every request needs a token; Ctrl-C stops it"
            )
            http_service.run(service, listening, tls=tls)
        except SimhashStoreError as exc:
            fail(str(exc))
        return
    if not uses_embedded(state.db or ""):  # --db, or SIMHASH_STORE_URL through it
        fail(f"serve runs the embedded server; --db and {URL_VARIABLE} name another one")

    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    try:
        shown, server = embedded.serve(data_dir(), EMBEDDED_DATABASE, address)
    except SimhashStoreError as exc:
        fail(str(exc))
    url = shown.libpq()
    superuser = shown.user != embedded.STORE_OWNER  # TCP never is; the socket until serve --listen hands the store over
    if as_json:
        fields = {"url": url, "host": shown.host, "port": shown.port, "user": shown.user, "database": shown.database}
        print(json.dumps({**fields, "superuser": superuser}), flush=True)
    else:
        print(url, flush=True)
    if superuser:
        rights = f"as the server's superuser {shown.user}, over its Unix socket only you can reach"
    elif address is None:
        rights = f"over its Unix socket only you can reach, as {shown.user}, the store's owner (not a superuser)"
    else:
        rights = f"over TCP as {shown.user}, the store's owner, not a superuser (the superuser: Unix socket only)"
    warn(f"serving the embedded simhash store {rights}; Ctrl-C stops it (other commands now use this server)")
    while not stop.wait(1.0):
        if not embedded.server_is_running(server):
            fail("the embedded server stopped (was it killed?)")
        embedded.bound_server_log(server)  # refused TCP connections add to it (--listen)


def url(
    show_password: Annotated[
        bool,
        typer.Option(
            "--show-password",
            help="Print the password of a URL given in SIMHASH_STORE_URL or --db too (left out by default: "
            "psql reads it from ~/.pgpass or PGPASSWORD).",
        ),
    ] = False,
) -> None:
    """Print the URL of the store in use (the embedded server's too), in libpq form, for psql and other programs.

    While serve runs (else the embedded server stops when this command exits). The embedded
    server's URL is over the Unix socket only you can reach: as its superuser, or, once
    serve --listen has handed the store over, as the store's owner simhash_owner. Other
    applications get the owner from serve --listen, or a role of their own from
    grant-read ROLE --password. A password in a URL you gave is left out, so that
    psql "$(simhash-store url)" does not put it in a command line every local user can read.

    Example: simhash-store url   # then: psql "$(simhash-store url)"
    """
    from sqlalchemy.engine import URL

    from ..config import EMBEDDED_DATABASE, data_dir, resolve_url, uses_embedded

    try:
        if uses_embedded(state.db):
            from .. import embedded

            # Spelled as serve prints it: one store, one URL.
            shown = embedded.address(data_dir(), EMBEDDED_DATABASE).libpq()
        else:
            given = resolve_url(state.db).set(drivername="postgresql")
            # libpq also takes a password (and a client key's passphrase) as a parameter of the query.
            kept = {name: value for name, value in given.query.items() if name not in ("password", "sslpassword")}
            if (given.password is not None or len(kept) < len(given.query)) and not show_password:
                warn(
                    "the URL's password is left out: psql reads it from ~/.pgpass or PGPASSWORD (--show-password prints it)"
                )
                given = URL.create(given.drivername, given.username, None, given.host, given.port, given.database, kept)
            shown = given.render_as_string(hide_password=False)
    except SimhashStoreError as exc:
        fail(str(exc))
    out.print(shown, markup=False)


def _listen_address(listen: str | None) -> tuple[str, int] | None:
    """HOST:PORT (or [IPv6]:PORT) checked before anything starts."""
    return None if listen is None else _host_and_port(listen, "--listen")


def _host_and_port(listen: str, option: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    valid_host = bool(host) and all(c.isalnum() or c in ".-:*" for c in host)
    if not valid_host or not port.isdigit() or not 0 < int(port) < 65536:
        raise typer.BadParameter(
            f"{listen!r} is not HOST:PORT (for example 127.0.0.1:5433, or 0.0.0.0:5433 for every address)",
            param_hint=option,
        )
    return host, int(port)
