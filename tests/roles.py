"""Throw-away PostgreSQL roles for tests: uniquely named, and dropped with what they own.

The server and its roles are shared (by parallel test processes, other checkouts, other users),
so a role gets a fresh name and never outlives its test. Tests take the ``make_role`` fixture
(tests/conftest.py); a helper that needs a role for part of a test uses ``temporary_role``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import sqlalchemy.exc
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Engine


@contextlib.contextmanager
def temporary_role(
    url: URL, *grants: str, prefix: str = "simhash_role", login: bool = True
) -> Iterator[tuple[str, Engine]]:
    """A new role ``<prefix>_<8 hex>``, given ``grants`` in ``url``'s database, and an admin engine on it.

    Each grant is SQL with ``{role}`` and ``{database}`` for the quoted names, e.g.
    ``"GRANT USAGE ON SCHEMA simhash TO {role}"``. On exit the role's objects and privileges in that
    database go (``DROP OWNED ... CASCADE``), then the role.
    """
    role = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE ROLE "{role}"' + (" LOGIN" if login else "")))
        try:
            with admin.connect() as connection:
                for grant in grants:
                    connection.execute(text(grant.format(role=f'"{role}"', database=f'"{url.database}"')))
            yield role, admin
        finally:
            _drop(admin, url, role)
    finally:
        admin.dispose()


def _drop(admin: Engine, url: URL, role: str) -> None:
    try:
        with admin.connect() as connection:
            connection.execute(text(f'DROP OWNED BY "{role}" CASCADE'))
            connection.execute(text(f'DROP ROLE "{role}"'))
        return
    except sqlalchemy.exc.OperationalError:
        pass  # the test's database is gone already (its fixture ended first): the role owns nothing now
    server = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with server.connect() as connection:
            connection.execute(text(f'DROP ROLE IF EXISTS "{role}"'))
    finally:
        server.dispose()


# What a role that writes documents but does not own the store is granted (docs/operations.md, on a
# shared database): never a write on the masks, the revision or the scheme, which every open refuses.
WRITER_GRANTS = (
    "GRANT USAGE ON SCHEMA simhash TO {role}",
    "GRANT SELECT ON ALL TABLES IN SCHEMA simhash TO {role}",
    "GRANT INSERT, UPDATE, DELETE ON simhash.documents, simhash.segments, simhash.cluster_heads TO {role}",
    "GRANT INSERT, UPDATE (highest_retired_id, cluster_max_distance, keep_policy) ON simhash.store_info TO {role}",
)
