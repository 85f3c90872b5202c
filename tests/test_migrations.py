"""Migrations are append-only and keep every row: a store made by the first release upgrades in place and back."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import psycopg
from sqlalchemy import create_engine, text

from simhash_store import migrate, to_signed
from simhash_store.scheme import DEFAULT
from simhash_store.store import Store

VERSIONS = Path(__file__).resolve().parent.parent / "migrations" / "versions"
# Revision 0001 shipped: its file (and so the DDL it runs) must never change.
REVISION_0001_SHA256 = "3fead0c2e44714f52069a7aca6a1e851a39cb3758f425eec62152bca4fbac7f6"
REVISIONS = ["0001", "0002", "0003", "0004", "0005", "0006", "0007"]

CHECKSUM = (
    "SELECT count(*), md5(string_agg(md5(ROW(id, key, fingerprint, block0, block1, block2, block3, digest, "
    "stamp, length, metadata, added_at, updated_at)::text), '' ORDER BY id)) FROM simhash.documents"
)
FUNCTIONS = (
    "SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) FROM pg_proc p "
    "WHERE p.pronamespace = 'simhash'::regnamespace ORDER BY 1"
)


def _plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def test_revision_0001_is_frozen():
    assert hashlib.sha256((VERSIONS / "0001_initial_store.py").read_bytes()).hexdigest() == REVISION_0001_SHA256


def test_revisions_are_the_ones_this_test_walks():
    assert migrate.HEAD_REVISION == REVISIONS[-1] == migrate.head_revision()


def _state(connection: psycopg.Connection, query: int) -> tuple:
    rows = connection.execute(CHECKSUM).fetchone()
    found = connection.execute("SELECT key, distance FROM simhash.near(%s, 7)", (to_signed(query),)).fetchall()
    return rows, found


def test_a_store_of_the_first_release_upgrades_in_place_and_back(empty_database_url):
    engine = create_engine(empty_database_url)
    migrate.upgrade(engine, "0001")
    url = _plain(empty_database_url)
    query = 0x1A9F_FED4_0A66_7204
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO simhash.store_info (singleton, scheme_name, scheme) VALUES (true, %s, %s::jsonb)",
            (DEFAULT.name, DEFAULT.to_json()),
        )
        # Every column 0001 defines, rows near the query at distances 0..9 and unrelated ones.
        connection.execute(
            "INSERT INTO simhash.documents (key, fingerprint, digest, stamp, length, metadata) "
            "SELECT 'doc/' || i, CASE WHEN i < 10 THEN %s # ((1::bigint << i) - 1) ELSE hashtextextended(i::text, 0) END, "
            "decode(md5(i::text), 'hex'), i || ':1', i * 3, jsonb_build_object('i', i, 'zh', '中文') "
            "FROM generate_series(0, 1999) AS i",
            (to_signed(query),),
        )
        states = {"0001": _state(connection, query)}
        functions = {"0001": connection.execute(FUNCTIONS).fetchall()}
    assert len(states["0001"][1]) == 8  # distances 0..7

    for revision in REVISIONS[1:]:
        migrate.upgrade(engine, revision)
        with psycopg.connect(url, autocommit=True) as connection:
            assert _state(connection, query) == states["0001"], revision
            functions[revision] = connection.execute(FUNCTIONS).fetchall()
    with Store(empty_database_url) as store:  # the library reads the upgraded store
        assert [m.key for m in store.query(query, 7)] == [key for key, _ in states["0001"][1]]
        assert [len(found) for found in store.query_many([query, query ^ 1], 2)] == [3, 4]

    for revision in reversed(REVISIONS[:-1]):  # each downgrade restores the previous definitions exactly
        migrate.downgrade(engine, revision)
        with psycopg.connect(url, autocommit=True) as connection:
            assert _state(connection, query) == states["0001"], revision
            assert connection.execute(FUNCTIONS).fetchall() == functions[revision], revision
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.HEAD_REVISION
    engine.dispose()


def test_grants_on_near_survive_its_replacement(empty_database_url):
    # An administrator who took EXECUTE away from PUBLIC and gave it to one role keeps that.
    engine = create_engine(empty_database_url, isolation_level="AUTOCOMMIT")
    migrate.upgrade(engine, "0003")
    role = f"simhash_reader_{uuid.uuid4().hex[:8]}"
    with engine.connect() as connection:
        connection.execute(text(f'CREATE ROLE "{role}"'))
        connection.execute(text("REVOKE EXECUTE ON FUNCTION simhash.near(bigint, integer, text) FROM PUBLIC"))
        connection.execute(text(f'GRANT EXECUTE ON FUNCTION simhash.near(bigint, integer, text) TO "{role}"'))
    try:
        for revision in ("0004", "0003"):
            if revision == "0004":
                migrate.upgrade(engine, revision)
            else:
                migrate.downgrade(engine, revision)
            signatures = ["simhash.near(bigint, integer, text)"]
            if revision == "0004":
                signatures = ["simhash.near(bigint, integer, text, integer)", "simhash.near_many(bigint[], integer, text, integer)"]
            with engine.connect() as connection:
                for signature in signatures:
                    allowed = connection.execute(
                        text("SELECT has_function_privilege(:role, :f, 'EXECUTE'), has_function_privilege('public', :f, 'EXECUTE')"),
                        {"role": role, "f": signature},
                    ).one()
                    assert tuple(allowed) == (True, False), (revision, signature)
    finally:
        with engine.connect() as connection:
            connection.execute(text(f'DROP OWNED BY "{role}"'))
            connection.execute(text(f'DROP ROLE "{role}"'))
        engine.dispose()
