"""A plain login holds dedup_dataset's staging lock (advisory 1397312840, 3) exclusively, or shared for
ever: does the owner's Store.staging() wait without bound, and are stale staging tables kept?"""

import os
import time

import psycopg

from simhash_store.errors import SimhashStoreError
from simhash_store.store import Store

os.environ["SIMHASH_STORE_LOCK_TIMEOUT"] = "2"
DB = "h19r_db"
for mode in ("pg_advisory_lock", "pg_advisory_lock_shared"):
    with psycopg.connect(f"postgresql://h19r_app@127.0.0.1:5432/{DB}", autocommit=True) as app:
        app.execute(f"SELECT {mode}(1397312840, 3)")
        start = time.monotonic()
        try:
            with Store(f"postgresql://h19r_owner@127.0.0.1:5432/{DB}") as store, store.staging() as name:
                print(mode, "-> staging table", name, f"after {time.monotonic() - start:.1f}s")
        except SimhashStoreError as exc:
            print(mode, "->", type(exc).__name__, f"after {time.monotonic() - start:.1f}s:", str(exc)[:300])
