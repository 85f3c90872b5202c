"""Migrations are append-only and keep every row: a store made by the first release upgrades in place and back."""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text

from simhash_store import migrate, to_signed
from simhash_store.scheme import DEFAULT
from simhash_store.store import Store

import sql_snapshot  # tests/sql_snapshot.py

pytestmark = pytest.mark.every_backend  # the DDL and SQL functions of every revision, on each server version

VERSIONS = Path(__file__).resolve().parent.parent / "migrations" / "versions"
# Revision 0001 shipped: its file (and so the DDL it runs) must never change.
REVISION_0001_SHA256 = "3fead0c2e44714f52069a7aca6a1e851a39cb3758f425eec62152bca4fbac7f6"
SQL_FILES = VERSIONS.parent / "sql"
# The function versions revisions run (revision 0008 on): like 0001, a released file never
# changes; a new version is a new file (with its Citus variant beside it when Citus needs one).
SQL_FILES_SHA256 = {
    "contained.v1.sql": "25e77ac54b6d02c6d663e8a86d44eb84f830c94a4fb75d846a2f86f671c66b1c",
    "contained.v2.sql": "c28607f888f7a3eff554bb7684ad34906b66aee48a98fb1df837aad6c078e342",
    "containment_pairs.v1.sql": "87ff9df0b43bd888671146e8c0613281d8de06e35301e0210cd02c63c5ce83ed",
    "containment_pairs.v2.sql": "7ece8faf4deb1d7449bbf8b97f57aae3f079bebf2576f9fb6d15c969dcacaa65",
    "cluster_of.v1.sql": "8c604662d29125fd24c243d7ef756a647e9f2d29950d1916cc8039e34e26ec36",
    "distance.v2.sql": "b5df71bde275490a5f1610ee424dcb690064b14c90b58fd2890f282405e0d57d",
    "documents_shard_bytes.v1.citus.sql": "6c170cd10e07f820a404c41ecdab2cce7f89f79c3e0bbcc06a0496964579101a",
    "from_hex.v1.sql": "613f3c28afb1d33c3ade1da1b2f4e0e029fb19a47849eb807e6c5c9dd10f950e",
    "near.v3.citus.sql": "2b1917a5837ff2e8fe5a06aa1e7c7ffb1dabc45195f7a9f41f4ec85999feeafa",
    "near.v3.sql": "a21570eda7b9cde412aecf49b86d6de080755175f873eb83561142ca17a7a78a",
    "near.wide3.v1.sql": "904999a352b418db6cb951f33e54e70c572c19223fa0b93f91544864f9ce7de3",
    "near_many.v1.citus.sql": "60db165f4faaab18cb854028723a9ab85476f4b64cbbd9d415d88993d1edda11",
    "near_many.v1.sql": "6c106b1a9e6a71d5c70e87413a9c1d9cb986730fa5940da3a5697456c4238f8c",
    "near_many.wide3.v1.sql": "6b0ca265c391b9200ea24ccb405dc6f2b69526f6fa3faa540fff2d1682a53703",
    "near.v4.sql": "702a0e5ce24c2162fe8715c0b7eefca4d903c9e4b44052e2daab93a582a42567",
    "near.v4.citus.sql": "972654dd38d56adbeaac57895c7636567ee3d03b0a83b9f307f3a8b4af9e7350",
    "near_many.v2.sql": "2572bd09c2812def7856a42ae823545733b25a4ce845a335e7c16563b19559bf",
    "near_many.v2.citus.sql": "c01fa6ddf5741ad9baa5e3fc53dc861d19938601db9d0ba6bf30a9fc27637167",
    "near.wide3.v2.sql": "722cde8fe87e5a24a7a89ae312612764498fd6f048ed910167e9501b9574917a",
    "near_many.wide3.v2.sql": "a5b43d440adf888150cd6261030b640ca0e0e6676650267b3be5b3a9936e54cd",
    "to_hex.v1.sql": "a9fe9ef27415c1a564564f45c7615f5c19064df010f949569e31f0710603f76e",
}
# The functions revision 0008 adds; every other one it re-creates from files exactly as 0007 left it.
NEW_IN_0008 = {"simhash.from_hex(text)", "simhash.to_hex(bigint)"}
NEW_IN_0009 = {"simhash.contained(bigint[],integer)", "simhash.containment_pairs(integer)"}
REVISIONS = [f"{n:04d}" for n in range(1, 16)]
# The functions revision 0013 gives a new version (containment counted per distinct fingerprint); the rest it keeps.
CHANGED_IN_0013 = {"simhash.contained(bigint[],integer)", "simhash.containment_pairs(integer)"}

