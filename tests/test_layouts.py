"""Block layouts (init --layout): wide3 and lean stores answer exactly as brute force, like a four16 one.

Every search of a store of layout wide3 (three expression indexes of 21, 21 and 22 bits in
place of the four 16-bit block indexes) or lean (the four block indexes without INCLUDE
columns) equals numpy or Python brute force for every k: simhash.near and simhash.near_many
called in SQL, Store.query and query_many, the all-pairs searches, skipping near duplicates
on add, and clustering; their probes use their own indexes; switching the layout back and
forth, bulk loads and the migrations' downgrades keep every row and answer.
"""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from test_search import (  # tests/test_search.py: the same oracle and cases as the four16 tests
    DB_SETTINGS,
    _nested_plans,
    _plain,
    _plant,
    attacker,  # noqa: F401 - a fixture
    brute_force,
    clustered,
)
from typer.testing import CliRunner

from simhash_store import migrate, to_signed
from simhash_store.cli import app
from simhash_store.errors import InvalidValueError
from simhash_store.store import NewDocument, Store

CHECKSUM = "SELECT count(*), md5(string_agg(md5(ROW(d.*)::text), '' ORDER BY id)) FROM simhash.documents d"
FUNCTIONS = (
    "SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), obj_description(p.oid, 'pg_proc') FROM pg_proc p "
    "WHERE p.pronamespace = 'simhash'::regnamespace ORDER BY 1"
)
WIDE3_INDEXES = ["ix_documents_wide0", "ix_documents_wide1", "ix_documents_wide2"]
BLOCK_INDEXES = [f"ix_documents_block{n}" for n in range(4)]
LEAN_INDEXES = [f"ix_documents_lean{n}" for n in range(4)]
# The layouts other than the default, each store's searches checked against brute force.
OTHER_LAYOUTS = ["wide3", "lean"]
# Bits at the edges of the wide3 blocks (63..43, 42..22, 21..0) and of the four16 ones.
EDGES = [0, 15, 16, 21, 22, 31, 32, 42, 43, 47, 48, 63]


@pytest.fixture
def wide3(database_url):
    with Store(database_url) as opened:
        opened.init(layout="wide3")
        yield opened


@pytest.fixture(params=OTHER_LAYOUTS)
def layered(request, database_url):
    """A store of each layout other than four16."""
    with Store(database_url) as opened:
        opened.init(layout=request.param)
        yield opened


def _search_indexes(url) -> list[str]:
    with psycopg.connect(_plain(url)) as connection:
        return [
            row[0]
            for row in connection.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = 'simhash' AND tablename = 'documents' "
                "AND (indexname LIKE 'ix_documents_block%' OR indexname LIKE 'ix_documents_wide%' "
                "OR indexname LIKE 'ix_documents_lean%') ORDER BY 1"
            )
        ]


def _planted(rng: np.random.Generator, count: int, centres: int) -> tuple[dict[str, int], list[int]]:
    """Random fingerprints, and near copies of ``centres`` random points at 0..24 bits, their
    flips spread over the blocks or gathered at block edges."""
    stored = {f"r{i}": int(v) for i, v in enumerate(rng.integers(0, 2**64, size=count, dtype=np.uint64))}
    points = [int(v) for v in rng.integers(0, 2**64, size=centres, dtype=np.uint64)]
    for c, point in enumerate(points):
        for distance in range(25):
            bits = rng.choice(EDGES, min(distance, len(EDGES)), replace=False).tolist() if distance % 3 == 0 else []
            bits += rng.choice([b for b in range(64) if b not in bits], distance - len(bits), replace=False).tolist()
            value = point
            for bit in bits:
                value ^= 1 << bit
            stored[f"p{c}-d{distance}"] = value
    return stored, points


