"""A real Citus cluster on this machine: a coordinator and two workers from the system PostgreSQL 15.

Used by the distributed tests (as a session fixture) and by benchmarks/distributed.py.
Citus comes from ``../shared/citus`` (a build for Debian's PostgreSQL 15, installed by its
``install.sh``, which needs root). :func:`unavailable` says why a cluster cannot be started
here, or returns None when it can.

>>> with Cluster.start(Path("/tmp/c")) as cluster:  # doctest: +SKIP
...     url = cluster.create_database("news")
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[2]
CITUS_DIR = REPO.parent / "shared" / "citus"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
EXTENSION_CONTROL = Path("/usr/share/postgresql/15/extension/citus.control")
SERVER_USER = "postgres"  # initdb refuses to run as root
WORKERS = 2

# A test cluster: durability off (a crash loses the test, not data anyone needs), small memory.
SETTINGS = {
    "shared_preload_libraries": "'citus'",
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "64MB",
    "max_connections": "200",
    "max_wal_size": "2GB",
    "citus.shard_count": "8",
    "log_min_messages": "warning",
}


def unavailable() -> str | None:
    """Why no cluster can start here (None when it can), installing Citus first if needed."""
    if not (PG_BIN / "postgres").exists():
        return f"no PostgreSQL 15 server binaries at {PG_BIN}"
    if not EXTENSION_CONTROL.exists():
        installer = CITUS_DIR / "install.sh"
        if not installer.exists():
            return f"Citus is not installed and {installer} is absent"
        if os.geteuid() != 0:
            return f"Citus is not installed and {installer} needs root"
        done = subprocess.run(["sh", str(installer)], capture_output=True, text=True)
        if done.returncode != 0 or not EXTENSION_CONTROL.exists():
            return f"{installer} failed: {done.stderr.strip() or done.stdout.strip()}"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root and there is no {SERVER_USER!r} user to run the servers as"
        if _runuser() is None:
            return "running as root and there is no runuser to start the servers as another user"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _runuser() -> str | None:
    """runuser, also where root's PATH lacks the sbin directories (a minimal environment)."""
    found = shutil.which("runuser")
    return found or next((path for path in ("/usr/sbin/runuser", "/sbin/runuser") if os.access(path, os.X_OK)), None)


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return [_runuser(), "-u", SERVER_USER, "--", *command]


@dataclass
class Cluster:
    directory: Path
    ports: list[int]  # coordinator first
    user: str = SERVER_USER
    _databases: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, directory: Path | None = None, settings: dict[str, str] | None = None) -> Cluster:
        directory = Path(directory or tempfile.mkdtemp(prefix="simhash-citus-"))
        directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            account = pwd.getpwnam(SERVER_USER)
            os.chown(directory, account.pw_uid, account.pw_gid)
        os.chmod(directory, 0o755)
        cluster = cls(directory, [])
        try:
            for _ in range(1 + WORKERS):
                cluster._start_node(_free_port(), {**SETTINGS, **(settings or {})})
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _start_node(self, port: int, settings: dict[str, str]) -> None:
        data = self.directory / f"n{port}"
        subprocess.run(
            _as_server_user(
                [
                    str(PG_BIN / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    self.user,
                    "--auth=trust",
                    "-N",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            ),
            check=True,
            capture_output=True,
        )
        with open(data / "postgresql.conf", "a") as conf:
            for name, value in settings.items():
                conf.write(f"{name} = {value}\n")
        self.ports.append(port)
        subprocess.run(
            _as_server_user(
                [
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(data),
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    str(data / "server.log"),
                    "-o",
                    f"-p {port} -k {self.directory}",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
        )

    def url(self, database: str = "postgres", port: int | None = None) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{port or self.ports[0]}/{database}"

    @property
    def coordinator_port(self) -> int:
        return self.ports[0]

    def execute(self, statement: str, database: str = "postgres", port: int | None = None) -> list[tuple]:
        with psycopg.connect(self.url(database, port), autocommit=True) as connection:
            cursor = connection.execute(statement)
            return cursor.fetchall() if cursor.description else []

    def create_database(self, name: str) -> str:
        """A database of this name on every node, with Citus and the workers registered; returns its URL."""
        for port in self.ports:
            self.execute(f'CREATE DATABASE "{name}"', port=port)
            self.execute("CREATE EXTENSION citus", name, port)
        self._databases.append(name)
        statements = [f"SELECT citus_set_coordinator_host('127.0.0.1', {self.ports[0]})"]
        statements += [f"SELECT citus_add_node('127.0.0.1', {port})" for port in self.ports[1:]]
        with psycopg.connect(self.url(name), autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        for port in self.ports:
            # WITH (FORCE) ends the sessions it finds, but one can connect meanwhile (Citus's
            # maintenance daemon, a node's connection from the coordinator): "being accessed by
            # other users" once failed a teardown. A few tries, 10 s at most.
            for attempt in range(20):
                try:
                    self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', port=port)
                    break
                except psycopg.errors.ObjectInUse:
                    if attempt == 19:
                        raise
                    time.sleep(0.5)
        if name in self._databases:
            self._databases.remove(name)

    def stop(self) -> None:
        for port in self.ports:
            subprocess.run(
                _as_server_user(
                    [str(PG_BIN / "pg_ctl"), "-D", str(self.directory / f"n{port}"), "-m", "immediate", "stop"]
                ),
                capture_output=True,
            )
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()


def wait_for(condition, timeout: float = 30.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False
