"""Persistent clusters: leader clustering, stable ids, SQL access, recluster, concurrent writers."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from simhash_store import clusters, migrate
from simhash_store.cli import app
from simhash_store.clusters import leaders
from simhash_store.leaders import sequential_leaders
from simhash_store.scheme import DEFAULT
from simhash_store.store import NewDocument, Store


def _plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _bits(n: int, start: int = 0) -> int:
    """A fingerprint with bits start .. start + n - 1 set."""
    return ((1 << n) - 1) << start


def _clusters(url) -> dict[str, int | None]:
    with psycopg.connect(_plain(url)) as connection:
        return dict(connection.execute("SELECT key, cluster FROM simhash.documents").fetchall())


def _brute_force_leaders(values: list[int], k: int) -> list[int]:
    representative = []
    leaders_so_far: list[int] = []
    for position, value in enumerate(values):
        near = [(bin(values[p] ^ value).count("1"), p) for p in leaders_so_far]
        near = [item for item in near if item[0] <= k]
        if near:
            representative.append(min(near)[1])
        else:
            leaders_so_far.append(position)
            representative.append(position)
    return representative


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0, 1, 3, 7, 0xFF, 0xFFF0, 1 << 63, (1 << 64) - 1, 0x0F0F, 0x8001]), max_size=40)
    | st.lists(st.integers(0, 2**64 - 1), max_size=40),
    st.integers(0, 16),
)
def test_leader_clustering_equals_the_definition(values, k):
    assert leaders(np.array(values, dtype=np.uint64), k).tolist() == _brute_force_leaders(values, k)


def test_leaders_of_many_identical_fingerprints_do_not_pair_every_copy_with_every_copy():
    # recluster of 10,000 stored copies of one text took 4.4 GB and 19.5 s (every pair of copies
    # materialised): 20,000 copies need 200 million pairs, far past 2 GB of address space.
    script = (
        "import resource, numpy as np\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
        "from simhash_store.clusters import leaders\n"
        "values = np.full(20000, 0x0123456789ABCDEF, dtype=np.uint64)\n"
        "values[10000:] ^= np.uint64(1)\n"  # a second value, near the first: pairs between groups too
        "result = leaders(values, 11)\n"
        "print(int(result.max()), len(set(result.tolist())))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "1"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0, 1, 3, 7, 0xFF, 0xFFF0, 1 << 63, (1 << 64) - 1, 0x0F0F, 0x8001]), max_size=60)
    | st.lists(st.integers(0, 2**64 - 1), max_size=60),
    st.integers(0, 16),
    st.integers(1, 9),
    st.integers(1, 9),
)
def test_leaders_searching_the_representatives_alone_equal_the_definition(values, k, batch, recent):
    # Small batches and levels, so that every part of the search (levels merged, the newest
    # representatives, pairs inside a batch) decides some of the values.
    found = sequential_leaders(np.array(values, dtype=np.uint64), k, batch=batch, recent=recent)
    assert found.tolist() == _brute_force_leaders(values, k)


def test_leaders_of_many_distinct_near_fingerprints_search_the_representatives_alone():
    # One template, a few bits of its own in each copy: 10,000 such documents are about 50
    # million pairs within 11 bits, and recluster (and dedup's decisions in memory) held them
    # all: 133 s and 7.9 GB. Past a bound of pairs, the representatives alone are searched.
    script = (
        "import resource, numpy as np\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
        "from simhash_store.clusters import leaders, leaders_with_copies\n"
        "rng = np.random.default_rng(7)\n"
        "values = np.full(12000, 0x0123456789ABCDEF, dtype=np.uint64)\n"
        "for _ in range(5):\n"
        "    values ^= np.uint64(1) << rng.integers(0, 64, size=len(values)).astype(np.uint64)\n"
        "values[::7] = rng.integers(0, 2**63, size=len(values[::7]), dtype=np.uint64)\n"  # and others far away
        "first, copies = leaders(values, 11), leaders_with_copies(values, 11)\n"
        "print(len(np.unique(values)), int((first == np.arange(len(values))).sum()), np.array_equal(first, copies))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    distinct, representatives, same = done.stdout.split()
    assert int(distinct) > 10_000  # far past the pairs' bound when all are paired
    assert int(representatives) < 2_000 and same == "True"


def test_near_duplicates_join_the_first_and_chains_are_cut(store, database_url):
    # b is 6 bits from a; c is 6 bits from b but 12 from a: leader clustering does not chain.
    assert store.recluster() == (0, 0)  # from now on this store keeps clusters, at k = 11
    store.add(
        [
            NewDocument("a", 0),
            NewDocument("b", _bits(6)),
            NewDocument("c", _bits(12)),
            NewDocument("far", _bits(40, 20)),
        ]
    )
    ids = {key: store.get(key).id for key in "abc"}
    clusters = _clusters(database_url)
    assert clusters["a"] == clusters["b"] == ids["a"]
    assert clusters["c"] == ids["c"]
    assert clusters["far"] not in (ids["a"], ids["c"])
    [group] = store.stored_clusters()
    assert (group.id, group.representative, group.members) == (ids["a"], "a", [("a", 0), ("b", 6)])


def test_a_second_batch_never_renumbers_an_existing_cluster(store, database_url):
    store.recluster()
    rng = np.random.default_rng(7)
    originals = [int(v) for v in rng.integers(0, 2**63, 60, dtype=np.int64)]
    first = [NewDocument(f"one/{i}", v) for i, v in enumerate(originals)]
    first += [NewDocument(f"one/{i}-copy", v ^ _bits(3, i % 50)) for i, v in enumerate(originals[:20])]
    store.add(first, batch_size=25)
    before = _clusters(database_url)
    assert all(before[f"one/{i}-copy"] == before[f"one/{i}"] for i in range(20))
    second = [NewDocument(f"two/{i}-copy", v ^ _bits(5, i % 40)) for i, v in enumerate(originals[20:50])]
    second += [NewDocument(f"two/new{i}", int(v)) for i, v in enumerate(rng.integers(0, 2**63, 30, dtype=np.int64))]
    store.add(second, batch_size=17)
    after = _clusters(database_url)
    assert {key: after[key] for key in before} == before
    assert all(after[f"two/{i - 20}-copy"] == before[f"one/{i}"] for i in range(20, 50))
    # Reclustering at the same distance, in arrival order, gives every document the same id.
    store.recluster()
    assert _clusters(database_url) == after


def test_sql_access_for_read_only_roles(database_url, pg_server, make_role):
    role = make_role(database_url, prefix="simhash_reader")
    with Store(database_url) as store:
        store.recluster()
        store.add([NewDocument("a", 0), NewDocument("b", _bits(4)), NewDocument("c", _bits(30, 30))])
        store.grant_read_only(role)
        a_id = store.get("a").id
    with psycopg.connect(_plain(database_url.set(username=role, password=None))) as connection:
        assert connection.execute("SELECT simhash.cluster_of('b')").fetchone() == (a_id,)
        assert connection.execute("SELECT simhash.cluster_of('missing')").fetchone() == (None,)
        rows = connection.execute(
            "SELECT representative_key, size FROM simhash.clusters ORDER BY size DESC, representative_key"
        ).fetchall()
        assert rows == [("a", 2), ("c", 1)]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("UPDATE simhash.documents SET cluster = 0")


def test_cluster_function_pins_its_search_path(database_url):
    with psycopg.connect(_plain(database_url)) as connection:
        config = connection.execute(
            "SELECT proconfig FROM pg_proc WHERE oid = 'simhash.cluster_of(text)'::regprocedure"
        ).fetchone()[0]
    assert config == ["search_path=pg_catalog, pg_temp"]


def test_a_removed_representative_leaves_its_cluster_a_representative(store, database_url):
    store.recluster()
    store.add([NewDocument("a", 0), NewDocument("b", _bits(2)), NewDocument("c", _bits(3))])
    store.remove(["a"])
    with psycopg.connect(_plain(database_url)) as connection:
        assert connection.execute("SELECT representative_key, size FROM simhash.clusters").fetchall() == [("b", 2)]


def test_recluster_assigns_bulk_loaded_stores_and_changes_distance(store, database_url):
    store.load([NewDocument("a", 0), NewDocument("b", _bits(6)), NewDocument("c", _bits(3, 40))])
    assert set(_clusters(database_url).values()) == {None}
    assert store.cluster_state() == (None, True)
    assert store.recluster() == (3, 1)
    assert store.recluster(4) == (3, 2)
    assert store.cluster_state() == (4, False)
    assert _clusters(database_url)["b"] != _clusters(database_url)["a"]
    result = CliRunner().invoke(
        app, ["--db", database_url.render_as_string(hide_password=False), "recluster", "-k", "11"]
    )
    assert result.exit_code == 0 and result.output.strip() == "3 documents in 1 cluster at distance 11"


def test_recluster_without_a_distance_takes_the_k_recorded_by_calibrate(store, database_url):
    store.load([NewDocument("a", 0), NewDocument("b", _bits(6))])
    store.record_recommended_distance(4)
    assert store.recluster() == (2, 2) and store.cluster_state() == (4, False)
    store.record_recommended_distance(9)  # the store's own distance comes first once it keeps clusters
    assert store.recluster() == (2, 2) and store.cluster_state() == (4, False)
    assert store.recluster(0) == (2, 2) and store.recluster() == (2, 2)  # k = 0 is a distance too
    assert store.cluster_state() == (0, False)


def test_concurrent_writers_put_near_duplicates_in_one_cluster(database_url):
    # Each round, two writers store near-duplicates at the same moment; both must end in one cluster.
    rounds = 15
    rng = np.random.default_rng(3)
    bases = [int(v) for v in rng.integers(0, 2**63, rounds, dtype=np.int64)]
    with Store(database_url) as store:
        store.recluster()
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(side: int) -> None:
        try:
            with Store(database_url) as store:
                for n, base in enumerate(bases):
                    barrier.wait()
                    store.add([NewDocument(f"{n}/{side}", base ^ _bits(2, 10 * side))])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=writer, args=(side,)) for side in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    clusters = _clusters(database_url)
    assert all(clusters[f"{n}/0"] == clusters[f"{n}/1"] is not None for n in range(rounds))


def test_dups_clusters_shows_ids_representatives_and_distances(store, database_url):
    store.recluster()
    store.add([NewDocument("x", 0), NewDocument("y", _bits(5)), NewDocument("z", _bits(2, 50))])
    x = store.get("x").id
    result = CliRunner().invoke(
        app, ["--db", database_url.render_as_string(hide_password=False), "dups", "--clusters", "--json"]
    )
    assert result.exit_code == 0
    expected = [
        {
            "cluster": x,
            "representative": "x",
            "size": 3,
            "keys": ["x", "z", "y"],
            "members": [{"key": "x", "distance": 0}, {"key": "z", "distance": 2}, {"key": "y", "distance": 5}],
        }
    ]
    assert [json.loads(line) for line in result.stdout.splitlines()] == expected
    store.remove(["z"])
    store.load([NewDocument("z", _bits(2, 50))])  # bulk-loaded: no cluster, so computed again, the same
    again = CliRunner().invoke(
        app, ["--db", database_url.render_as_string(hide_password=False), "dups", "--clusters", "--json"]
    )
    assert [json.loads(line) for line in again.stdout.splitlines()] == expected


def test_downgrade_removes_clusters_and_keeps_documents(empty_database_url):
    engine = create_engine(empty_database_url)
    migrate.upgrade(engine)
    with Store(engine) as store:
        store.add([NewDocument("a", 0), NewDocument("b", 1)])
    migrate.downgrade(engine, "0001")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM simhash.documents")).scalar() == 2
        assert connection.execute(text("SELECT to_regclass('simhash.cluster_heads')")).scalar() is None
        assert connection.execute(text("SELECT to_regprocedure('simhash.cluster_of(text)')")).scalar() is None
    migrate.upgrade(engine)
    with Store(engine) as store:
        assert store.cluster_state() == (None, True)
        assert store.recluster() == (2, 1)
        assert store.cluster_state() == (11, False)
    engine.dispose()


def test_a_store_keeps_no_clusters_until_asked(store, database_url):
    # Clustering costs a radius search per document written, so plain stores do not pay it.
    store.add([NewDocument("a", 0), NewDocument("b", 1)])
    assert set(_clusters(database_url).values()) == {None}
    result = CliRunner().invoke(app, ["--db", database_url.render_as_string(hide_password=False), "dups", "--clusters"])
    assert result.exit_code == 0
    assert result.stdout == "cluster %d (2): a <- b (1)\n" % store.get("a").id  # what recluster would store
    assert "(computed, not stored: `simhash-store recluster -k 11` keeps them" in result.stderr
    store.recluster()
    store.add([NewDocument("c", 3)])
    assert len(set(_clusters(database_url).values())) == 1


def test_the_in_memory_and_sql_searches_cluster_alike(pg_server, monkeypatch):
    # Few clusters: compared in numpy; many: a radius search per document in SQL. Same answers.
    from simhash_store import clusters as clustering

    rng = np.random.default_rng(11)
    originals = [int(v) for v in rng.integers(0, 2**63, 40, dtype=np.int64)]
    first = [NewDocument(f"o{i}", v) for i, v in enumerate(originals)]
    second = [
        NewDocument(f"c{i}-{j}", v ^ int(rng.integers(0, 2**63)) & _bits(64) if j == 2 else v ^ _bits(4 + 3 * j, i))
        for i, v in enumerate(originals)
        for j in range(3)
    ]
    results = []
    for limit in (clustering.IN_MEMORY_REPRESENTATIVES, 0):
        monkeypatch.setattr(clustering, "IN_MEMORY_REPRESENTATIVES", limit)
        name = pg_server.create_database()
        try:
            url = pg_server.url(name)
            with Store(url) as store:
                store.recluster()
                store.add(first)
                store.add(second, batch_size=50)
            results.append(_clusters(url))
        finally:
            pg_server.drop_database(name)
    assert results[0] == results[1]
    assert (
        sum(
            1
            for key, cluster in results[0].items()
            if key.startswith("c") and cluster == results[0]["o" + key[1:].split("-")[0]]
        )
        >= 60
    )


def _heads(url) -> dict[int, str]:
    with psycopg.connect(_plain(url)) as connection:
        return dict(
            connection.execute(
                "SELECT h.cluster, d.key FROM simhash.cluster_heads h JOIN simhash.documents d ON d.id = h.representative_id"
            ).fetchall()
        )


def test_a_rewritten_document_is_clustered_again_by_its_new_text(store, database_url):
    # b joins a; re-written near c, it leaves a's cluster for c's; re-written far from all, it founds its own.
    store.recluster()
    store.add([NewDocument("a", 0), NewDocument("b", _bits(3)), NewDocument("c", _bits(30, 30))])
    ids = {key: store.get(key).id for key in "abc"}
    assert _clusters(database_url) == {"a": ids["a"], "b": ids["a"], "c": ids["c"]}
    store.add([NewDocument("b", _bits(30, 30) ^ _bits(2))])
    assert _clusters(database_url) == {"a": ids["a"], "b": ids["c"], "c": ids["c"]}
    store.add([NewDocument("b", _bits(20, 5))])
    assert _clusters(database_url) == {"a": ids["a"], "b": ids["b"], "c": ids["c"]}
    assert store.get("b").id == ids["b"]  # the document keeps its id; only its cluster changes
    # The same text again (a new stamp or metadata only) changes nothing.
    store.add([NewDocument("b", _bits(20, 5), stamp="touched")])
    assert _clusters(database_url) == {"a": ids["a"], "b": ids["b"], "c": ids["c"]}


def test_a_rewritten_representative_hands_its_cluster_to_the_oldest_member(store, database_url):
    store.recluster()
    store.add(
        [
            NewDocument("a", 0),
            NewDocument("b", _bits(3)),
            NewDocument("c", _bits(4, 10)),
            NewDocument("solo", _bits(30, 30)),
        ]
    )
    ids = {key: store.get(key).id for key in ("a", "b", "c", "solo")}
    # a's text is re-written far away: the others keep cluster a (its id), now led by b, the oldest left.
    store.add([NewDocument("a", _bits(20, 1))])
    clusters = _clusters(database_url)
    assert clusters["b"] == clusters["c"] == ids["a"]
    assert _heads(database_url)[ids["a"]] == "b"
    assert store.memberships(["c"])["c"].distance == 7  # to b now, not to a
    # a founds a cluster of its own; its id is taken by the cluster it left, so the cluster gets a
    # number that no document has, and no later document will.
    moved = clusters["a"]
    assert moved not in ids.values() and moved > max(ids.values())
    store.add([NewDocument("a-copy", _bits(20, 1) ^ 1), NewDocument("d", _bits(14, 14))])
    clusters = _clusters(database_url)
    assert clusters["a-copy"] == moved and store.get("d").id > moved
    # A representative alone in its cluster, re-written: the cluster goes, and it founds one again under its id.
    store.add([NewDocument("solo", _bits(12, 44))])
    assert _clusters(database_url)["solo"] == ids["solo"]
    assert sorted(_heads(database_url).items()) == sorted(
        {ids["a"]: "b", moved: "a", ids["solo"]: "solo", store.get("d").id: "d"}.items()
    )
    # Every document is within k of its representative, as after a recluster in arrival order.
    for group in store.stored_clusters(min_size=1):
        assert all(distance <= 11 for _, distance in group.members), group


def test_a_write_that_fails_inside_its_transaction_uses_up_no_ids(store, database_url, monkeypatch):
    # A cluster's id is its founder's document id. A write killed inside its transaction must not
    # push later ids up (identity values are never rolled back), or a rerun would number clusters
    # differently from an uninterrupted run.
    from simhash_store import clusters as clustering

    store.recluster()
    store.add([NewDocument("a", 0)])
    first = store.get("a").id

    def fail(*args, **kwargs):
        raise RuntimeError("killed")

    with monkeypatch.context() as patched:
        patched.setattr(clustering, "assign", fail)
        with pytest.raises(RuntimeError):
            store.add([NewDocument(f"n{i}", _bits(20, i)) for i in range(5)])
    store.add([NewDocument(f"n{i}", _bits(20, i)) for i in range(5)])
    assert [store.get(f"n{i}").id for i in range(5)] == [first + 1 + i for i in range(5)]
    # The identity sequence was moved past the ids taken: an application inserting in plain SQL
    # (the column's default) does not collide with them.
    with psycopg.connect(_plain(database_url)) as connection:
        taken = connection.execute(
            "INSERT INTO simhash.documents (key, fingerprint) VALUES ('by-sql', 5) RETURNING id"
        ).fetchone()[0]
    assert taken > first + 5


def _ids(url) -> dict[str, int]:
    with psycopg.connect(_plain(url)) as connection:
        return dict(connection.execute("SELECT key, id FROM simhash.documents").fetchall())


def test_ids_of_removed_documents_are_never_given_again(store, database_url):
    # Applications may keep ids. In a store that keeps clusters, writes number new documents from
    # the largest id in use; removing the newest (members of a cluster, so no cluster keeps their
    # ids) took them out of it, and the next write gave them again.
    db = ["--db", database_url.render_as_string(hide_password=False)]
    store.recluster()
    given: dict[str, int] = {}

    def newest_removed_then(write, *keys) -> None:
        given.update(_ids(database_url))
        newest = sorted(given, key=given.get)[-2:]
        assert CliRunner().invoke(app, [*db, "remove", *newest]).exit_code == 0
        write()
        fresh = {key: _ids(database_url)[key] for key in keys}
        assert min(fresh.values()) > max(given.values()), (fresh, given)  # new ids, above every id given
        given.update(fresh)

    store.add([NewDocument("a", 0), NewDocument("b", _bits(2)), NewDocument("c", _bits(3))])
    newest_removed_then(lambda: store.add([NewDocument("d", _bits(4)), NewDocument("e", _bits(5))]), "d", "e")
    store.recluster()
    newest_removed_then(lambda: store.add([NewDocument("f", _bits(4, 1))]), "f")
    store.optimize()
    newest_removed_then(lambda: store.add_new_and_cluster([NewDocument("g", _bits(4, 2))]), "g")  # dedup's write
    newest_removed_then(lambda: store.load([NewDocument("h", _bits(4, 3)), NewDocument("i", _bits(5, 3))]), "h", "i")
    # A load into an emptied store (COPY, ids from the identity sequence) gives no id again either.
    given.update(_ids(database_url))
    store.remove(list(_ids(database_url)))
    store.load([NewDocument("j", 7)])
    assert _ids(database_url)["j"] > max(given.values())


def test_a_store_upgraded_after_removals_does_not_give_their_ids_again(empty_database_url):
    # A store of an earlier release whose newest documents were removed before the upgrade.
    engine = create_engine(empty_database_url)
    migrate.upgrade(engine, "0006")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO simhash.store_info (singleton, scheme_name, scheme, cluster_max_distance) "
                "SELECT true, 'zh-jieba-v1', CAST(:scheme AS jsonb), 11"
            ),
            {"scheme": DEFAULT.to_json()},
        )
        connection.execute(text("INSERT INTO simhash.documents (key, fingerprint) VALUES ('a', 0), ('b', 1), ('c', 3)"))
        connection.execute(text("DELETE FROM simhash.documents WHERE key IN ('b', 'c')"))
    with Store(engine) as store:
        store.add([NewDocument("d", 7)])  # upgrades the store, then writes
        assert store.get("d").id > 3
    engine.dispose()


def test_known_neighbours_are_used_only_while_nobody_else_writes(store, database_url, monkeypatch):
    """A run that found the stored documents near its records in advance reads the representatives
    among them by key, and searches no further; once another writer has written, the lists may miss
    its documents, and every later batch searches the store as usual."""
    store.recluster(3)
    store.add_new_and_cluster([NewDocument("a", 0)])
    known = clusters.KnownNeighbours({_bits(2): [0]}, {}, store.store_state())
    known.record(store.memberships(["a"]))
    searched = []
    search = clusters._stored_candidates
    monkeypatch.setattr(clusters, "_stored_candidates", lambda *a: searched.append(1) or search(*a))

    store.add_new_and_cluster([NewDocument("b", _bits(2))], known)
    assert searched == [] and known.state == store.store_state()
    assert store.memberships(["b"])["b"].representative == "a"

    store.add([NewDocument("other", _bits(8, 40))])  # another writer (which searches, as every write does)
    searched.clear()
    store.add_new_and_cluster([NewDocument("c", _bits(7, 40))], known)  # its lists know nothing near c
    assert searched == [1] and known.state is None
    assert store.memberships(["c"])["c"].representative == "other"  # found by the search


@pytest.mark.parametrize("k", [3, 11])
def test_leaders_over_fingerprints_whose_top_bits_are_equal_equal_the_definition(k):
    # The representatives' tables are made of the bits that tell the fingerprints apart (here the
    # low 48): fingerprints with their top 16 bits equal were each a candidate of every other.
    rng = np.random.default_rng(k)
    values = rng.integers(0, 2**48, size=600, dtype=np.uint64) | np.uint64(0xABCD << 48)
    values[1::3] = values[::3][: len(values[1::3])] ^ (
        np.uint64(1) << rng.integers(0, 48, len(values[1::3])).astype(np.uint64)
    )
    found = sequential_leaders(values, k, batch=50, recent=20)
    assert found.tolist() == _brute_force_leaders(values.tolist(), k)