def _numpy_brute_force(keys: list[str], values: np.ndarray, point: int, k: int) -> list[tuple[int, str]]:
    distances = np.bitwise_count(values ^ np.uint64(point))
    return sorted((int(distances[i]), keys[i]) for i in np.flatnonzero(distances <= k))


def test_init_records_the_layout_and_swaps_the_indexes(database_url):
    with Store(database_url) as store:
        store.init()
        assert store.layout == "four16" and store.stats()["layout"] == "four16"
        assert _search_indexes(database_url) == BLOCK_INDEXES
        store.add([NewDocument("a", 0b1011), NewDocument("b", 2**64 - 1)])
        store.init(layout="wide3")
        assert store.layout == "wide3" and store.stats()["layout"] == "wide3"
        assert _search_indexes(database_url) == WIDE3_INDEXES
        store.init()  # no layout: the store keeps its own
        assert store.layout == "wide3"
        with psycopg.connect(_plain(database_url)) as connection:
            assert connection.execute("SELECT layout FROM simhash.store_info").fetchone() == ("wide3",)
        assert [(m.key, m.distance) for m in store.query(0b1001, 3)] == [("a", 1)]
        store.init(layout="lean")
        assert store.layout == "lean" and store.stats()["layout"] == "lean"
        assert _search_indexes(database_url) == LEAN_INDEXES
        assert [(m.key, m.distance) for m in store.query(0b1001, 3)] == [("a", 1)]
        store.init(layout="four16")
        assert _search_indexes(database_url) == BLOCK_INDEXES
        assert [(m.key, m.distance) for m in store.query(0b1001, 3)] == [("a", 1)]
        store.init(layout="lean")
        assert _search_indexes(database_url) == LEAN_INDEXES
        store.init()
        assert store.layout == "lean"
        store.init(layout="wide3")
        assert _search_indexes(database_url) == WIDE3_INDEXES
        assert [(m.key, m.distance) for m in store.query(0b1001, 3)] == [("a", 1)]
        assert store.count() == 2


def test_a_layout_record_that_lies_about_the_indexes_is_switched_without_a_traceback(database_url):
    # A role that may update store_info (a writer) rewrites the record: the owner's next
    # `init --layout four16` failed with a DuplicateTable traceback (the block indexes were there).
    plain = _plain(database_url)
    with Store(database_url) as store:
        store.add([NewDocument("a", 0b1011)])
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute("UPDATE simhash.store_info SET layout = 'wide3'")
    result = CliRunner().invoke(
        app, ["--db", database_url.render_as_string(hide_password=False), "init", "--layout", "four16"]
    )
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert _search_indexes(database_url) == BLOCK_INDEXES
    with Store(database_url) as store:
        assert store.layout == "four16"
        assert [(m.key, m.distance) for m in store.query(0b1001, 3)] == [("a", 1)]


@pytest.mark.parametrize("layout", OTHER_LAYOUTS)
def test_a_bad_layout_and_one_server_layouts_on_citus_are_refused_before_anything_changes(empty_database_url, layout):
    with Store(empty_database_url) as store:
        with pytest.raises(InvalidValueError, match="layout must be four16, wide3 or lean, not 'wide4'"):
            store.init(layout="wide4")
        with pytest.raises(InvalidValueError, match=f"the {layout} layout is for one server"):
            store.init(layout=layout, distributed=True)
    assert migrate.current_revision(create_engine(empty_database_url)) is None  # nothing was created
    env = {"SIMHASH_STORE_URL": _plain(empty_database_url)}
    result = CliRunner().invoke(app, ["init", "--layout", "wide4"], env=env)
    assert result.exit_code != 0 and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["init", "--layout", layout, "--distributed"], env=env)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: the {layout} layout is for one server: a distributed (Citus) store keeps the four16 layout"
    ]
    result = CliRunner().invoke(app, ["init", "--layout", layout], env=env)
    assert result.exit_code == 0 and f", layout {layout}: scheme" in result.stdout
    result = CliRunner().invoke(app, ["stats", "--json"], env=env)
    assert json.loads(result.stdout)["layout"] == layout


