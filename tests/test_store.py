"""The PostgreSQL store against brute force, on every backend that is switched on."""

from __future__ import annotations

import io
import tracemalloc

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from simhash_store import SchemeMismatchError, fingerprint, get_scheme, to_signed
from simhash_store.errors import InvalidFingerprintError, InvalidKeyError, InvalidValueError, SchemeError
from simhash_store.scheme import DEFAULT_MAX_DISTANCE
from simhash_store.store import MAX_KEY_BYTES, NewDocument, Pair, RemoveResult, Store

U64 = st.integers(min_value=0, max_value=2**64 - 1)
DB_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def flip(value: int, positions) -> int:
    for p in positions:
        value ^= 1 << p
    return value


def brute_force(stored: dict[str, int], query: int, k: int) -> list[tuple[int, str]]:
    return sorted(
        ((value ^ query).bit_count(), key) for key, value in stored.items() if (value ^ query).bit_count() <= k
    )


def reset(store: Store, stored: dict[str, int]) -> None:
    with store.engine.begin() as connection:
        connection.execute(text("TRUNCATE simhash.documents CASCADE"))  # and the segments that reference it
    store.add(NewDocument(key, value) for key, value in stored.items())


@st.composite
def planted(draw):
    """A query, and stored fingerprints at every distance 0..64 from it, differences placed in each block."""
    query = draw(U64)
    stored = {}
    for index in range(draw(st.integers(0, 30))):
        stored[f"random-{index}"] = draw(U64)
    for distance in draw(st.lists(st.integers(0, 64), max_size=20)):
        # Put the flipped bits in a chosen block first, then anywhere.
        block = draw(st.integers(0, 3))
        block_bits = list(range(48 - 16 * block, 64 - 16 * block))
        others = [b for b in range(64) if b not in block_bits]
        ordered = draw(st.permutations(block_bits)) + draw(st.permutations(others))
        stored[f"at-{distance}-b{block}-{len(stored)}"] = flip(query, ordered[:distance])
    stored["identical"] = query if draw(st.booleans()) else draw(U64)
    return query, stored


@DB_SETTINGS
@given(case=planted(), k=st.integers(0, 64), method=st.sampled_from(["auto", "probe", "scan"]))
def test_query_equals_brute_force(store, case, k, method):
    query, stored = case
    reset(store, stored)
    found = store.query(query, k, method=method)
    assert [(m.distance, m.key) for m in found] == brute_force(stored, query, k)
    assert all(m.fingerprint == stored[m.key] for m in found)


@DB_SETTINGS
@given(case=planted(), k=st.integers(0, 16))
def test_query_many_equals_single_queries(store, case, k):
    query, stored = case
    reset(store, stored)
    queries = [query, *list(stored.values())[:5], 0, 2**64 - 1]
    batched = store.query_many(queries, k)
    assert [[(m.distance, m.key) for m in result] for result in batched] == [brute_force(stored, q, k) for q in queries]


def test_sql_near_is_exact_for_every_distance(store):
    rng = np.random.default_rng(7)
    query = int(rng.integers(0, 2**64 - 1, dtype=np.uint64))
    stored = {f"d{d}": flip(query, rng.choice(64, d, replace=False).tolist()) for d in range(65)}
    store.add(NewDocument(k, v) for k, v in stored.items())
    with store.engine.connect() as connection:
        for k in range(65):
            rows = connection.execute(
                text("SELECT key, distance FROM simhash.near(:q, :k)"), {"q": to_signed(query), "k": k}
            ).all()
            assert [(r.distance, r.key) for r in rows] == brute_force(stored, query, k)
        # The SQL default is the project's default max distance.
        default = connection.execute(text("SELECT count(*) FROM simhash.near(:q)"), {"q": to_signed(query)}).scalar()
        assert default == len(brute_force(stored, query, DEFAULT_MAX_DISTANCE))
        assert connection.execute(text("SELECT simhash.distance(0, -1)")).scalar() == 64


