"""A plain login holds the migrations' advisory lock (advisory locks need no privilege) while the store's
owner upgrades a store at an older revision: is the wait bounded and the end one line?"""

import os
import subprocess
import sys
import time

import psycopg
from sqlalchemy import create_engine

from simhash_store import migrate
from simhash_store.config import session_arguments  # noqa: F401  (the library's own session options)

DB = os.environ.get("DB", "h19r_db2")
URL = f"postgresql://h19r_owner@127.0.0.1:5432/{DB}"
CLI = os.path.join(os.path.dirname(sys.executable), "simhash-store")
engine = create_engine(URL.replace("postgresql://", "postgresql+psycopg://"))
migrate.upgrade(engine, "0014")
engine.dispose()
with psycopg.connect(f"postgresql://h19r_app@127.0.0.1:5432/{DB}", autocommit=True) as held:
    held.execute("SELECT pg_advisory_lock(hashtext('simhash-store migrations'))")
    for command in (["init"], ["add", "/tmp/h19r_in.txt"], ["stats"]):
        start = time.monotonic()
        env = dict(os.environ, SIMHASH_STORE_LOCK_TIMEOUT="2")
        try:
            done = subprocess.run([CLI, "--db", URL, *command], capture_output=True, text=True, timeout=120, env=env)
            out = (done.stdout + done.stderr).strip().splitlines()
            last = out[-1][:400] if out else ""
            took = time.monotonic() - start
            print(f"{' '.join(command)} -> rc {done.returncode} after {took:.1f}s, {len(out)} lines: {last}")
        except subprocess.TimeoutExpired:
            print(f"{' '.join(command)} -> STILL WAITING after 120 s")