def test_sql_near_and_near_many_are_exact_for_every_distance(layered):
    """k = 0..64, every method, with and without max_results, against numpy brute force."""
    rng = np.random.default_rng(21)
    stored, points = _planted(rng, 400, 3)
    layered.add(NewDocument(k, v) for k, v in stored.items())
    keys = list(stored)
    values = np.array([stored[k] for k in keys], dtype=np.uint64)
    queries = [*points, stored["p1-d6"], int(rng.integers(0, 2**64, dtype=np.uint64))]
    signed = [to_signed(q) for q in queries]
    # wide3 probes up to k = 17 and scans beyond whatever the method; lean, as four16
    # (tests/test_search.py), probes every k when asked: up to 262,007 probes, so some k only.
    wide3 = layered.layout == "wide3"
    with psycopg.connect(_plain(layered.engine.url), autocommit=True) as connection:
        for k in range(65):
            expected = [_numpy_brute_force(keys, values, q, k) for q in queries]
            probed = wide3 or k <= 17 or k in (20, 26, 64)
            for method in ("auto", "probe", "scan") if probed else ("auto", "scan"):
                for s, want in zip(signed, expected):
                    rows = connection.execute(
                        "SELECT distance, key FROM simhash.near(%s, %s, %s)", (s, k, method)
                    ).fetchall()
                    assert rows == want, (k, method)
                    limited = connection.execute(
                        "SELECT distance, key FROM simhash.near(%s, %s, %s, max_results => 3)", (s, k, method)
                    ).fetchall()
                    assert limited == want[:3], (k, method)
                rows = connection.execute(
                    "SELECT query_index, distance, key FROM simhash.near_many(%s, %s, %s)", (signed, k, method)
                ).fetchall()
                assert rows == [(i + 1, d, key) for i, want in enumerate(expected) for d, key in want], (k, method)
                rows = connection.execute(
                    "SELECT query_index, distance, key FROM simhash.near_many(%s, %s, %s, 2)", (signed, k, method)
                ).fetchall()
                assert rows == [(i + 1, d, key) for i, want in enumerate(expected) for d, key in want[:2]], (k, method)
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="max_distance must be between 0 and 64"):
            connection.execute("SELECT * FROM simhash.near(0, 65)")


@DB_SETTINGS
@given(
    case=clustered(),
    k=st.integers(0, 64),
    method=st.sampled_from(["auto", "probe", "scan"]),
    limit=st.sampled_from([None, 1, 3]),
)
def test_store_query_and_query_many_equal_brute_force(layered, case, k, method, limit):
    stored, queries = case
    with layered.engine.begin() as connection:
        connection.execute(text("TRUNCATE simhash.documents CASCADE"))
    layered.add(NewDocument(key, value) for key, value in stored.items())
    expected = [brute_force(stored, q, k)[:limit] for q in queries]
    assert [[(m.distance, m.key) for m in layered.query(q, k, method=method, limit=limit)] for q in queries] == expected
    many = layered.query_many(queries, k, method=method, limit=limit)
    assert [[(m.distance, m.key) for m in found] for found in many] == expected


def test_all_pairs_clusters_and_skipping_near_duplicates(layered):
    rng = np.random.default_rng(22)
    stored, _ = _planted(rng, 300, 4)
    keys = sorted(stored)
    values = {k: stored[k] for k in keys}
    layered.add(NewDocument(k, v) for k, v in values.items())
    for k in (0, 3, 8, 11):
        expected = sorted(
            (a, b, (values[a] ^ values[b]).bit_count())
            for i, a in enumerate(keys)
            for b in keys[i + 1 :]
            if (values[a] ^ values[b]).bit_count() <= k
        )
        assert sorted((min(p.a, p.b), max(p.a, p.b), p.distance) for p in layered.pairs(k)) == expected, k
    # --skip-near-duplicates searches the store with near_many: a copy within k of a stored one is skipped.
    result = layered.add(
        [NewDocument("new-near", values["p0-d0"] ^ (1 << 21) ^ (1 << 43)), NewDocument("new-far", 0)],
        skip_near_duplicates=True,
        max_distance=3,
    )
    assert [s.key for s in result.near_duplicates] == ["new-near"]
    assert layered.get("new-far") is not None and layered.get("new-near") is None