def test_application_inserting_plain_sql_is_indexed(store):
    value = 0xFEDCBA9876543210
    with store.engine.begin() as connection:
        connection.execute(
            text("INSERT INTO simhash.documents (key, fingerprint) VALUES ('from-sql', :f)"), {"f": to_signed(value)}
        )
        blocks = connection.execute(
            text("SELECT block0, block1, block2, block3 FROM simhash.documents WHERE key = 'from-sql'")
        ).one()
    assert tuple(blocks) == (0xFEDC, 0xBA98, 0x7654, 0x3210)
    assert [m.key for m in store.query(value ^ 0b111, 3, method="probe")] == ["from-sql"]


def test_add_is_idempotent_and_updates_changed_documents(store):
    first = store.add([NewDocument("a", 1, b"x"), NewDocument("b", 2, b"y")])
    assert (first.added, first.updated, first.unchanged) == (2, 0, 0)
    again = store.add([NewDocument("a", 1, b"x"), NewDocument("b", 3, b"z")])
    assert (again.added, again.updated, again.unchanged) == (0, 1, 1)
    assert store.get("b").fingerprint == 3 and store.get("b").digest == b"z"
    assert store.count() == 2


def test_repeated_key_in_one_batch_keeps_the_last(store):
    result = store.add([NewDocument("a", 1), NewDocument("a", 2)])
    assert (result.added, result.unchanged) == (1, 1)
    assert store.get("a").fingerprint == 2


def _block_indexes(store: Store) -> list[str]:
    with store.engine.connect() as connection:
        return list(
            connection.execute(
                text(
                    "SELECT indexdef FROM pg_indexes WHERE schemaname = 'simhash' AND tablename = 'documents' "
                    "AND indexname LIKE 'ix_documents_block_' ORDER BY indexname"
                )
            ).scalars()
        )


def test_bulk_load_equals_add_and_rebuilds_the_same_indexes(store):
    indexes = _block_indexes(store)
    assert len(indexes) == 4
    rng = np.random.default_rng(7)
    stored = {f"k{i}": int(v) for i, v in enumerate(rng.integers(0, 2**64, size=3000, dtype=np.uint64))}
    query = next(iter(stored.values()))
    stored["near"] = flip(query, [1, 20, 40])
    store.add([NewDocument("k0", 5), NewDocument("k1", stored["k1"]), NewDocument("kept", 9)])
    result = store.load(NewDocument(key, value) for key, value in stored.items())
    # k0 changed, k1 unchanged, "kept" untouched, the rest new.
    assert (result.added, result.updated, result.unchanged) == (len(stored) - 2, 1, 1)
    assert _block_indexes(store) == indexes
    stored["kept"] = 9
    for k in (0, 3, 11):
        expected = brute_force(stored, query, k)
        assert [(m.distance, m.key) for m in store.query(query, k, method="probe")] == expected


def test_bulk_load_keeps_the_last_of_repeated_keys(store):
    result = store.load([NewDocument("a", 1), NewDocument("b", 2), NewDocument("a", 3), NewDocument("a", 4)])
    assert (result.added, result.unchanged) == (2, 2)
    assert store.get("a").fingerprint == 4 and store.count() == 2
    assert [m.key for m in store.query(4, 0, method="probe")] == ["a"]


def test_bulk_load_into_an_empty_store_leaves_no_schema_drift(store, database_url):
    store.load(NewDocument(f"k{i}", i * 7919) for i in range(100))
    _check_no_drift(database_url)  # the constraints and indexes rebuilt are the models'


@pytest.mark.parametrize("stored_before", [0, 1], ids=["into-empty", "into-nonempty"])
def test_interrupted_bulk_load_stores_nothing_and_keeps_the_indexes(store, stored_before):
    store.add([NewDocument("before", 1)][:stored_before])
    indexes = _block_indexes(store)

    def documents():
        yield NewDocument("fine", 2)
        yield NewDocument("bad\x00key", 3)

    with pytest.raises(InvalidKeyError):
        store.load(documents())
    assert store.count() == stored_before and store.get("fine") is None
    assert _block_indexes(store) == indexes
    store.add([NewDocument("after", 1)])  # the key constraint is back: a repeated key updates
    store.add([NewDocument("after", 2)])
    assert store.count() == stored_before + 1 and store.get("after").fingerprint == 2


