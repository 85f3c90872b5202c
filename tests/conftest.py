"""Real PostgreSQL for the tests: never a mock.

Backends: the server at ``SIMHASH_STORE_TEST_URL`` when it is set (CI: the machine's
PostgreSQL 15), and always a private embedded server (PostgreSQL 18) in a temporary
directory. Tests that take the ``database_url`` or ``store`` fixture run once per
backend, each in a fresh database of its own that is dropped afterwards, so runs
never collide. The quick lane (``-m 'not slow'``) runs them on the embedded server only,
except those marked ``every_backend`` or migrating an empty database; the slow lane runs
the rest on the external server (see ``_second_backend_only``).

Real Chinese text: a small sample ships in ``tests/data/`` (see its README for sources and
licences) and every test that needs real text reads it through the ``sample_*`` fixtures.
Only tests that need the whole benchmark corpus (``../shared/corpus``) take the ``corpus``
fixture: they are marked ``corpus`` and skip with a reason when it is absent.

Skips. With ``SIMHASH_STORE_STRICT_SKIPS=1`` (``.ci/run`` sets it) the run fails when any
test is skipped for a reason not in ``ALLOWED_SKIP_REASONS`` below, so that a test cannot
quietly stop running in CI.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import settings
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL

from simhash_store import migrate
from simhash_store.config import normalize_url
from simhash_store.store import Store

import sample_text  # tests/sample_text.py: the text shipped in tests/data
from roles import temporary_role

# No timed assertions in the tests (speed is for benchmarks/): Hypothesis's default deadline of
# 200 ms an example fails a test whose first example waited on a loaded machine ("Unreliable test
# timings"), whatever the code does. Tests that set their own settings keep them otherwise.
settings.register_profile("simhash-store", deadline=None)
settings.load_profile("simhash-store")

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
TEST_URL_VARIABLE = "SIMHASH_STORE_TEST_URL"
STRICT_SKIPS_VARIABLE = "SIMHASH_STORE_STRICT_SKIPS"
# SIMHASH_STORE_TEST_LAYOUT=lean (or wide3): the migrated databases tests start from get that
# block layout's search indexes and functions, so the search tests run against it. Tests that
# name four16's indexes or plans fail there by design.
LAYOUT_VARIABLE = "SIMHASH_STORE_TEST_LAYOUT"

# The only reasons a test may be skipped in CI (prefixes of the skip message), and why each
# is acceptable. Anything else (a missing file, a missing corpus, a missing library) means a
# test silently stopped testing, and fails the run under SIMHASH_STORE_STRICT_SKIPS=1.
ROOT_READS_EVERYTHING = "root reads files whatever their mode"
NO_SYSTEM_POSTGRESQL = "no system PostgreSQL"
EXTERNAL_BACKEND = "this backend is the external server"
RAY_NOT_INSTALLED = "Ray is not installed"  # tests/test_ray.py where the ray extra is not installed
DOCTEST_NEEDS_A_SERVER = "all tests skipped by +SKIP option"  # pytest's words for a docstring of +SKIP examples only
NO_ICU = "this server is built without ICU"  # a database collation other than C: the embedded server's build
ALLOWED_SKIP_REASONS = {
    ROOT_READS_EVERYTHING: "permission tests cannot fail for root, which CI containers often are",
    NO_SYSTEM_POSTGRESQL: "psql or a server at SIMHASH_STORE_TEST_URL is needed and the machine has none",
    EXTERNAL_BACKEND: "a test of the embedded server itself, parametrised over both backends",
    RAY_NOT_INSTALLED: "the Ray tests run in a lane of their own with the ray extra (.ci/run); the README's test "
    "command installs the test extra only",
    DOCTEST_NEEDS_A_SERVER: "a docstring example that connects to the reader's own server (its URL is made up); "
    "the store's behaviour it shows is tested in tests/",
    NO_ICU: "the machine's only libc locales are C and POSIX, so a database that sorts text otherwise needs ICU, "
    "which the embedded server's build lacks; the external server (PostgreSQL 15) has it, and the test runs there",
}


# Modules whose tests start servers and processes (minutes in all): run first, see below.
LONG_MODULES = {
    "test_serve.py",
    "test_security.py",
    "test_dictionary_cache.py",
    "test_citus_store.py",
    "test_overlap.py",
}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "corpus: needs the whole benchmark corpus at ../shared/corpus (skips without it)"
    )
    config.addinivalue_line(
        "markers",
        "every_backend: runs on both backends in the quick lane too (tests whose result may depend on the "
        "server's version: migrations, SQL functions); other database tests run on the external backend "
        "in the slow lane only",
    )
    config.pluginmanager.register(_LongModulesFirst(), "simhash-store-long-modules-first")


class _LongModulesFirst:
    """Start the longest modules first, so that pytest-xdist's processes do not end the run waiting on
    one of them started last. After pytest has grouped the tests by backend (its reorder_items), and
    the external backend's stay first: a process that went back to it would stop its embedded server."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        def key(item) -> tuple[bool, bool]:
            callspec = getattr(item, "callspec", None)
            external = callspec is not None and callspec.params.get("pg_server") == "external"
            return not external, Path(str(item.fspath)).name not in LONG_MODULES

        items.sort(key=key)  # stable: each module keeps its order


