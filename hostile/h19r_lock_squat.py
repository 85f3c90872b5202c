"""Another role (a plain login, or a grant-read reader) holds locks the owner's commands need; is every
wait bounded, and is the end one line? Usage: python hostile/h19r_lock_squat.py (env DB, OWNER, OTHER)."""

import os
import subprocess
import sys
import time

import psycopg

DB = os.environ.get("DB", "h19r_db")
OWNER = os.environ.get("OWNER", "h19r_owner")
OTHER = os.environ.get("OTHER", "h19r_app")
READER = os.environ.get("READER", "h19r_reader")
WRITER = os.environ.get("WRITER", "h19r_writer")
URL = f"postgresql://{OWNER}@127.0.0.1:5432/{DB}"
CLI = os.path.join(os.path.dirname(sys.executable), "simhash-store")

CASES = [
    (OTHER, "SELECT pg_advisory_lock(hashtext('simhash-store migrations'))", ["init"]),
    (OTHER, "SELECT pg_advisory_lock(hashtext('simhash-store migrations'))", ["init", "--segments"]),
    (OTHER, "SELECT pg_advisory_lock(1397312840, 3)", ["stats"]),
    (READER, "BEGIN; LOCK TABLE simhash.documents IN ACCESS SHARE MODE", ["init", "--layout", "wide3"]),
    (READER, "BEGIN; LOCK TABLE simhash.documents IN ACCESS SHARE MODE", ["optimize"]),
    (READER, "BEGIN; LOCK TABLE simhash.store_info IN ACCESS SHARE MODE", ["init", "--segments"]),
    (READER, "BEGIN; LOCK TABLE simhash.documents IN ACCESS SHARE MODE", ["calibrate", "--apply", "/tmp/h19r_in.txt"]),
    (
        READER,
        "BEGIN; LOCK TABLE simhash.documents, simhash.cluster_heads, simhash.store_info IN ACCESS SHARE MODE",
        ["recluster", "-k", "3", "--keep", "first"],
    ),
    (
        READER,
        "BEGIN; LOCK TABLE simhash.documents, simhash.cluster_heads, simhash.store_info IN ACCESS SHARE MODE",
        ["add", "/tmp/h19r_docs.jsonl"],
    ),
    (
        READER,
        "BEGIN; LOCK TABLE simhash.documents, simhash.cluster_heads, simhash.store_info IN ACCESS SHARE MODE",
        ["remove", "d2"],
    ),
    (
        READER,
        "BEGIN; LOCK TABLE simhash.documents, simhash.cluster_heads, simhash.segments IN ACCESS SHARE MODE",
        ["dedup", "/tmp/h19r_docs.jsonl", "-o", "/tmp/h19r_dedup_out.jsonl", "-k", "3"],
    ),
    (OTHER, "SELECT pg_advisory_lock(1397312840, 2)", ["add", "/tmp/h19r_docs.jsonl"]),
    (WRITER, "BEGIN; SELECT * FROM simhash.store_info FOR UPDATE", ["add", "/tmp/h19r_t.jsonl"]),
    (WRITER, "BEGIN; SELECT * FROM simhash.store_info FOR UPDATE", ["recluster", "-k", "3", "--keep", "first"]),
    (WRITER, "BEGIN; SELECT * FROM simhash.store_info FOR UPDATE", ["remove", "d1"]),
    (WRITER, "BEGIN; SELECT * FROM simhash.store_info FOR UPDATE", ["init", "--segments"]),
    (WRITER, "BEGIN; SELECT * FROM simhash.store_info FOR UPDATE", ["calibrate", "--apply", "/tmp/h19r_docs.jsonl"]),
    (WRITER, "BEGIN; SELECT * FROM simhash.store_info FOR UPDATE", ["grant-read", "h19r_reader"]),
    (WRITER, "BEGIN; SELECT * FROM simhash.store_info FOR UPDATE", ["stats"]),
    (WRITER, "BEGIN; SELECT * FROM simhash.store_info FOR UPDATE", ["query", "/tmp/h19r_in.txt"]),
    (OTHER, "SELECT pg_advisory_lock_shared(1397312840, 2)", ["recluster", "-k", "3", "--keep", "first"]),
    (WRITER, "BEGIN; LOCK TABLE simhash.documents IN ACCESS EXCLUSIVE MODE", ["query", "/tmp/h19r_in.txt"]),
    (WRITER, "BEGIN; LOCK TABLE simhash.documents IN ACCESS EXCLUSIVE MODE", ["stats"]),
    (WRITER, "BEGIN; LOCK TABLE simhash.documents IN ACCESS EXCLUSIVE MODE", ["dups", "-k", "3"]),
]
if len(sys.argv) > 1:
    CASES = CASES[int(sys.argv[1]) :]
for role, hold, command in CASES:
    with psycopg.connect(f"postgresql://{role}@127.0.0.1:5432/{DB}", autocommit=True) as held:
        for statement in hold.split("; "):
            held.execute(statement)
        start = time.monotonic()
        env = dict(os.environ, SIMHASH_STORE_LOCK_TIMEOUT="2")
        try:
            done = subprocess.run([CLI, "--db", URL, *command], capture_output=True, text=True, timeout=90, env=env)
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
            print(
                f"{role} {hold!r}: {' '.join(command)} -> rc {done.returncode} after {time.monotonic() - start:.1f}s: {tail[0][:300]}"
            )
        except subprocess.TimeoutExpired:
            print(f"{role} {hold!r}: {' '.join(command)} -> STILL WAITING after 90 s")