def test_remove_get_count(store):
    store.add([NewDocument("a", 1, metadata={"url": "https://例子.cn"}), NewDocument("b", 2)])
    assert store.get("a").metadata == {"url": "https://例子.cn"}
    assert store.remove(["a", "missing"]) == RemoveResult(removed=["a"], missing=["missing"])
    assert store.get("a") is None
    assert store.count() == 1


def test_remove_of_one_string_removes_that_key_only(store):
    store.add(NewDocument(key, i) for i, key in enumerate(["abc", "a", "b", "c"]))
    assert store.remove("abc").removed == ["abc"]
    assert sorted(m.key for m in store.query(0, 64)) == ["a", "b", "c"]
    with pytest.raises(InvalidKeyError):
        store.remove(["b", "bad\x00key"])
    assert store.count() == 3  # a bad key refuses the whole call before anything is deleted


@pytest.mark.parametrize(
    "key, message",
    [
        ("a\x00b", "NUL"),
        ("x" * (MAX_KEY_BYTES + 1), "bytes long"),
        ("\ud800", "lone surrogate"),
        ("", "non-empty"),
    ],
)
def test_bad_keys_are_refused_and_nothing_is_written(store, key, message):
    with pytest.raises(InvalidKeyError, match=message):
        store.add([NewDocument("fine", 1), NewDocument(key, 2)])
    assert store.count() == 0


def test_awkward_keys_are_stored_faithfully(store):
    keys = [
        "it's",
        'say "hi"',
        "a;DROP TABLE simhash.documents;--",
        "back\\slash",
        "new\nline",
        "中文/路径.txt",
        "x" * MAX_KEY_BYTES,
    ]
    store.add(NewDocument(k, i) for i, k in enumerate(keys))
    assert sorted(m.key for m in store.query(0, 64)) == sorted(keys)


def test_bad_fingerprints_are_refused(store):
    with pytest.raises(InvalidFingerprintError):
        store.add([NewDocument("a", 2**64)])
    with pytest.raises(InvalidFingerprintError):
        store.add([NewDocument("a", -1)])
    with pytest.raises(InvalidFingerprintError):
        store.query(0, 65)


def test_scheme_is_recorded_and_another_is_refused(database_url):
    with Store(database_url) as store:
        store.add([NewDocument("a", fingerprint("今天天气很好"))])
        recorded = store.scheme
    with Store(database_url, scheme=recorded.name) as same:
        assert same.count() == 1
    other = next(s for s in ("classic-tfidf-top50", "zh-rjieba-v1") if get_scheme(s) != recorded)
    with Store(database_url, scheme=other) as mismatched:
        with pytest.raises(SchemeMismatchError, match="created with scheme"):
            mismatched.add([NewDocument("b", 1)])
        with pytest.raises(SchemeMismatchError):
            mismatched.query(1)
    with Store(database_url) as store:
        assert store.count() == 1  # nothing written by the refused writer


def test_store_refuses_other_widths():
    narrow = get_scheme("zh-jieba-v1").__class__(name="narrow", bits=32, hash="xxh32")
    with pytest.raises(SchemeError, match="64-bit"):
        Store("postgresql://localhost/none", scheme=narrow)


def test_pairs_and_clusters_equal_brute_force(store):
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**64 - 1, size=300, dtype=np.uint64).tolist()
    stored = {f"r{i}": int(v) for i, v in enumerate(base)}
    for i in range(60):
        stored[f"n{i}"] = flip(int(base[i % 20]), rng.choice(64, int(rng.integers(0, 8)), replace=False).tolist())
    store.add(NewDocument(k, v) for k, v in stored.items())
    keys = sorted(stored)
    for k in (0, 3, 6):
        expected = sorted(
            (min(a, b), max(a, b), (stored[a] ^ stored[b]).bit_count())
            for i, a in enumerate(keys)
            for b in keys[i + 1 :]
            if (stored[a] ^ stored[b]).bit_count() <= k
        )
        assert sorted((p.a, p.b, p.distance) for p in store.pairs(k)) == expected
    clusters = store.clusters(3)
    in_clusters = {key for cluster in clusters for key in cluster}
    linked = {key for pair in store.pairs(3) for key in (pair.a, pair.b)}
    assert in_clusters == linked
    for cluster in clusters:
        for key in cluster:
            # Every member is linked to some other member of its own cluster.
            assert any((stored[key] ^ stored[o]).bit_count() <= 3 for o in cluster if o != key)