CHECKSUM = (
    "SELECT count(*), md5(string_agg(md5(ROW(id, key, fingerprint, block0, block1, block2, block3, digest, "
    "stamp, length, metadata, added_at, updated_at)::text), '' ORDER BY id)) FROM simhash.documents"
)
FUNCTIONS = (
    "SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), obj_description(p.oid, 'pg_proc'), p.proacl FROM pg_proc p "
    "WHERE p.pronamespace = 'simhash'::regnamespace ORDER BY 1"
)


def _plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def test_revision_0001_is_frozen():
    assert hashlib.sha256((VERSIONS / "0001_initial_store.py").read_bytes()).hexdigest() == REVISION_0001_SHA256


def test_sql_function_files_are_frozen():
    found = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(SQL_FILES.glob("*.sql"))}
    assert found == SQL_FILES_SHA256


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
    # 0008 re-creates every function from its file: the files hold exactly what 0007 installed.
    assert [f for f in functions["0008"] if f[0] not in NEW_IN_0008] == functions["0007"]
    assert [f for f in functions["0009"] if f[0] not in NEW_IN_0009] == functions["0008"]  # 0009 only adds
    assert functions["0010"] == functions["0009"]  # 0010 adds columns, no function
    assert functions["0011"] == functions["0010"]  # 0011 adds the layouts' table and column: four16 keeps its functions
    assert functions["0012"] == functions["0011"]  # 0012 lets a store record the lean layout, no function
    kept = [[f for f in functions[r] if f[0] not in CHANGED_IN_0013] for r in ("0012", "0013")]
    assert kept[0] == kept[1] and functions["0013"] != functions["0012"]
    assert functions["0014"] == functions["0013"]  # 0014 sets the segments' replica identity, no function
    relabelled = {"simhash.near(bigint,integer,text,integer)", "simhash.near_many(bigint[],integer,text,integer)"}
    assert [f for f in functions["0015"] if f[0] not in relabelled] == [
        f for f in functions["0014"] if f[0] not in relabelled
    ]
    for before, after in zip(functions["0014"], functions["0015"]):  # 0015 changes only the label
        label = (" STABLE PARALLEL SAFE", " STABLE") if after[0] in relabelled else ("", "")
        assert after[1] == before[1].replace(*label) and after[2:] == before[2:], after[0]
    with Store(empty_database_url) as store:  # the library reads the upgraded store
        assert [m.key for m in store.query(query, 7)] == [key for key, _ in states["0001"][1]]
        assert [len(found) for found in store.query_many([query, query ^ 1], 2)] == [3, 4]

    for revision in reversed(REVISIONS[:-1]):  # each downgrade restores the previous definitions exactly
        migrate.downgrade(engine, revision)
        with psycopg.connect(url, autocommit=True) as connection:
            assert _state(connection, query) == states["0001"], revision
            assert connection.execute(FUNCTIONS).fetchall() == functions[revision], revision
            if revision == "0013":  # 0014's downgrade puts the default replica identity back
                assert connection.execute(
                    "SELECT relreplident FROM pg_class WHERE oid = 'simhash.segments'::regclass"
                ).fetchone() == ("d",)
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.HEAD_REVISION
    engine.dispose()


