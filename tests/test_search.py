"""The SQL search surface: simhash.near, simhash.near_many and the Store methods on them.

Every answer equals brute force for every k (both methods, with max_results), the probe
statements keep their index path when the table has no statistics, and objects another
role plants on the caller's search_path never run inside our functions.
"""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, select, text

from simhash_store import migrate, to_signed
from simhash_store.sqlalchemy_search import near, near_many
from simhash_store.store import NewDocument, Store

U64 = st.integers(min_value=0, max_value=2**64 - 1)
DB_SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def _plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def brute_force(stored: dict[str, int], query: int, k: int) -> list[tuple[int, str]]:
    return sorted(
        ((value ^ query).bit_count(), key) for key, value in stored.items() if (value ^ query).bit_count() <= k
    )


@st.composite
def clustered(draw):
    """A few centres, each with neighbours at spread distances (flips placed block by block), and queries near them."""
    stored: dict[str, int] = {}
    centres = draw(st.lists(U64, min_size=1, max_size=4))
    for c, centre in enumerate(centres):
        stored[f"c{c}"] = centre
        for n, distance in enumerate(draw(st.lists(st.integers(0, 64), max_size=12))):
            block = draw(st.integers(0, 3))
            block_bits = list(range(48 - 16 * block, 64 - 16 * block))
            bits = draw(st.permutations(block_bits)) + draw(
                st.permutations([b for b in range(64) if b not in block_bits])
            )
            value = centre
            for bit in bits[:distance]:
                value ^= 1 << bit
            stored[f"c{c}-n{n}-d{distance}"] = value
    queries = [centres[0], draw(U64), *(draw(st.sampled_from(list(stored.values()))) for _ in range(2))]
    return stored, queries


def _fill(store: Store, stored: dict[str, int]) -> None:
    with store.engine.begin() as connection:
        connection.execute(text("TRUNCATE simhash.documents CASCADE"))  # and the segments that reference it
    store.add(NewDocument(key, value) for key, value in stored.items())


@DB_SETTINGS
@given(
    case=clustered(),
    k=st.integers(0, 64),
    method=st.sampled_from(["auto", "probe", "scan"]),
    limit=st.sampled_from([None, 1, 3]),
)
def test_store_query_and_query_many_equal_brute_force(store, case, k, method, limit):
    stored, queries = case
    _fill(store, stored)
    expected = [brute_force(stored, q, k)[:limit] for q in queries]
    assert [[(m.distance, m.key) for m in store.query(q, k, method=method, limit=limit)] for q in queries] == expected
    many = store.query_many(queries, k, method=method, limit=limit)
    assert [[(m.distance, m.key) for m in found] for found in many] == expected
    assert all(m.fingerprint == stored[m.key] for found in many for m in found)


def test_sql_near_and_near_many_are_exact_for_every_distance(store):
    """k = 0..64, both methods, SQL called directly as other applications do, with and without max_results."""
    rng = np.random.default_rng(11)
    centre = int(rng.integers(0, 2**64, dtype=np.uint64))
    stored = {f"r{i}": int(v) for i, v in enumerate(rng.integers(0, 2**64, size=40, dtype=np.uint64))}
    for d in range(65):
        value = centre
        for bit in rng.choice(64, d, replace=False).tolist():
            value ^= 1 << bit
        stored[f"d{d}"] = value
    store.add(NewDocument(k, v) for k, v in stored.items())
    queries = [centre, stored["d5"], int(rng.integers(0, 2**64, dtype=np.uint64))]
    signed = [to_signed(q) for q in queries]
    with psycopg.connect(_plain(store.engine.url), autocommit=True) as connection:
        for k in range(65):
            # Beyond k = 16 a probe reads thousands of index values per block (a whole block index
            # from k = 28); a few of those are enough (the property test above draws others).
            methods = ("auto", "scan", "probe") if k <= 16 or k in (20, 64) else ("auto", "scan")
            for method in methods:
                expected = [brute_force(stored, q, k) for q in queries]
                for s, want in zip(signed, expected):
                    rows = connection.execute(
                        "SELECT distance, key FROM simhash.near(%s, %s, %s)", (s, k, method)
                    ).fetchall()
                    assert rows == want, (k, method)
                    limited = connection.execute(
                        "SELECT distance, key FROM simhash.near(%s, %s, %s, max_results => 2)", (s, k, method)
                    ).fetchall()
                    assert limited == want[:2], (k, method)
                rows = connection.execute(
                    "SELECT query_index, distance, key FROM simhash.near_many(%s, %s, %s)", (signed, k, method)
                ).fetchall()
                assert rows == [(i + 1, d, key) for i, want in enumerate(expected) for d, key in want], (k, method)
        # The three-argument call other applications make keeps working, and NULLs give nothing.
        assert connection.execute("SELECT count(*) FROM simhash.near(%s, 3, 'auto')", (signed[0],)).fetchone() == (4,)
        assert connection.execute("SELECT count(*) FROM simhash.near(NULL)").fetchone() == (0,)
        rows = connection.execute(
            "SELECT query_index FROM simhash.near_many(ARRAY[NULL, %s]::bigint[], 0)", (signed[0],)
        )
        assert rows.fetchall() == [(2,)]
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="max_results"):
            connection.execute("SELECT * FROM simhash.near(0, 3, max_results => 0)")