def test_near_duplicates_reports_identical_fingerprints_as_groups_not_pairs(store):
    # 2,000 copies of one fingerprint and 2,000 of another one bit away: 4,000,000+ pairs as pairs.
    twin = 0x0123456789ABCDEF
    store.load(
        [NewDocument(f"a{i:04}", twin) for i in range(2000)]
        + [NewDocument(f"b{i:04}", twin ^ 1) for i in range(2000)]
        + [NewDocument("alone", ~twin & (2**64 - 1)), NewDocument("near-alone", ~twin & (2**64 - 1) ^ 0b111)]
    )
    found = store.near_duplicates(3)
    assert [type(item).__name__ for item in found] == ["IdenticalGroup", "IdenticalGroup", "Pair", "Pair"]
    assert found[0].keys == [f"a{i:04}" for i in range(2000)] and found[1].keys[0] == "b0000"
    assert [(p.a, p.b, p.distance) for p in found[2:]] == [("a0000", "b0000", 1), ("alone", "near-alone", 3)]


def test_near_duplicates_as_an_iterator_hold_a_few_dozen_bytes_a_pair_not_a_python_object(store):
    # 800 distinct fingerprints two bits from one value: every two within 4 bits, 319,600 pairs
    # (a store of one template with a few words each). As a list, each pair was a Python object,
    # about 150 bytes at the peak; `dups` printed 16.7 million of them from a 4.2 GB process.
    base = 0x0123456789ABCDEF
    values = sorted({base ^ (1 << i) ^ (1 << j) for i in range(64) for j in range(i + 1, 64)})[:800]
    store.load([NewDocument(f"d{i:04}", value) for i, value in enumerate(values)])
    tracemalloc.start()
    try:
        found = store.iter_near_duplicates(4)
        assert not isinstance(found, list)
        count = previous = 0
        for item in found:
            assert isinstance(item, Pair) and (item.distance, item.a, item.b) >= (previous, "", "")
            previous = item.distance
            count += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 800 * 799 // 2
    assert peak < 100 * count, f"{peak / count:.0f} bytes a pair at the peak"
    assert list(store.iter_near_duplicates(2))[:3] == store.near_duplicates(2)[:3]


