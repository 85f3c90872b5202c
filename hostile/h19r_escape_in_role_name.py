"""A role whose name holds a terminal escape and a newline holds the --skip-near-duplicates lock: the
owner's error line names it. Is it one line, the escape shown, not sent?"""

import os
import subprocess
import sys

import psycopg

DB = "h19r_db"
NAME = "h19r_e\x1b[2Jvil\nrole"
with psycopg.connect(f"postgresql://root@127.0.0.1:5432/{DB}", autocommit=True) as root:
    root.execute(psycopg.sql.SQL("CREATE ROLE {} LOGIN").format(psycopg.sql.Identifier(NAME)))
    try:
        with psycopg.connect(dbname=DB, host="127.0.0.1", user=NAME, autocommit=True) as other:
            other.execute("SELECT pg_advisory_lock(1397312840, 1)")
            cli = os.path.join(os.path.dirname(sys.executable), "simhash-store")
            env = dict(os.environ, SIMHASH_STORE_LOCK_TIMEOUT="1")
            done = subprocess.run(
                [
                    cli,
                    "--db",
                    f"postgresql://h19r_owner@127.0.0.1:5432/{DB}",
                    "add",
                    "--skip-near-duplicates",
                    "/tmp/h19r_docs.jsonl",
                ],
                capture_output=True,
                env=env,
            )
            print(done.returncode, repr(done.stdout + done.stderr))
    finally:
        root.execute(psycopg.sql.SQL("DROP ROLE {}").format(psycopg.sql.Identifier(NAME)))