def test_persistent_clusters_search_every_layout_in_sql_as_in_memory(pg_server, monkeypatch):
    """A write clusters its documents by simhash.near when there are many clusters: same clusters as four16."""
    from simhash_store import clusters as clustering

    rng = np.random.default_rng(23)
    originals = [int(v) for v in rng.integers(0, 2**64, 30, dtype=np.uint64)]
    copies = [
        NewDocument(f"c{i}-{j}", v ^ sum(1 << int(b) for b in rng.choice(64, 2 + 3 * j, replace=False)))
        for i, v in enumerate(originals)
        for j in range(3)
    ]
    monkeypatch.setattr(clustering, "IN_MEMORY_REPRESENTATIVES", 0)  # a radius search per document
    results = []
    for layout in ("four16", *OTHER_LAYOUTS):
        name = pg_server.create_database()
        try:
            url = pg_server.url(name)
            with Store(url) as store:
                store.init(layout=layout)
                store.recluster(8)
                store.add([NewDocument(f"o{i}", v) for i, v in enumerate(originals)])
                store.add(copies, batch_size=20)
            with psycopg.connect(_plain(url)) as connection:
                results.append(dict(connection.execute("SELECT key, cluster FROM simhash.documents").fetchall()))
        finally:
            pg_server.drop_database(name)
    assert results[0] == results[1] == results[2]
    assert (
        sum(
            1
            for key, cluster in results[1].items()
            if key.startswith("c") and cluster == results[1]["o" + key[1:].split("-")[0]]
        )
        >= 30
    )


def test_wide3_probes_are_index_only_scans_of_its_indexes_after_a_bulk_load(wide3):
    values = np.random.default_rng(24).integers(0, 2**64, size=20_000, dtype=np.uint64).tolist()
    wide3.load(NewDocument(f"k{i}", v) for i, v in enumerate(values))  # drops and rebuilds every index
    assert _search_indexes(wide3.engine.url) == WIDE3_INDEXES
    query = to_signed(values[3])
    plans = _nested_plans(
        wide3.engine.url,
        [
            ("SELECT * FROM simhash.near(%s, 3)", (query,)),
            ("SELECT * FROM simhash.near(%s, 11, 'probe')", (query,)),
            ("SELECT * FROM simhash.near(%s, 7, max_results => 2)", (query,)),
            ("SELECT * FROM simhash.near_many(%s, 3)", ([query, query ^ 1],)),
        ],
    )
    for name in WIDE3_INDEXES:
        assert f"Index Only Scan using {name}" in plans, plans
    assert "Seq Scan on documents" not in plans and "Bitmap Heap Scan on documents" not in plans, plans
    assert [m.key for m in wide3.query(values[3], 3)] == ["k3"]