def test_sqlalchemy_constructs_compose(store):
    store.add([NewDocument("a", 0b1011), NewDocument("b", 0b1000), NewDocument("c", 2**64 - 1)])
    found = near(0b1001, max_distance=3)
    statement = select(found.c.key, found.c.distance).where(found.c.key != "b").order_by(found.c.distance)
    with store.engine.connect() as connection:
        assert connection.execute(statement).all() == [("a", 1)]
        nearest = near(2**64 - 2, max_distance=64, max_results=1)
        assert connection.execute(select(nearest.c.key)).scalars().all() == ["c"]
        batch = near_many([0b1001, 2**64 - 1], max_distance=1)
        rows = connection.execute(select(batch.c.query_index, batch.c.key).order_by(batch.c.query_index)).all()
        assert rows == [(1, "a"), (1, "b"), (2, "c")]


# ------------------------------------------------------------------ plans without statistics

AUTO_EXPLAIN = {
    "auto_explain.log_min_duration": "0",
    "auto_explain.log_nested_statements": "on",
    "auto_explain.log_level": "notice",
    "client_min_messages": "notice",
}


def _nested_plans(url, statements: list[tuple[str, tuple]]) -> str:
    """The plans of every statement run inside the functions called (auto_explain, nested statements)."""
    notices: list[str] = []
    with psycopg.connect(_plain(url), autocommit=True) as connection:
        connection.execute("LOAD 'auto_explain'")
        for name, value in AUTO_EXPLAIN.items():
            connection.execute(f"SET {name} = '{value}'")
        connection.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
        for statement, parameters in statements:
            connection.execute(statement, parameters).fetchall()
    return "\n".join(notices)


def _copy_without_statistics(url, count: int) -> np.ndarray:
    """Rows COPYed in by another application: no library call, no ANALYZE (autovacuum off for the table)."""
    values = np.random.default_rng(5).integers(0, 2**64, size=count, dtype=np.uint64)
    with psycopg.connect(_plain(url), autocommit=True) as connection:
        connection.execute("ALTER TABLE simhash.documents SET (autovacuum_enabled = off)")
        with connection.cursor() as cursor:
            with cursor.copy("COPY simhash.documents (key, fingerprint) FROM STDIN") as copy:
                for i, value in enumerate(values.view(np.int64).tolist()):
                    copy.write_row((f"k{i}", value))
        assert connection.execute(
            "SELECT count(*) FROM pg_stats WHERE schemaname = 'simhash' AND tablename = 'documents'"
        ).fetchone() == (0,)
    return values


def _probe_plans_use_the_block_indexes(plans: str) -> bool:
    return (
        "Index Only Scan using ix_documents_block0" in plans
        and "Seq Scan on documents" not in plans
        and "Bitmap Heap Scan on documents" not in plans
    )


@pytest.mark.parametrize("revision", ["0002", "head"])
def test_near_probes_the_block_indexes_without_statistics(empty_database_url, revision):
    # At 0002 (before the planner settings) the same load gives a sequential or bitmap plan:
    # the check below is what would catch it.
    engine = create_engine(empty_database_url)
    migrate.upgrade(engine, revision)
    engine.dispose()
    values = _copy_without_statistics(empty_database_url, 20_000)
    query = to_signed(int(values[7]))
    statements = [(f"SELECT * FROM simhash.near(%s, {k})", (query,)) for k in (3, 7, 11)]
    if revision == "head":
        statements.append(("SELECT * FROM simhash.near_many(%s, 3)", ([query, query ^ 1],)))
    plans = _nested_plans(empty_database_url, statements)
    assert _probe_plans_use_the_block_indexes(plans) == (revision == "head"), plans


def test_store_load_leaves_probe_plans_on_the_block_indexes(store):
    values = np.random.default_rng(6).integers(0, 2**64, size=20_000, dtype=np.uint64).tolist()
    store.load(NewDocument(f"k{i}", v) for i, v in enumerate(values))
    plans = _nested_plans(
        store.engine.url,
        [
            ("SELECT * FROM simhash.near(%s, 3)", (to_signed(values[3]),)),
            ("SELECT * FROM simhash.near(%s, 11)", (to_signed(values[3]),)),
        ],
    )
    assert _probe_plans_use_the_block_indexes(plans), plans


# ------------------------------------------------------------------ hostile search_path

