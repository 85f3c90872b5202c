"""Real PostgreSQL for the tests: never a mock.

Backends: the server at ``SIMHASH_STORE_TEST_URL`` when it is set (CI: the machine's
PostgreSQL 15), and always a private embedded server (PostgreSQL 18) in a temporary
directory. Tests that take the ``database_url`` or ``store`` fixture run once per
backend, each in a fresh database of its own that is dropped afterwards, so runs
never collide.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url

from simhash_store import migrate
from simhash_store.config import normalize_url
from simhash_store.store import Store

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
TEST_URL_VARIABLE = "SIMHASH_STORE_TEST_URL"


def pytest_collection_modifyitems(config, items):
    # Anything that reaches a server is a database test, whatever its file says.
    for item in items:
        if "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.db)


def _backends() -> list[str]:
    backends = ["embedded"]
    if os.environ.get(TEST_URL_VARIABLE):
        backends.insert(0, "external")
    return backends


class Server:
    """One PostgreSQL server on which tests create and drop databases of their own."""

    def __init__(self, admin_url: URL) -> None:
        self.admin_url = admin_url
        self._admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_size=1)
        self._template: str | None = None

    def _execute(self, statement: str) -> None:
        with self._admin.connect() as connection:
            connection.execute(text(statement))

    def url(self, database: str) -> URL:
        return self.admin_url.set(database=database)

    def template(self) -> str:
        """A database migrated to head once, copied for each test (much faster than migrating)."""
        if self._template is None:
            name = f"simhash_test_template_{uuid.uuid4().hex[:8]}"
            self._execute(f'CREATE DATABASE "{name}"')
            engine = create_engine(self.url(name))
            migrate.upgrade(engine)
            engine.dispose()
            self._template = name
        return self._template

    def create_database(self, migrated: bool = True) -> str:
        name = f"simhash_test_{uuid.uuid4().hex[:12]}"
        if migrated:
            self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template()}"')
        else:
            self._execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        if self._template:
            self.drop_database(self._template)
        self._admin.dispose()


def _embedded_server(directory: Path):
    from simhash_store.embedded import server_for

    return server_for(directory / "pgdata", cleanup_mode="delete")


@pytest.fixture(scope="session", params=_backends())
def pg_server(request, tmp_path_factory):
    """A server to create databases on: external (when configured) or embedded."""
    if request.param == "external":
        admin = normalize_url(os.environ[TEST_URL_VARIABLE])
    else:
        # A directory the embedded server's own system user can reach when tests run as root.
        directory = Path(tempfile.mkdtemp(prefix="simhash-store-test-"))
        server = _embedded_server(directory)
        admin = make_url(server.get_uri()).set(drivername="postgresql+psycopg")
    server = Server(admin)
    yield server
    server.close()


@pytest.fixture
def database_url(pg_server):
    """URL of a fresh, migrated database, dropped after the test."""
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)


@pytest.fixture
def empty_database_url(pg_server):
    """URL of a fresh database with no schema at all (for migration tests)."""
    name = pg_server.create_database(migrated=False)
    yield pg_server.url(name)
    pg_server.drop_database(name)


@pytest.fixture
def store(database_url):
    with Store(database_url) as opened:
        yield opened


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    return CORPUS
