"""A real Citus cluster (coordinator + two workers) for the whole session, and databases on it.

Skipped, with the reason, where the cluster cannot start: no PostgreSQL 15 binaries, or no
Citus build in ../shared/citus (a fresh clone). Where the build is there and the tests run as
root (CI), Citus is installed by its own install.sh and the tests run.
"""

from __future__ import annotations

import uuid

import pytest

from .cluster import Cluster, unavailable


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "citus" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.db)
            # One cluster per test process: under pytest-xdist, every Citus test runs on the same one.
            item.add_marker(pytest.mark.xdist_group("citus"))


@pytest.fixture(scope="session")
def citus():
    """The running cluster (started once per session, stopped at the end)."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    cluster = Cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def citus_url(citus):
    """URL (on the coordinator) of a fresh database with Citus and both workers, dropped afterwards."""
    name = f"simhash_citus_{uuid.uuid4().hex[:10]}"
    url = citus.create_database(name)
    yield url
    citus.drop_database(name)


@pytest.fixture
def single_node_url(citus):
    """URL of a plain database (no Citus extension) on the coordinator's server: one node, same PostgreSQL."""
    name = f"simhash_single_{uuid.uuid4().hex[:10]}"
    citus.execute(f'CREATE DATABASE "{name}"')
    yield citus.url(name)
    citus.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