def test_lean_indexes_carry_no_include_columns_and_its_probes_use_them_after_a_bulk_load(database_url):
    values = np.random.default_rng(26).integers(0, 2**64, size=20_000, dtype=np.uint64).tolist()
    with Store(database_url) as store:
        store.init(layout="lean")
        store.load(NewDocument(f"k{i}", v) for i, v in enumerate(values))  # drops and rebuilds every index
        assert _search_indexes(database_url) == LEAN_INDEXES
        with psycopg.connect(_plain(database_url)) as connection:
            columns = connection.execute(
                "SELECT c.relname, i.indnatts, i.indnkeyatts, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'ix_documents_lean%' ORDER BY 1"
            ).fetchall()
        assert columns == [
            (
                f"ix_documents_lean{n}",
                1,
                1,
                f"CREATE INDEX ix_documents_lean{n} ON simhash.documents USING btree (block{n})",
            )
            for n in range(4)
        ]
        query = to_signed(values[3])
        plans = _nested_plans(
            database_url,
            [
                ("SELECT * FROM simhash.near(%s, 3)", (query,)),
                ("SELECT * FROM simhash.near(%s, 11, 'probe')", (query,)),
                ("SELECT * FROM simhash.near(%s, 7, max_results => 2)", (query,)),
                ("SELECT * FROM simhash.near_many(%s, 3)", ([query, query ^ 1],)),
            ],
        )
        for name in LEAN_INDEXES:
            assert f"Index Scan using {name}" in plans, plans
        assert "Seq Scan on documents" not in plans and "Index Only Scan using ix_documents_block" not in plans, plans
        assert [m.key for m in store.query(values[3], 3)] == ["k3"]


def test_a_lean_store_runs_four16s_functions(database_url):
    """lean keeps the block columns, so near.v3 and near_many.v1 serve it: docs/sql-functions.sql holds them."""
    with Store(database_url) as store, psycopg.connect(_plain(database_url), autocommit=True) as connection:
        store.init()
        four16 = connection.execute(FUNCTIONS).fetchall()
        store.init(layout="lean")
        assert connection.execute(FUNCTIONS).fetchall() == four16


def test_a_lean_store_downgrades_to_four16_and_upgrades_again(empty_database_url):
    engine = create_engine(empty_database_url)
    migrate.upgrade(engine, "0011")
    with Store(empty_database_url) as store:
        rng = np.random.default_rng(27)
        stored, points = _planted(rng, 500, 2)
        # A store of revision 0011 upgrades in place (init) and takes the layout.
        store.init(layout="lean")
        assert migrate.current_revision(engine) == migrate.HEAD_REVISION
        store.add(NewDocument(k, v) for k, v in stored.items())
        expected = [brute_force(stored, p, 9) for p in points]
        assert [[(m.distance, m.key) for m in store.query(p, 9)] for p in points] == expected
    url = _plain(empty_database_url)
    with psycopg.connect(url) as connection:
        checksum = connection.execute(CHECKSUM).fetchone()
    migrate.downgrade(engine, "0011")
    assert _search_indexes(empty_database_url) == BLOCK_INDEXES
    with psycopg.connect(url, autocommit=True) as connection:
        assert connection.execute(CHECKSUM).fetchone() == checksum
        assert connection.execute("SELECT layout FROM simhash.store_info").fetchone() == ("four16",)
        for point, want in zip(points, expected):
            rows = connection.execute("SELECT distance, key FROM simhash.near(%s, 9, 'probe')", (to_signed(point),))
            assert rows.fetchall() == want
        with pytest.raises(psycopg.errors.CheckViolation):  # revision 0011 knows no lean layout
            connection.execute("UPDATE simhash.store_info SET layout = 'lean'")
    migrate.downgrade(engine, "0010")  # and on down, like any four16 store
    migrate.upgrade(engine)
    with Store(empty_database_url) as store:
        assert store.layout == "four16"
        assert [[(m.distance, m.key) for m in store.query(p, 9)] for p in points] == expected
        store.init(layout="lean")
        assert _search_indexes(empty_database_url) == LEAN_INDEXES
        assert [[(m.distance, m.key) for m in store.query(p, 9)] for p in points] == expected
    # At the head revision a downgrade of a four16 (or wide3) store only narrows the check.
    migrate.downgrade(engine, "0011")
    assert _search_indexes(empty_database_url) == BLOCK_INDEXES
    migrate.upgrade(engine)
    with Store(empty_database_url) as store:
        store.init(layout="wide3")
    migrate.downgrade(engine, "0011")
    assert _search_indexes(empty_database_url) == WIDE3_INDEXES
    with psycopg.connect(url) as connection:
        assert connection.execute(CHECKSUM).fetchone() == checksum
    engine.dispose()