@pytest.hookimpl(tryfirst=True)  # before -m selects: the marks added here count
def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        # Anything that reaches a server is a database test, whatever its file says.
        if "pg_server" in fixtures:
            item.add_marker(pytest.mark.db)
        if "corpus" in fixtures:
            item.add_marker(pytest.mark.corpus)
        if _second_backend_only(item):
            item.add_marker(pytest.mark.slow)


def _second_backend_only(item) -> bool:
    """A database test on the external backend that the quick lane already runs on the embedded one.

    Marked ``slow``: the slow lane (``pytest -m slow``) runs it, so that the two lanes together still
    run every database test on both backends. Tests whose result may differ by server version run on
    both in the quick lane: those marked ``every_backend`` and those that migrate an empty database
    (``empty_database_url``), which is the DDL of every revision.
    """
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("pg_server") != "external":
        return False
    return item.get_closest_marker("every_backend") is None and "empty_database_url" not in item.fixturenames


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    message = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return message.removeprefix("Skipped: ")


def disallowed_skips(reports) -> list[str]:
    """The skipped tests (``nodeid: reason``) whose reason is not an allowed one."""
    return [
        f"{report.nodeid}: {_skip_reason(report)}"
        for report in reports
        if report.skipped
        and not hasattr(report, "wasxfail")
        and not _skip_reason(report).startswith(tuple(ALLOWED_SKIP_REASONS))
    ]


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get(STRICT_SKIPS_VARIABLE) != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    bad = disallowed_skips(reporter.stats.get("skipped", []))
    if bad:
        reporter.ensure_newline()
        reporter.write_line(
            f"{len(bad)} tests skipped for a reason CI does not allow ({STRICT_SKIPS_VARIABLE}=1):", red=True
        )
        for line in bad:
            reporter.write_line(f"  {line}", red=True)
        reporter.write_line("allowed reasons: " + "; ".join(ALLOWED_SKIP_REASONS), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
            if os.environ.get(LAYOUT_VARIABLE):  # every test's store with that layout's indexes and functions
                _give_layout(self.url(name), os.environ[LAYOUT_VARIABLE])
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


def _give_layout(url: URL, layout: str) -> None:
    """Give the migrated (still empty, unrecorded) store at ``url`` the search indexes and functions of ``layout``."""
    import psycopg

    from simhash_store.store import layout as store_layout

    with psycopg.connect(url.set(drivername="postgresql").render_as_string(hide_password=False)) as connection:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO simhash.store_info (singleton, scheme_name, scheme) VALUES (true, 'pending', '{}'::jsonb)"
            )
            store_layout.switch(cursor, store_layout.validate_layout(layout), 10.0)
            cursor.execute("DELETE FROM simhash.store_info")


def _embedded_server(directory: Path):
    from simhash_store.embedded import server_for

    return server_for(directory / "pgdata", cleanup_mode="delete")


def _durability_off(admin_url: URL) -> None:
    """No fsync on the tests' own server, as on the Citus test cluster: what it saves is each database's
    files at CREATE DATABASE and every commit. Only a crash of the machine could lose data (the test run's);
    a server stopped with ``-m immediate`` still finds its WAL."""
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_size=1)
    with engine.connect() as connection:
        for name in ("fsync", "full_page_writes"):
            connection.execute(text(f"ALTER SYSTEM SET {name} = off"))
        connection.execute(text("SELECT pg_reload_conf()"))
    engine.dispose()


@pytest.fixture(scope="session", params=_backends())
def pg_server(request, tmp_path_factory):
    """A server to create databases on: external (when configured) or embedded."""
    if request.param == "external":
        admin = normalize_url(os.environ[TEST_URL_VARIABLE])
    else:
        # A directory the embedded server's own system user can reach when tests run as root.
        directory = Path(tempfile.mkdtemp(prefix="simhash-store-test-"))
        server = _embedded_server(directory)
        from simhash_store.embedded import socket_address

        admin = socket_address(server, "postgres").sqlalchemy()
        _durability_off(admin)
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
def make_role():
    """Factory of throw-away roles: ``make_role(url, *grants, prefix=..., login=True)`` returns a new role's name.

    The role is uniquely named, gets ``grants`` (SQL with ``{role}`` and ``{database}``) in ``url``'s
    database, and is dropped with everything it owns there when the test ends (see tests/roles.py).
    """
    with contextlib.ExitStack() as roles:

        def make(url: URL, *grants: str, prefix: str = "simhash_role", login: bool = True) -> str:
            role, _ = roles.enter_context(temporary_role(url, *grants, prefix=prefix, login=login))
            return role

        yield make


@pytest.fixture
def store(database_url):
    with Store(database_url) as opened:
        yield opened


@pytest.fixture
def corpus() -> Path:
    """The whole benchmark corpus (``../shared/corpus``); the test skips when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"needs the whole benchmark corpus, which is not at {CORPUS} (tests/data holds the shipped sample)")
    return CORPUS


@pytest.fixture(scope="session")
def sample_laws() -> list[str]:
    """The texts of the 20 shipped laws (4 to 9 KB each), sorted by file name."""
    return list(sample_text.laws())


@pytest.fixture(scope="session")
def sample_paragraphs() -> list[str]:
    """40 shipped Chinese Wikipedia paragraphs (266 to 980 characters)."""
    return sample_text.paragraphs()


@pytest.fixture(scope="session")
def revision_pairs() -> list[tuple[str, str, float]]:
    """Successive versions of the same law: (older, newer, 5-character-shingle Jaccard), most similar first."""
    return list(sample_text.revision_pairs())