def test_near_duplicates_and_pairs_read_one_snapshot_while_rows_are_deleted(store, monkeypatch):
    values = {f"k{i}": (i // 2) * 0x9E3779B97F4A7C15 % 2**64 for i in range(40)}  # twenty identical pairs
    store.add(NewDocument(k, v) for k, v in values.items())
    original = Store._keys_of

    def delete_then_look_up(raw, ids):
        with psycopg.connect(
            store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False), autocommit=True
        ) as other:  # another application deletes half, and commits
            other.execute("DELETE FROM simhash.documents WHERE key LIKE 'k1%'")
        return original(raw, ids)

    monkeypatch.setattr(Store, "_keys_of", staticmethod(delete_then_look_up))
    groups = store.near_duplicates(0)
    assert sorted(tuple(g.keys) for g in groups) == sorted(
        tuple(sorted(k for k in values if values[k] == v)) for v in set(values.values())
    )
    store.add(NewDocument(k, v) for k, v in values.items())
    assert len(store.pairs(0)) == 20
    assert store.count() < 40  # the other application's deletes did happen


def test_metadata_and_integers_the_columns_cannot_hold_are_refused_before_writing(store):
    for document, message in [
        (NewDocument("a", 1, metadata={"score": float("nan")}), "document 'a': metadata value at score is NaN"),
        (NewDocument("a", 1, metadata={"t": "x\x00y"}), "NUL"),
        (NewDocument("a", 1, metadata={"t": "\udc80"}), "lone surrogate"),
        (NewDocument("a", 1, length=2**31), "length of 'a' must lie in"),
        (NewDocument("a", 1, length=-1), "length of 'a' must lie in"),
        (NewDocument("a", 1, stamp="1:\x00"), "NUL"),
    ]:
        for write in (store.add, store.load):
            with pytest.raises(InvalidValueError, match=message):
                write([NewDocument("fine", 2), document])
    assert store.count() == 0
    for call in (
        lambda: store.query(1, 3, limit=2**63),
        lambda: store.add([], batch_size=2**31),
        lambda: store.stats(10**6),
    ):
        with pytest.raises(InvalidValueError, match="must lie in"):
            call()


def test_skip_near_duplicates_within_a_call_and_against_the_store(store):
    store.add([NewDocument("old", 0)])
    result = store.add(
        [NewDocument("near-old", 0b11), NewDocument("fresh", 2**64 - 1), NewDocument("a-near-fresh", 2**64 - 2)],
        skip_near_duplicates=True,
        max_distance=3,
    )
    assert result.added == 1
    assert {(s.key, s.match.key) for s in result.near_duplicates} == {("near-old", "old"), ("a-near-fresh", "fresh")}
    assert sorted(m.key for m in store.query(0, 64)) == ["fresh", "old"]


def test_unreachable_database_is_one_clear_error():
    from simhash_store import DatabaseUnavailableError

    with Store("postgresql://nobody:secret@127.0.0.1:9/none?connect_timeout=2") as store:
        with pytest.raises(DatabaseUnavailableError) as caught:
            store.count()
    assert "secret" not in str(caught.value)
    assert "127.0.0.1" in str(caught.value)


def test_migrations_round_trip_on_an_empty_database(empty_database_url):
    from simhash_store import migrate

    engine = create_engine(empty_database_url)
    try:
        assert migrate.current_revision(engine) is None
        migrate.upgrade(engine)
        assert migrate.current_revision(engine) == migrate.head_revision()
        migrate.downgrade(engine, "base")
        with engine.connect() as connection:
            assert connection.execute(text("SELECT to_regclass('simhash.documents')")).scalar() is None
        migrate.upgrade(engine)
        assert migrate.current_revision(engine) == migrate.head_revision()
    finally:
        engine.dispose()


def test_head_revision_constant_is_alembics_head():
    from simhash_store import migrate

    assert migrate.HEAD_REVISION == migrate.head_revision()


def test_alembic_check_finds_no_drift(database_url):
    _check_no_drift(database_url)


def _check_no_drift(database_url) -> None:
    from alembic import command
    from alembic.config import Config

    from simhash_store import migrate

    engine = create_engine(database_url)
    # A config of its own: the library's cached one writes to the stdout of whichever test made it.
    config = Config(stdout=io.StringIO())
    config.set_main_option("script_location", migrate.alembic_config().get_main_option("script_location"))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.check(config)  # raises if models and migrations disagree
    finally:
        config.attributes.pop("connection", None)
        engine.dispose()


@pytest.mark.parametrize("ping_after_idle", [0.0, 3600.0])
def test_queries_survive_pooled_connections_killed_by_the_server(store, monkeypatch, ping_after_idle):
    # Pinged on checkout (idle) or retried on a fresh connection (in steady use): either way no error.
    from simhash_store.store import connection as store_module

    monkeypatch.setattr(store_module, "PING_AFTER_IDLE_SECONDS", ping_after_idle)
    store.add([NewDocument("a", 0b1011)])
    assert [m.key for m in store.query(0b1001, 3)] == ["a"]
    outside = create_engine(store.engine.url, poolclass=NullPool)  # not one of the store's pooled connections
    with outside.connect() as connection:
        killed = connection.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).scalar()
    outside.dispose()
    assert killed >= 1
    assert [m.key for m in store.query(0b1001, 3)] == ["a"]
    assert [[m.key for m in found] for found in store.query_many([0b1001, 0], 3)] == [["a"], ["a"]]
