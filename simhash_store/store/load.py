"""The bulk load's fast path: into an empty table nothing references, drop the key, id and block
indexes, COPY FREEZE every row, and build the indexes again over them (:mod:`.rebuild`). Raw psycopg.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Engine

from .. import maintenance
from .documents import NewDocument
from .rebuild import indexes_dropped
from .writes import copy_documents

DEFAULT_LOAD_BATCH_SIZE = 50_000  # a load into a store it may not rebuild: rows per transaction
DEFAULT_LOCK_TIMEOUT = 10.0  # seconds a bulk load or VACUUM waits for the table before giving up


def load_rebuilding(
    engine: Engine, documents: Iterable[NewDocument], lock_timeout: float, index_memory: str
) -> tuple[int, int] | None:
    """(rows received, repeated keys dropped); None (nothing read) if, once locked, the table no
    longer qualifies."""
    with engine.begin() as connection:
        raw = connection.connection.driver_connection
        with raw.cursor() as cursor:
            maintenance.lock_exclusively(cursor, lock_timeout, "a bulk load")
            if maintenance.rebuild_blockers(cursor):  # someone wrote or referenced it meanwhile
                return None
            with indexes_dropped(cursor, index_memory) as rebuilt:
                received = copy_documents(cursor, "simhash.documents", documents, freeze=True)
    return received, rebuilt.repeated