def test_grants_on_near_survive_its_replacement(empty_database_url, make_role):
    # An administrator who took EXECUTE away from PUBLIC and gave it to one role keeps that.
    engine = create_engine(empty_database_url, isolation_level="AUTOCOMMIT")
    migrate.upgrade(engine, "0003")
    role = make_role(empty_database_url, prefix="simhash_reader", login=False)
    with engine.connect() as connection:
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
                signatures = [
                    "simhash.near(bigint, integer, text, integer)",
                    "simhash.near_many(bigint[], integer, text, integer)",
                ]
            with engine.connect() as connection:
                for signature in signatures:
                    allowed = connection.execute(
                        text(
                            "SELECT has_function_privilege(:role, :f, 'EXECUTE'), has_function_privilege('public', :f, 'EXECUTE')"
                        ),
                        {"role": role, "f": signature},
                    ).one()
                    assert tuple(allowed) == (True, False), (revision, signature)
    finally:
        engine.dispose()


def test_the_installed_functions_are_the_checked_in_snapshot(database_url):
    """docs/sql-functions.sql shows every function a store runs (regenerated here when it changes)."""
    with psycopg.connect(_plain(database_url)) as connection:
        rendered = sql_snapshot.render(connection, migrate.HEAD_REVISION, "tests/test_migrations.py")
    sql_snapshot.check("sql-functions.sql", rendered)


def test_the_new_hex_functions_get_the_grants_of_near(empty_database_url, make_role):
    # An administrator who took EXECUTE on near away from PUBLIC and gave it to one role: the
    # functions 0008 adds follow the same rule, and go again with a downgrade.
    engine = create_engine(empty_database_url, isolation_level="AUTOCOMMIT")
    migrate.upgrade(engine, "0007")
    role = make_role(empty_database_url, prefix="simhash_reader", login=False)
    near = "simhash.near(bigint, integer, text, integer)"
    with engine.connect() as connection:
        connection.execute(text(f"REVOKE EXECUTE ON FUNCTION {near} FROM PUBLIC"))
        connection.execute(text(f'GRANT EXECUTE ON FUNCTION {near} TO "{role}"'))
    try:
        migrate.upgrade(engine, "0008")
        with engine.connect() as connection:
            for signature in sorted(NEW_IN_0008):
                allowed = connection.execute(
                    text(
                        "SELECT has_function_privilege(:role, :f, 'EXECUTE'), has_function_privilege('public', :f, 'EXECUTE')"
                    ),
                    {"role": role, "f": signature},
                ).one()
                assert tuple(allowed) == (True, False), signature
        migrate.downgrade(engine, "0007")
        with engine.connect() as connection:
            assert connection.execute(text("SELECT to_regprocedure('simhash.from_hex(text)')")).scalar() is None
            assert connection.execute(text("SELECT to_regprocedure('simhash.to_hex(bigint)')")).scalar() is None
    finally:
        engine.dispose()


def test_each_citus_file_is_what_the_coordinator_ran_before_files(database_url):
    """A Citus file is its one-server version as distributed.adapt rewrote it (planned afresh): nothing changed on Citus."""
    from simhash_store import distributed
    from simhash_store.migrations import sqlfiles

    versions = [p.name.removesuffix(".citus.sql") for p in SQL_FILES.glob("*.citus.sql")]
    versions = [v for v in versions if sqlfiles.path(v).exists()]
    assert sorted(versions) == ["near.v3", "near.v4", "near_many.v1", "near_many.v2"]
    definition = "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.pronamespace = 'simhash'::regnamespace AND p.proname = %s"
    with psycopg.connect(_plain(database_url)) as connection:  # PostgreSQL prints both: the same layout
        for version in versions:
            name = version.split(".")[0]
            connection.execute(sqlfiles.read(version))
            rewritten = distributed.adapt(connection.execute(definition, (name,)).fetchone()[0], name).replace(
                "SET plan_cache_mode TO 'force_generic_plan'", "SET plan_cache_mode TO 'force_custom_plan'"
            )
            connection.execute(sqlfiles.read(version, citus=True))  # calls documents_shard_bytes() only when it runs
            assert connection.execute(definition, (name,)).fetchone()[0] == rewritten, version
