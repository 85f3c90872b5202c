"""`query` reads the store without SQLAlchemy (lookup.py), and gets what the Store gets:
the same URL resolution, session settings, checks, errors and matches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from typer.testing import CliRunner

from simhash_store import fingerprint, to_hex
from simhash_store.cli import app
from simhash_store.config import UrlParts, normalized_parts
from simhash_store.errors import ConfigError, SimhashStoreError
from simhash_store.lookup import Lookup, _connects_as_written
from simhash_store.store import NewDocument, Store
from simhash_store.urls import _split

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def url_text(url) -> str:
    return url.render_as_string(hide_password=False)


def split_as_sqlalchemy(raw: str):
    try:
        return make_url(raw)
    except (ArgumentError, ValueError):
        return ValueError


def split_here(raw: str):
    try:
        return _split(raw).sqlalchemy()
    except ValueError:
        return ValueError


# ------------------------------------------------------------ no database needed


@given(st.text(alphabet="pgsqlor+:/@?&=%[]._-,;# 0aZü", max_size=40))
def test_urls_are_taken_apart_as_sqlalchemy_takes_them_apart(rest):
    for raw in (rest, f"postgresql://{rest}", f"postgresql+psycopg://u:p@h:5432/{rest}"):
        assert split_here(raw) == split_as_sqlalchemy(raw), raw


@pytest.mark.parametrize(
    "raw",
    [
        "postgresql://u:p%40ss@db.example:5433/news?sslmode=require&application_name=x",
        "postgresql://u@[::1]:5432/d%20b?host=/tmp/sock&port=5432",
        "postgres:///db?host=a&host=b",
        "postgresql://h:/db",
        "postgresql://h:x/db",
        "postgresql://:p@/db?=x&k=",
    ],
)
def test_these_urls_too(raw):
    assert split_here(raw) == split_as_sqlalchemy(raw)


def test_multi_host_forms_are_left_to_sqlalchemy_and_the_store():
    def parts(**query) -> UrlParts:
        return UrlParts("postgresql+psycopg", "u", None, None, None, "db", query)

    assert _connects_as_written(normalized_parts("postgresql://u@h:5432/db?sslmode=disable"))
    assert _connects_as_written(parts(host="/run/pg", port="5432"))
    assert not _connects_as_written(parts(host="a,b"))
    assert not _connects_as_written(parts(host=("a", "b")))
    assert not _connects_as_written(parts(host="a:5432"))
    assert not _connects_as_written(parts(host="a", port="5432,5433"))


# ------------------------------------------------------------ with a database


def test_lookup_answers_as_the_store_does(database_url):
    texts = [law.read_text(encoding="utf-8") for law in sorted((EXAMPLES / "corpus").glob("*.txt"))]
    with Store(database_url) as store:
        store.add([NewDocument(f"doc-{n}", fingerprint(t)) for n, t in enumerate(texts)])
        queries = [fingerprint(t) for t in texts] + [0, 2**64 - 1]
        expected = store.scheme, store.query_many(queries, 20), store.query_many(queries, 64, limit=2)
    with Lookup(url_text(database_url)) as lookup:
        assert (lookup.scheme, lookup.query_many(queries, 20), lookup.query_many(queries, 64, limit=2)) == expected


def test_lookup_connects_with_the_stores_session_settings(database_url, monkeypatch):
    monkeypatch.setenv("SIMHASH_STORE_STATEMENT_TIMEOUT", "7")
    monkeypatch.setenv("SIMHASH_STORE_LOCK_TIMEOUT", "3")
    show = (
        "SELECT current_setting('search_path'), current_setting('lock_timeout'), current_setting('statement_timeout')"
    )

    def session(connection):
        return type(connection), connection.execute(show).fetchone(), connection.info.get_parameters()

    with Store(database_url) as store, Lookup(url_text(database_url)) as lookup:
        lookup.scheme  # noqa: B018 - connects
        pooled = store.engine.raw_connection()
        try:
            expected = session(pooled.driver_connection)
        finally:
            pooled.close()
        assert session(lookup._connection) == expected
    assert expected[1] == ("pg_catalog,pg_temp", "3s", "7s")


def _error(read) -> str:
    try:
        read()
    except SimhashStoreError as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError("no error")


def test_lookup_refuses_what_the_store_refuses_in_the_same_words(database_url, empty_database_url):
    cases = {
        "no store": (url_text(empty_database_url), None),
        "another scheme": (url_text(database_url), "classic-tfidf-top50"),
        "a 32-bit scheme": (url_text(database_url), "seed-murmur32"),
        "unreachable": ("postgresql://me:hunter2@127.0.0.1:9/none", None),
        "not a URL": ("postgresql://me:hunter2@db.example:port/x", None),
    }
    with Store(database_url) as store:
        store.add([NewDocument("a", 1)])
    for case, (url, scheme) in cases.items():
        said = _error(lambda url=url, scheme=scheme: Store(url, scheme=scheme).scheme)
        assert _error(lambda url=url, scheme=scheme: Lookup(url, scheme=scheme).scheme) == said, case
        assert "hunter2" not in said
    with Store(database_url) as store, store.engine.begin() as connection:
        connection.execute(text("UPDATE simhash.alembic_version SET version_num = '0004'"))
    said = _error(lambda: Store(database_url).query_many([1], 3))
    assert said.startswith("StoreOutdatedError: this store is at revision 0004")
    assert _error(lambda: Lookup(url_text(database_url)).query_many([1], 3)) == said


def test_a_multi_host_url_is_read_through_the_store(database_url):
    """Lookup connects with a URL as written; `query` gives a multi-host URL, which SQLAlchemy
    rewrites for psycopg, to the Store instead, and finds what is stored all the same."""
    with Store(database_url) as store:
        store.add([NewDocument("a", 1)])
    parts = normalized_parts(url_text(database_url))
    host = quote(parts.host or str(parts.query["host"]), safe="")
    port = parts.port or parts.query.get("port") or 5432
    both = f"postgresql://{parts.username}@/{parts.database}?host={host},{host}&port={port},{port}"
    result = CliRunner().invoke(app, ["--db", both, "query", "--fingerprint", to_hex(1), "-k", "0", "--json"])
    assert result.exit_code == 0, result.output
    assert [m["key"] for m in json.loads(result.stdout)["matches"]] == ["a"]
    with Lookup(both) as lookup:
        assert not lookup.connects_directly
        with pytest.raises(ConfigError, match="multi-host form .* read it through simhash_store.store.Store"):
            lookup.query_many([1], 0)
        assert lookup._connection is None


def test_query_never_imports_sqlalchemy(database_url):
    with Store(database_url) as store:
        reading = (EXAMPLES / "corpus" / "library-night-reading.txt").read_text(encoding="utf-8")
        store.add([NewDocument("library-night-reading.txt", fingerprint(reading))])
    env = {**os.environ, "SIMHASH_STORE_URL": url_text(database_url)}
    result = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "simhash_store.cli",
            "query",
            "--json",
            str(EXAMPLES / "query" / "library-repost.txt"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert '"key": "library-night-reading.txt"' in result.stdout
    imported = [
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    ]
    assert "psycopg" in imported and not [name for name in imported if name.startswith("sqlalchemy")]
