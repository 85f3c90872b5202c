"""A member of pg_read_all_data (it may read, so lock in ACCESS SHARE mode, every table: no grant needed)
holds the live staging table of dedup_dataset in an open transaction: does the move into the store
(which drops the table in its transaction) fail, and is a stale staging table of a dead driver, held
the same way, a stop for every later run?"""

import os
import time

import numpy as np
import psycopg
import pyarrow as pa

from simhash_store.errors import SimhashStoreError
from simhash_store.keep import KeepPolicy
from simhash_store.store import Store, writes

os.environ.setdefault("SIMHASH_STORE_LOCK_TIMEOUT", "3")
DB = os.environ.get("DB", "h19r_db3")
OWNER_URL = f"postgresql://h19r_owner@127.0.0.1:5432/{DB}"
with psycopg.connect(f"postgresql://root@127.0.0.1:5432/{DB}", autocommit=True) as root:
    root.execute("DELETE FROM simhash.segments; DELETE FROM simhash.cluster_heads; DELETE FROM simhash.documents")
store = Store(OWNER_URL)
store.recluster(4, keep=KeepPolicy.parse("first"))
payload = writes.staged_payload(
    0,
    pa.array(["k1", "k2"]),
    np.array([1, 2], dtype=np.uint64),
    pa.array([b"", b""], pa.binary()),
    np.array([1, 1]),
    np.array([0, 1]),
    np.array([0, 1]),
    np.array([1, 1]),
)
with psycopg.connect(f"postgresql://h19r_readall@127.0.0.1:5432/{DB}") as reader:
    start = time.monotonic()
    try:
        with store.staging() as name:
            store.stage_block(name, 0, payload)
            reader.execute(f"SELECT count(*) FROM simhash.{name}")  # ACCESS SHARE, kept: the transaction stays open
            print("move ->", store.move_staged(name, 4, {0: 2}, 1), f"after {time.monotonic() - start:.1f}s")
    except SimhashStoreError as exc:
        print("move ->", type(exc).__name__, f"after {time.monotonic() - start:.1f}s:", str(exc)[:250])
    reader.rollback()
with psycopg.connect(f"postgresql://root@127.0.0.1:5432/{DB}", autocommit=True) as root:
    print("documents stored:", root.execute("SELECT count(*) FROM simhash.documents").fetchone()[0])
    print("staging left:", root.execute("SELECT relname FROM pg_class WHERE relname LIKE 'dedup_staging_%'").fetchall())
# A stale table (its driver died), held by the reader: every later run's start?
with psycopg.connect(OWNER_URL, autocommit=True) as dead:
    stale = writes.staging_name()
    writes.create_staging(dead.cursor(), stale)
with psycopg.connect(f"postgresql://h19r_readall@127.0.0.1:5432/{DB}") as reader:
    reader.execute(f"SELECT count(*) FROM simhash.{stale}")
    start = time.monotonic()
    try:
        with store.staging() as name:
            print("next run's staging ->", name, f"after {time.monotonic() - start:.1f}s")
    except SimhashStoreError as exc:
        print("next run ->", type(exc).__name__, f"after {time.monotonic() - start:.1f}s:", str(exc)[:250])
    reader.rollback()
store.close()
