"""The same through the library: a Store adds a batch (its pooled session keeps pg_temp.simhash_incoming),
a member of pg_read_all_data finds the table and locks it in an open transaction, the Store adds again."""

import os
import time

import psycopg

from simhash_store.errors import SimhashStoreError
from simhash_store.store import NewDocument, Store

os.environ.setdefault("SIMHASH_STORE_LOCK_TIMEOUT", "3")
DB = os.environ.get("DB", "h19r_db3")
with Store(f"postgresql://h19r_owner@127.0.0.1:5432/{DB}") as store:
    store.add([NewDocument("t1", 11)])
    with psycopg.connect(f"postgresql://h19r_readall@127.0.0.1:5432/{DB}") as reader:
        tables = reader.execute(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relname = 'simhash_incoming' AND n.nspname LIKE 'pg\\_temp\\_%'"
        ).fetchall()
        print("found:", tables)
        for (table,) in tables:
            reader.execute(f"LOCK TABLE {table} IN ACCESS SHARE MODE")
        start = time.monotonic()
        try:
            print("second add ->", store.add([NewDocument("t2", 12)]), f"after {time.monotonic() - start:.1f}s")
        except SimhashStoreError as exc:
            print("second add ->", type(exc).__name__, f"after {time.monotonic() - start:.1f}s:", str(exc)[:200])
