"""Shared set-up for the eleventh hostile pass over roles (PostgreSQL 15 at 127.0.0.1:5432, trust).

Each scenario makes its own database and roles (prefix h11r_) and drops them at the end.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import psycopg

ADMIN = "postgresql://root@127.0.0.1:5432/postgres"
ROOT = Path(__file__).resolve().parent.parent
CLI = str(ROOT / ".venv" / "bin" / "simhash-store")


def url(role: str, database: str) -> str:
    return f"postgresql://{role}@127.0.0.1:5432/{database}"


def admin(database: str = "postgres") -> psycopg.Connection:
    return psycopg.connect(url("root", database), autocommit=True)


def as_role(role: str, database: str) -> psycopg.Connection:
    return psycopg.connect(url(role, database), autocommit=True)


@contextlib.contextmanager
def scenario(name: str, roles: list[str]):
    """A fresh database h11r_<name> and LOGIN roles h11r_<role> (no other attribute); dropped afterwards."""
    database = f"h11r_{name}"
    names = [f"h11r_{r}" for r in roles]
    cleanup(database, names)
    with admin() as c:
        for role in names:
            c.execute(f'CREATE ROLE "{role}" LOGIN')
        c.execute(f'CREATE DATABASE "{database}"')
    try:
        yield database, names
    finally:
        cleanup(database, names)


def cleanup(database: str, names: list[str]) -> None:
    with admin() as c:
        c.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        for role in names:
            if c.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                for db in ("postgres",):
                    with admin(db) as d:
                        d.execute(f'DROP OWNED BY "{role}" CASCADE')
                c.execute(f'DROP ROLE "{role}"')


def cli(*args: str, db: str | None = None, env: dict[str, str] | None = None, input: str | None = None):
    full_env = dict(os.environ)
    full_env.pop("SIMHASH_STORE_URL", None)
    if env:
        full_env.update(env)
    command = [CLI, *args] + (["--db", db] if db else [])
    done = subprocess.run(command, capture_output=True, text=True, env=full_env, input=input, timeout=600)
    return done.returncode, done.stdout, done.stderr


def say(*parts) -> None:
    print(*parts, flush=True)
    sys.stdout.flush()