ATTACK = """
CREATE TABLE IF NOT EXISTS public.marker (x int);
CREATE FUNCTION public.evil_and(a bigint, b integer) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'attacker code ran as %', current_user; END $$;
CREATE OPERATOR public.& (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = public.evil_and);
CREATE FUNCTION public.evil_xor(a bigint, b bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'attacker code ran as %', current_user; END $$;
CREATE OPERATOR public.# (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.evil_xor);
CREATE FUNCTION public.bit_count(bit) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'attacker code ran as %', current_user; END $$;
"""


@pytest.fixture
def attacker(empty_database_url, make_role):
    """A role that may create objects in public (as in many databases, and everywhere before PostgreSQL 15)."""
    return make_role(
        empty_database_url, "GRANT CREATE, USAGE ON SCHEMA public TO {role}", prefix="simhash_attacker", login=False
    )


def _plant(url, role: str) -> None:
    with psycopg.connect(_plain(url), autocommit=True) as connection:
        connection.execute(f'SET ROLE "{role}"')
        connection.execute(ATTACK)
        connection.execute("RESET ROLE")
        # The victims' sessions look in public before pg_catalog: the attacker's #, bit_count and & win there.
        database = connection.execute("SELECT current_database()").fetchone()[0]
        connection.execute(f'ALTER DATABASE "{database}" SET search_path = public, pg_catalog')


@pytest.mark.parametrize("revision", ["0001", "head"])
def test_objects_planted_on_the_search_path_never_run_in_our_functions(empty_database_url, attacker, revision):
    engine = create_engine(empty_database_url)
    migrate.upgrade(engine, revision)
    engine.dispose()
    stored = {"a": 0b1011, "b": 2**64 - 1, "c": 0x00FF_0000_0000_0001}
    with psycopg.connect(_plain(empty_database_url), autocommit=True) as connection:
        for key, value in stored.items():
            connection.execute(
                "INSERT INTO simhash.documents (key, fingerprint) VALUES (%s, %s)", (key, to_signed(value))
            )
    _plant(empty_database_url, attacker)
    calls = [
        ("SELECT key, distance FROM simhash.near(%s, 3)", (0b1001,), [("a", 1)]),
        ("SELECT key, distance FROM simhash.near(%s, 8, 'probe')", (0b1001,), [("a", 1)]),
        ("SELECT key, distance FROM simhash.near(%s, 8, 'scan')", (0b1001,), [("a", 1)]),
        ("SELECT simhash.distance(fingerprint, %s) FROM simhash.documents WHERE key = 'b'", (0,), [(64,)]),
    ]
    if revision == "head":
        calls.append(("SELECT query_index, key FROM simhash.near_many(%s, 3)", ([0b1001, -1],), [(1, "a"), (2, "b")]))
    with psycopg.connect(_plain(empty_database_url), autocommit=True) as connection:
        assert connection.execute("SHOW search_path").fetchone() == ("public, pg_catalog",)
        for statement, parameters, expected in calls:
            if revision == "0001":  # the attack is real: it runs against the first release's functions
                with pytest.raises(psycopg.errors.RaiseException, match="attacker code ran"):
                    connection.execute(statement, parameters).fetchall()
            else:
                assert connection.execute(statement, parameters).fetchall() == expected, statement
    if revision == "head":
        with Store(empty_database_url) as store:
            assert [(m.key, m.distance) for m in store.query(0b1001, 3)] == [("a", 1)]
            assert [[m.key for m in found] for found in store.query_many([0b1001, 2**64 - 1], 3)] == [["a"], ["b"]]


def test_every_function_pins_its_search_path_or_binds_names_when_created(database_url):
    engine = create_engine(database_url)
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT p.proname, p.proconfig, p.prosqlbody IS NOT NULL AS bound FROM pg_proc p "
                "WHERE p.pronamespace = 'simhash'::regnamespace ORDER BY 1"
            )
        ).all()
    engine.dispose()
    assert {r.proname for r in rows} >= {"near", "near_many", "distance"}
    for row in rows:
        pinned = any(setting == "search_path=pg_catalog, pg_temp" for setting in row.proconfig or [])
        # distance: an SQL-standard body (names bound at creation) so that it is still inlined.
        assert pinned or row.bound, row.proname


def test_generalised_pigeonhole_radii_cover_every_k_with_the_fewest_probes():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "migrations" / "versions" / "0004_near_v2.py"
    spec = importlib.util.spec_from_file_location("revision_0004", path)
    revision = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(revision)
    table = revision.cheapest_thresholds()
    probes = [sum(revision.PROBES[r] for r in radii) for radii in table]
    for k, radii in enumerate(table):
        assert sum(radii) >= k - 3 and all(-1 <= r <= 16 for r in radii), k  # some block is within its radius
    # The figures the README quotes; plain pigeonhole (k // 4 everywhere) needed 548 for k = 8..11.
    assert probes[:12] == [1, 2, 3, 4, 20, 36, 52, 68, 188, 308, 428, 548]