@pytest.mark.parametrize("layout", OTHER_LAYOUTS)
def test_objects_planted_on_the_search_path_never_run_in_the_layouts_functions(
    empty_database_url,
    attacker,  # noqa: F811
    layout,
):
    with Store(empty_database_url) as store:
        store.init(layout=layout)
        store.add([NewDocument("a", 0b1011), NewDocument("b", 2**64 - 1)])
    _plant(empty_database_url, attacker)
    with psycopg.connect(_plain(empty_database_url), autocommit=True) as connection:
        for method in ("auto", "probe", "scan"):
            rows = connection.execute("SELECT key, distance FROM simhash.near(%s, 8, %s)", (0b1001, method))
            assert rows.fetchall() == [("a", 1)]
            rows = connection.execute("SELECT query_index, key FROM simhash.near_many(%s, 8, %s)", ([0b1001], method))
            assert rows.fetchall() == [(1, "a")]


def test_a_wide3_store_downgrades_to_four16_and_upgrades_again(empty_database_url):
    engine = create_engine(empty_database_url)
    migrate.upgrade(engine, "0010")
    with Store(empty_database_url) as store:
        rng = np.random.default_rng(25)
        stored, points = _planted(rng, 500, 2)
        # A store of revision 0010 upgrades in place (init) and takes the layout.
        store.init(layout="wide3")
        store.add(NewDocument(k, v) for k, v in stored.items())
        expected = [brute_force(stored, p, 9) for p in points]
        assert [[(m.distance, m.key) for m in store.query(p, 9)] for p in points] == expected
    url = _plain(empty_database_url)
    with psycopg.connect(url) as connection:
        four16_functions = connection.execute(
            "SELECT count(*) FROM pg_proc WHERE proname IN ('near', 'near_many') AND prosrc LIKE '%block0%'"
        ).fetchone()
    assert four16_functions == (0,)
    migrate.downgrade(engine, "0010")
    assert _search_indexes(empty_database_url) == BLOCK_INDEXES
    with psycopg.connect(url, autocommit=True) as connection:
        for point, want in zip(points, expected):
            rows = connection.execute("SELECT distance, key FROM simhash.near(%s, 9, 'probe')", (to_signed(point),))
            assert rows.fetchall() == want
        assert connection.execute("SELECT to_regclass('simhash.wide_masks')").fetchone() == (None,)
    migrate.upgrade(engine)
    with Store(empty_database_url) as store:
        assert store.layout == "four16"
        assert [[(m.distance, m.key) for m in store.query(p, 9)] for p in points] == expected
    engine.dispose()


def test_wide_masks_hold_every_mask_of_up_to_five_bits(database_url):
    with psycopg.connect(_plain(database_url)) as connection:
        rows = connection.execute(
            "SELECT weight, count(*), bool_and(bit_count(mask::bit(22)) = weight), max(mask) < 4194304 "
            "FROM simhash.wide_masks GROUP BY weight ORDER BY weight"
        ).fetchall()
    from math import comb

    assert rows == [(w, comb(22, w), True, True) for w in range(6)]


def test_the_functions_a_wide3_store_runs_are_the_checked_in_snapshot(wide3):
    """docs/sql-functions.wide3.sql shows every function a wide3 store runs (regenerated here when it changes)."""
    import sql_snapshot  # tests/sql_snapshot.py

    with psycopg.connect(_plain(wide3.engine.url)) as connection:
        rendered = sql_snapshot.render(
            connection, migrate.HEAD_REVISION, "tests/test_layouts.py", where=" of layout wide3 (init --layout wide3)"
        )
    sql_snapshot.check("sql-functions.wide3.sql", rendered)
