"""The store on a real Citus cluster answers exactly as on one server, through the same library, CLI and SQL."""

from __future__ import annotations

import json
import random
import re

import psycopg
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine
from typer.testing import CliRunner

from simhash_store import distributed, migrate
from simhash_store.bits import to_signed
from simhash_store.cli import app
from simhash_store.store import NewDocument, Store

runner = CliRunner()


def cli(url: str, *args: str, input: str | None = None):
    return runner.invoke(app, ["--db", url, *args], input=input)


def random_documents(count: int, seed: int, prefix: str = "doc") -> list[NewDocument]:
    rng = random.Random(seed)
    return [NewDocument(f"{prefix}/{i}", rng.getrandbits(64)) for i in range(count)]


def brute_force(documents: list[NewDocument], query: int, max_distance: int) -> list[tuple[str, int]]:
    found = [(d.key, (d.fingerprint ^ query).bit_count()) for d in documents]
    return sorted((key, distance) for key, distance in found if distance <= max_distance)


def answers(matches) -> list[tuple[str, int]]:
    return sorted((m.key, m.distance) for m in matches)


@pytest.fixture
def distributed_store(citus_url):
    with Store(citus_url) as store:
        store.init(distributed=True)
        yield store


def shard_commands(url: str, statement: str, parameters) -> str:
    """The commands the coordinator sent to the shards while running ``statement`` (Citus logs them to this client)."""
    with psycopg.connect(url, autocommit=True) as connection:
        notices: list[str] = []
        connection.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
        connection.execute("SET citus.log_remote_commands = on")
        connection.execute("SET client_min_messages = log")
        connection.execute(statement, parameters).fetchall()
    return "\n".join(notices)


# ------------------------------------------------------------ init --distributed


def test_plain_server_refuses_distributed_init_in_one_line(single_node_url):
    result = cli(single_node_url, "init", "--distributed")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "no Citus extension" in lines[0], result.output
    assert (
        migrate.current_revision(create_engine(single_node_url.replace("postgresql:", "postgresql+psycopg:"))) is None
    )


def test_init_distributed_lays_out_the_store_and_is_safe_to_rerun(citus_url):
    for _ in range(2):
        result = cli(citus_url, "init", "--distributed")
        assert result.exit_code == 0, result.output
        assert "distributed" in result.output
    with psycopg.connect(citus_url) as connection:
        layout = dict(
            connection.execute(
                "SELECT logicalrelid::text, CASE partmethod WHEN 'h' THEN column_to_column_name(logicalrelid, partkey) "
                "ELSE 'reference' END FROM pg_dist_partition"
            ).fetchall()
        )
        assert layout == {
            "simhash.documents": "key",
            "simhash.store_info": "reference",
            "simhash.block_masks": "reference",
            "simhash.cluster_heads": "reference",
        }
        constraints = dict(
            connection.execute(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'simhash.documents'::regclass"
            ).fetchall()
        )
        assert constraints == {"pk_documents": "PRIMARY KEY (id, key)", "uq_documents_key": "UNIQUE (key)"}
        shards = connection.execute(
            "SELECT count(DISTINCT nodeport) FROM pg_dist_shard JOIN pg_dist_shard_placement USING (shardid) "
            "WHERE logicalrelid = 'simhash.documents'::regclass"
        ).fetchone()[0]
        assert shards == 2  # both workers hold shards
    # Plain init on a distributed store keeps it distributed and working.
    assert cli(citus_url, "init").exit_code == 0
    with Store(citus_url) as store:
        store.add(random_documents(50, 1))
        assert len(store.query(store.get("doc/7").fingerprint, 0)) == 1


def test_an_existing_store_is_distributed_in_place(citus_url):
    documents = random_documents(300, 10)
    with Store(citus_url) as store:
        store.init()  # one server first (Citus installed, not used)
        store.add(documents)
        store.init(distributed=True)
        assert store.count() == 300
        query = documents[42].fingerprint
        for k in (0, 5, 11, 30):
            assert answers(store.query(query, k)) == brute_force(documents, query, k)
        assert store.scheme.name == "multi-v3"  # the default of new stores
    with psycopg.connect(citus_url) as connection:
        shell = connection.execute(
            "SELECT pg_relation_size('simhash.documents'), pg_relation_size('simhash.store_info')"
        ).fetchone()
    assert shell == (0, 0)  # the original rows are not left behind on the coordinator


@pytest.mark.parametrize("layout", ["wide3", "lean"])
def test_one_server_layouts_are_refused_on_citus_in_one_line(citus_url, layout):
    """A distributed store keeps the four16 layout: wide3 and lean are refused before it is distributed, and after."""
    result = cli(citus_url, "init", "--layout", layout, "--distributed")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: the {layout} layout is for one server: a distributed (Citus) store keeps the four16 layout"
    ]
    with Store(citus_url) as store:
        store.init(layout=layout)  # one server first (Citus installed, not used)
        store.add(random_documents(20, 11))
    result = cli(citus_url, "init", "--distributed")
    assert result.exit_code == 1
    assert f"this store has the {layout} layout (init --layout), which is for one server" in result.stderr
    assert cli(citus_url, "init", "--layout", "four16").exit_code == 0
    assert cli(citus_url, "init", "--distributed").exit_code == 0
    result = cli(citus_url, "init", "--layout", layout)
    assert result.exit_code == 1
    assert (
        f"the {layout} layout is for one server: a distributed (Citus) store keeps the four16 layout" in result.stderr
    )
    with Store(citus_url) as store:
        assert store.layout == "four16" and store.count() == 20
        query = store.get("doc/7").fingerprint
        assert [m.key for m in store.query(query, 0)] == ["doc/7"]


def test_clusters_on_a_distributed_store(distributed_store, citus_url):
    """Revision 0005's SQL works on the coordinator; recluster keeps clusters; dups --clusters computes the same."""
    documents = random_documents(40, 15)
    documents.append(NewDocument("twin", documents[0].fingerprint ^ 1))
    distributed_store.add(documents)
    with psycopg.connect(citus_url) as connection:
        assert connection.execute("SELECT simhash.cluster_of('doc/0'), simhash.cluster_of('absent')").fetchone() == (
            None,
            None,
        )
        assert connection.execute("SELECT count(*) FROM simhash.clusters").fetchone()[0] == 0
    assert distributed_store.cluster_state() == (None, True)
    result = cli(citus_url, "recluster", "-k", "3")
    assert result.exit_code == 0, result.output
    assert distributed_store.cluster_state() == (3, False)
    twin = distributed_store.memberships(["twin"])["twin"]
    assert (twin.representative, twin.distance) == ("doc/0", 1)
    with psycopg.connect(citus_url) as connection:
        assert connection.execute("SELECT simhash.cluster_of('twin') = simhash.cluster_of('doc/0')").fetchone()[0]
        assert (
            connection.execute("SELECT size FROM simhash.clusters WHERE representative_key = 'doc/0'").fetchone()[0]
            == 2
        )
    result = cli(citus_url, "dups", "-k", "1", "--clusters", "--json")
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(result.stdout.splitlines()[0])["keys"]) == ["doc/0", "twin"]


def test_migrations_readapt_functions_they_recreate(distributed_store, citus_url):
    """An upgrade that re-creates near in its one-server form leaves it working on the coordinator."""
    from importlib import import_module

    head = import_module("simhash_store.migrations.versions.0004_near_v2")
    with psycopg.connect(citus_url, autocommit=True) as connection:
        connection.execute("SET citus.multi_shard_modify_mode = 'sequential'")
        for function in (head.NEAR, head.NEAR_MANY):
            connection.execute(head.function_text(function).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
        assert (
            "JOIN simhash.documents d ON d.id"
            in connection.execute(
                "SELECT pg_get_functiondef('simhash.near_many(bigint[],integer,text,integer)'::regprocedure)"
            ).fetchone()[0]
        )  # the one-server form is back
    migrate.upgrade(distributed_store.engine)  # at head: no revision runs, the hook does
    distributed_store.add(random_documents(30, 2))
    target = distributed_store.get("doc/3").fingerprint
    for method in ("auto", "probe", "scan"):
        assert [m.key for m in distributed_store.query(target, 0, method=method)] == ["doc/3"]
        assert [[m.key for m in ms] for ms in distributed_store.query_many([target], 0, method=method)] == [["doc/3"]]
    with psycopg.connect(citus_url) as connection:
        for function in (
            "simhash.near(bigint,integer,text,integer)",
            "simhash.near_many(bigint[],integer,text,integer)",
        ):
            definition = connection.execute("SELECT pg_get_functiondef(%s::regprocedure)", (function,)).fetchone()[0]
            assert "JOIN simhash.documents d ON d.id" not in definition, function  # adapted again


FUNCTIONS = (
    "SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), obj_description(p.oid, 'pg_proc'), p.proacl FROM pg_proc p "
    "WHERE p.pronamespace = 'simhash'::regnamespace ORDER BY 1"
)


def test_revision_0008_on_a_distributed_store_keeps_its_functions_adds_hex_and_goes_back(citus_url, monkeypatch):
    """0008 re-creates near and near_many from their Citus files: exactly what the coordinator ran at 0007."""
    engine = create_engine(citus_url.replace("postgresql:", "postgresql+psycopg:"))
    migrate.upgrade(engine, "0007")
    with monkeypatch.context() as patch:  # laid out as before the files existed: every function rewritten
        patch.setattr(distributed.sqlfiles, "citus_variants", dict)
        patch.setattr(distributed.sqlfiles, "citus_bodies", set)
        distributed.distribute_store(engine)
    documents = random_documents(200, 19)
    with psycopg.connect(citus_url) as connection:  # not through Store: a write upgrades the store
        connection.cursor().executemany(
            "INSERT INTO simhash.documents (key, fingerprint) VALUES (%s, %s)",
            [(d.key, to_signed(d.fingerprint)) for d in documents],
        )
        connection.commit()
        at_0007 = connection.execute(FUNCTIONS).fetchall()
    assert migrate.current_revision(engine) == "0007"
    migrate.upgrade(engine, "0008")
    with psycopg.connect(citus_url) as connection:
        at_0008 = connection.execute(FUNCTIONS).fetchall()
        kept = [f for f in at_0008 if f[0] not in ("simhash.from_hex(text)", "simhash.to_hex(bigint)")]
        assert [f[0] for f in kept] == [f[0] for f in at_0007]
        for now, before in zip(kept, at_0007):
            assert now[1] == before[1] and now[2:] == before[2:], now[0]  # definition, comment, grants
        hex_of = {
            row[0]: row[1]
            for row in connection.execute("SELECT key, simhash.to_hex(fingerprint) FROM simhash.documents")
        }
        query = documents[5]
        found = connection.execute(
            "SELECT key, distance FROM simhash.near(simhash.from_hex(%s), 20)", (f"0x{query.fingerprint:X}",)
        ).fetchall()
    assert hex_of == {d.key: f"{d.fingerprint:016x}" for d in documents}
    assert sorted(found) == brute_force(documents, query.fingerprint, 20)
    migrate.downgrade(engine, "0007")
    with psycopg.connect(citus_url) as connection:
        assert connection.execute(FUNCTIONS).fetchall() == at_0007
    migrate.upgrade(engine)
    engine.dispose()


def test_the_functions_a_distributed_store_runs_are_the_checked_in_snapshot(distributed_store, citus_url):
    """docs/sql-functions.citus.sql shows every function a Citus coordinator runs (init --distributed at head)."""
    from simhash_store.trust import LIBRARY_FUNCTIONS

    import sql_snapshot  # tests/sql_snapshot.py

    with psycopg.connect(citus_url) as connection:
        created = {
            row[0]
            for row in connection.execute("SELECT proname FROM pg_proc WHERE pronamespace = 'simhash'::regnamespace")
        }
        assert created == set(LIBRARY_FUNCTIONS)  # the schema check covers every function a coordinator runs
        rendered = sql_snapshot.render(
            connection, migrate.HEAD_REVISION, "tests/distributed/test_citus_store.py", where=" on a Citus coordinator"
        )
    sql_snapshot.check("sql-functions.citus.sql", rendered)


def test_init_distributed_at_head_installs_the_citus_files_without_rewriting(citus_url, monkeypatch):
    """At head every function that needs a Citus form has one written out: no rewrite is needed."""
    from simhash_store.migrations import sqlfiles

    monkeypatch.setattr(distributed, "REWRITES", ())
    documents = random_documents(300, 20)
    with Store(citus_url) as store:
        store.init(distributed=True)
        store.add(documents)
        query = documents[7].fingerprint
        assert answers(store.query(query, 11)) == brute_force(documents, query, 11)
        assert [answers(m) for m in store.query_many([query, query ^ 3], 11)] == [
            brute_force(documents, q, 11) for q in (query, query ^ 3)
        ]
    with psycopg.connect(citus_url) as connection:
        for version in ("near.v3", "near_many.v1", "documents_shard_bytes.v1"):
            body = connection.execute(
                "SELECT prosrc FROM pg_proc WHERE pronamespace = 'simhash'::regnamespace AND proname = %s",
                (version.split(".")[0],),
            ).fetchone()[0]
            assert body == sqlfiles.body(sqlfiles.read(version, citus=True)), version


def test_upgrading_a_distributed_store_lays_out_the_tables_a_revision_adds(citus_url):
    """A store distributed at revision 0004, then upgraded: 0005's cluster_heads becomes a reference table."""
    engine = create_engine(citus_url.replace("postgresql:", "postgresql+psycopg:"))
    migrate.upgrade(engine, "0004")
    distributed.distribute_store(engine)
    documents = random_documents(50, 16)
    migrate.upgrade(engine)
    with psycopg.connect(citus_url) as connection:
        assert connection.execute(
            "SELECT partmethod FROM pg_dist_partition WHERE logicalrelid = 'simhash.cluster_heads'::regclass"
        ).fetchone() == ("n",)
    with Store(citus_url) as store:
        store.add(documents)
        query = documents[9].fingerprint
        assert answers(store.query(query, 20)) == brute_force(documents, query, 20)
    with psycopg.connect(citus_url) as connection:
        assert connection.execute("SELECT simhash.cluster_of('doc/9')").fetchone() == (None,)


def test_a_function_of_unknown_shape_is_refused_clearly():
    definition = (
        "CREATE FUNCTION simhash.f() ... SELECT reltuples FROM pg_class WHERE oid = 'simhash.documents'::regclass"
    )
    with pytest.raises(distributed.NotDistributableError, match="planner statistics"):
        distributed.adapt(definition, "simhash.f()")
    join = "... FROM hits JOIN simhash.documents d ON d.id = hits.id ..."
    with pytest.raises(distributed.NotDistributableError, match="not for"):
        distributed.adapt(join, "simhash.g()")
    # Revision 0004's near, changed in one place the rewrites rely on: refused, not half-adapted.
    from importlib import import_module

    head = import_module("simhash_store.migrations.versions.0004_near_v2")
    near = head.function_text(head.NEAR)
    assert "JOIN simhash.documents d ON d.id" not in distributed.adapt(near, "simhash.near")
    with pytest.raises(distributed.NotDistributableError, match="found holds matches"):
        distributed.adapt(near.replace("found bigint[];", "found bigint[] := '{}';"), "simhash.near")


# ------------------------------------------------------------ what Citus needs, one by one


def test_near_plans_afresh_because_a_generic_plan_cannot_be_distributed(distributed_store, citus_url):
    documents = random_documents(200, 3)
    distributed_store.add(documents)
    with psycopg.connect(citus_url, autocommit=True) as connection:
        config = connection.execute(
            "SELECT proconfig FROM pg_proc WHERE oid = 'simhash.near(bigint,integer,text,integer)'::regprocedure"
        ).fetchone()[0]
        assert "plan_cache_mode=force_custom_plan" in config
        # Many calls in one session, prepared: plans are never cached into a generic one.
        for round_ in range(8):
            for k, method in ((3, "probe"), (11, "auto"), (11, "scan")):
                query = documents[round_].fingerprint
                rows = connection.execute(
                    "SELECT key, distance FROM simhash.near(%s, %s, %s)", (to_signed(query), k, method), prepare=True
                ).fetchall()
                assert sorted(rows) == brute_force(documents, query, k)
        # The reason: with the one-server setting, Citus cannot plan the function's statements.
        connection.execute(
            "ALTER FUNCTION simhash.near(bigint, integer, text, integer) SET plan_cache_mode = force_generic_plan"
        )
        with pytest.raises(psycopg.Error, match="could not create distributed plan"):
            connection.execute("SELECT * FROM simhash.near(0, 3, 'probe')").fetchall()


def test_scan_or_probe_is_chosen_from_the_shards_not_the_empty_shell(distributed_store, citus_url):
    documents = random_documents(20_000, 4)
    distributed_store.add(documents, batch_size=20_000)
    with psycopg.connect(citus_url, autocommit=True) as connection:
        shell, shard, total, shards = connection.execute(
            "SELECT pg_relation_size('simhash.documents'), simhash.documents_shard_bytes(), "
            "citus_relation_size('simhash.documents'), "
            "(SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'simhash.documents'::regclass)"
        ).fetchone()
    assert shell == 0 and shard > 0
    assert shard == total // shards
    query = documents[0].fingerprint
    sent = shard_commands(citus_url, "SELECT * FROM simhash.near(%s, 11)", (to_signed(query),))
    # 2,500 rows a shard: probing 4 x 137 block values is cheaper than reading the shard.
    assert "c.block0 OPERATOR(pg_catalog.=) ANY" in sent, sent[:500]
    assert answers(distributed_store.query(query, 11)) == brute_force(documents, query, 11)


def test_small_store_scans(distributed_store, citus_url):
    documents = random_documents(100, 5)
    distributed_store.add(documents)
    sent = shard_commands(citus_url, "SELECT * FROM simhash.near(%s, 11)", (to_signed(documents[1].fingerprint),))
    assert "simhash.documents_" in sent and "c.block0 OPERATOR" not in sent, sent[:500]


def test_near_and_near_many_are_one_fan_out_each(distributed_store, citus_url):
    """Revision 0004's functions, adapted: candidates carry key and fingerprint, so no second trip joins them back by id."""
    documents = random_documents(2_000, 11)
    distributed_store.add(documents)
    with psycopg.connect(citus_url) as connection:
        shards = connection.execute(
            "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'simhash.documents'::regclass"
        ).fetchone()[0]
    query = to_signed(documents[3].fingerprint)
    for statement, parameters in (
        ("SELECT * FROM simhash.near(%s, 3, 'probe')", (query,)),
        ("SELECT * FROM simhash.near(%s, 11, 'probe', 1)", (query,)),  # max_results: one stage suffices
        ("SELECT * FROM simhash.near_many(ARRAY[%s, 0]::bigint[], 3, 'probe')", (query,)),
    ):
        sent = [
            line
            for line in shard_commands(citus_url, statement, parameters).splitlines()
            if "FROM simhash.documents_" in line or "FROM (SELECT" in line and "simhash.documents_" in line
        ]
        assert len(sent) == shards, (statement, sent[:3])  # one statement a shard
        assert not any(re.search(r"\bid OPERATOR\(pg_catalog\.=\)", line) for line in sent), statement


def test_near_many_probes_the_indexes_for_few_probes_and_reads_each_shard_for_many(distributed_store, citus_url):
    """Workers plan near_many's batch with their own settings: the statement's shape decides how they join it.

    Few probes: a join on ``= ANY (array)``, which no hash or merge join can run, so each shard
    probes its block indexes. Many probes: the equality join, which the workers hash.
    """
    documents = random_documents(20_000, 18)  # 2,500 rows a shard: auto probes at k = 11
    distributed_store.add(documents, batch_size=20_000)
    statement = "SELECT query_index, key, distance FROM simhash.near_many(%s::bigint[], %s, %s)"
    for count, k, shape in ((10, 3, "ANY (ARRAY(SELECT"), (100, 11, "m(mask)) JOIN simhash.documents_")):
        queries = [d.fingerprint for d in documents[:count]]
        for method in ("auto", "probe"):
            sent = shard_commands(citus_url, statement, ([to_signed(q) for q in queries], k, method))
            branches = [
                line
                for line in sent.splitlines()
                if "FROM simhash.documents_" in line or "JOIN simhash.documents_" in line
            ]
            assert branches and all(line.count(shape) == 4 for line in branches), (count, k, method, branches[:1])
            found = distributed_store.query_many(queries, k, method=method)
            assert [answers(matches) for matches in found] == [brute_force(documents, q, k) for q in queries]


def test_near_many_adapted_before_its_two_shapes_is_adapted_again(monkeypatch):
    """A store distributed by an earlier simhash-store has near_many without the shapes: adapting it again adds them."""
    from importlib import import_module

    head = import_module("simhash_store.migrations.versions.0004_near_v2")
    one_server = head.function_text(head.NEAR_MANY)
    adapted = distributed.adapt(one_server, "simhash.near_many")
    with monkeypatch.context() as patch:
        patch.setattr(
            distributed,
            "REWRITES",
            tuple(r for r in distributed.REWRITES if r.name not in distributed._NEAR_MANY_SHAPES),
        )
        adapted_earlier = distributed.adapt(one_server, "simhash.near_many")
    assert "ANY (ARRAY(SELECT" not in adapted_earlier and "ANY (ARRAY(SELECT" in adapted
    assert distributed.adapt(adapted_earlier, "simhash.near_many") == adapted
    assert distributed.adapt(adapted, "simhash.near_many") == adapted  # idempotent
    # A probe statement of another shape is refused, not half-adapted.
    changed = one_server.replace(
        "JOIN simhash.documents c ON c.block3 = q.b3 # m.mask", "JOIN simhash.documents c ON c.block3 = q.b3"
    )
    with pytest.raises(distributed.NotDistributableError, match="joins block_masks 3 times"):
        distributed.adapt(changed, "simhash.near_many")


def test_near_and_near_many_from_psql_in_every_call_form(distributed_store, citus_url):
    """Other applications call near with one to three arguments (the pre-0004 form); the new ones add max_results."""
    documents = random_documents(3_000, 12)
    documents += [NewDocument(f"twin/{i}", documents[i].fingerprint ^ (1 << i)) for i in range(3)]
    distributed_store.add(documents)
    query = documents[0].fingerprint
    nearest_first = sorted(brute_force(documents, query, 11), key=lambda match: (match[1], match[0]))
    with psycopg.connect(citus_url, autocommit=True) as connection:

        def rows(statement, *parameters):
            return connection.execute(statement, (to_signed(query), *parameters)).fetchall()

        assert sorted(rows("SELECT key, distance FROM simhash.near(%s)")) == brute_force(documents, query, 11)
        assert sorted(rows("SELECT key, distance FROM simhash.near(%s, 3)")) == brute_force(documents, query, 3)
        for method in ("auto", "probe", "scan"):
            assert sorted(rows("SELECT key, distance FROM simhash.near(%s, 12, %s)", method)) == brute_force(
                documents, query, 12
            )
            limited = rows("SELECT key, distance FROM simhash.near(%s, 11, %s, 2)", method)
            assert [d for _, d in limited] == [d for _, d in nearest_first[:2]], method
        named = rows("SELECT key, distance FROM simhash.near(%s, max_results => 1)")
        assert named == [("doc/0", 0)]
        other = documents[1].fingerprint
        many = connection.execute(
            "SELECT query_index, key, distance FROM simhash.near_many(ARRAY[%s, %s]::bigint[], 11)",
            (to_signed(query), to_signed(other)),
        ).fetchall()
        assert sorted((k, d) for i, k, d in many if i == 1) == brute_force(documents, query, 11)
        assert sorted((k, d) for i, k, d in many if i == 2) == brute_force(documents, other, 11)
        for method in ("probe", "scan"):
            first = connection.execute(
                "SELECT query_index, distance FROM simhash.near_many(ARRAY[%s]::bigint[], 11, %s, 2)",
                (to_signed(query), method),
            ).fetchall()
            assert first == [(1, d) for _, d in nearest_first[:2]], method


def test_multi_shard_union_gives_each_match_once(distributed_store, citus_url):
    rng = random.Random(6)
    query = rng.getrandbits(64)
    # Matches on every shard: the query itself (found by all four blocks), and copies a few bits away.
    documents = [NewDocument(f"same/{i}", query) for i in range(20)]
    documents += [
        NewDocument(f"near/{i}", query ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64))) for i in range(40)
    ]
    documents += random_documents(500, 7, "other")
    distributed_store.add(documents)
    with psycopg.connect(citus_url) as connection:
        shards = connection.execute(
            "SELECT count(DISTINCT get_shard_id_for_distribution_column('simhash.documents', key)) "
            "FROM simhash.documents WHERE simhash.distance(fingerprint, %s) <= 4",
            (to_signed(query),),
        ).fetchone()[0]
    assert shards > 2
    for method in ("probe", "scan", "auto"):
        matches = distributed_store.query(query, 4, method=method)
        assert len({m.key for m in matches}) == len(matches) == 60
        assert [m.distance for m in matches] == sorted(m.distance for m in matches)
        assert answers(matches) == brute_force(documents, query, 4)


# ------------------------------------------------------------ equal to one server and to brute force


fingerprints = st.integers(min_value=0, max_value=2**64 - 1)


@st.composite
def corpora(draw):
    """Fingerprints with near neighbours (a few bits flipped), duplicates and strangers."""
    centres = draw(st.lists(fingerprints, min_size=1, max_size=6))
    values = []
    for centre in centres:
        values.append(centre)
        for flips in draw(st.lists(st.lists(st.integers(0, 63), max_size=24), max_size=8)):
            value = centre
            for bit in flips:
                value ^= 1 << bit
            values.append(value)
    values += draw(st.lists(fingerprints, max_size=20))
    queries = draw(st.lists(st.sampled_from(values) | fingerprints, min_size=1, max_size=3))
    return [NewDocument(f"k{i}", v) for i, v in enumerate(values)], queries


@pytest.fixture
def both_stores(citus_url, single_node_url):
    with Store(citus_url) as cluster, Store(single_node_url) as single:
        cluster.init(distributed=True)
        single.init()
        yield cluster, single


# Every k up to 24 (the distances people search at, and then some), then a few up to 64: each
# call is a fan-out to the workers, and CI's time is bounded. tests/test_search.py checks
# every k from 0 to 64 on one server.
DISTANCES = [*range(25), 28, 32, 40, 48, 56, 64]


# No shrinking: each example costs a few seconds on the cluster; the failing example is printed as drawn.
@pytest.mark.slow
@settings(
    max_examples=4,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=corpora())
def test_distributed_equals_single_node_and_brute_force_for_every_k(both_stores, data):
    documents, queries = data
    cluster, single = both_stores
    for store in (cluster, single):
        with store.engine.begin() as connection:
            connection.exec_driver_sql("TRUNCATE simhash.documents CASCADE")  # and the segments that reference it
        store.add(documents)
    for k in DISTANCES:
        expected = [brute_force(documents, q, k) for q in queries]
        for method in ("auto", "probe", "scan") if k % 4 == 3 else ("auto",):
            on_cluster = [answers(m) for m in cluster.query_many(queries, k, method=method)]
            assert on_cluster == expected, (k, method)
        assert [answers(m) for m in single.query_many(queries, k)] == expected, k
    for k in (0, 3, 11, 20):
        pairs = cluster.pairs(k)  # nearest first; ties come in whatever order the rows were read
        assert [p.distance for p in pairs] == sorted(p.distance for p in pairs)
        assert sorted(pairs, key=repr) == sorted(single.pairs(k), key=repr)
        assert cluster.clusters(k) == single.clusters(k)


# ------------------------------------------------------------ the CLI and SQL, unchanged


def test_cli_commands_against_the_coordinator(citus_url, single_node_url, tmp_path):
    rng = random.Random(8)
    base = [rng.getrandbits(64) for _ in range(30)]
    rows = [("k%03d" % i, v) for i, v in enumerate(base)] + [
        ("twin%03d" % i, v ^ 0b101) for i, v in enumerate(base[:10])
    ]
    csv = tmp_path / "fingerprints.csv"
    csv.write_text("key,fingerprint\n" + "".join(f"{k},{v:016x}\n" for k, v in rows))
    jsonl = tmp_path / "more.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"key": f"more{i}", "fingerprint": f"{v ^ 1:016x}"}) + "\n" for i, v in enumerate(base[10:15])
        )
    )
    outputs = {}
    for url in (citus_url, single_node_url):
        steps = [
            ["init", "--distributed"] if url == citus_url else ["init"],
            ["import", str(csv), "--scheme", "multi-v3"],  # empty store: the bulk load
            ["import", str(jsonl), "--scheme", "multi-v3"],  # then through add
            ["query", "-f", f"{base[0]:016x}", "-f", f"{base[12]:016x}", "-k", "3", "--json"],
            ["dups", "-k", "3", "--json"],
            ["dups", "-k", "3", "--clusters", "--json"],
            ["remove", "k000", "twin001", "absent"],
            ["dups", "-k", "3", "--json"],
        ]
        outputs[url] = []
        for step in steps:
            result = cli(url, *step)
            assert result.exit_code == 0, (step, result.output)
            lines = result.stdout.splitlines()
            # dups: nearest first, ties in the order rows were read (shard by shard on the cluster).
            outputs[url].append(sorted(lines) if step[0] == "dups" else lines)
        stats = cli(url, "stats", "--json")
        assert stats.exit_code == 0, stats.output
        info = json.loads(stats.stdout)
        assert info["documents"] == 40 + 5 - 2
        assert info["table_bytes"] > 100_000  # the shards, not the coordinator's empty shell
    cluster_out, single_out = outputs[citus_url], outputs[single_node_url]
    assert cluster_out[1:] == single_out[1:]
    assert any('"distance": 2' in line for line in cluster_out[4])
    assert any("twin" in line for line in cluster_out[5])


def test_grant_read_lets_a_role_search_in_sql_but_not_write(distributed_store, citus_url, citus):
    role = "reader_" + re.sub(r"\W", "", citus_url.rsplit("/", 1)[1])[-8:]
    database = citus_url.rsplit("/", 1)[1]
    citus.execute(f'CREATE ROLE "{role}" LOGIN', database)  # in a Citus database: the workers get it too
    try:
        documents = random_documents(100, 9)
        distributed_store.add(documents)
        assert cli(citus_url, "grant-read", role).exit_code == 0
        reader_url = citus_url.replace("postgres@", f"{role}@")
        query = documents[5].fingerprint
        with psycopg.connect(reader_url, autocommit=True) as reader:
            rows = reader.execute("SELECT key, distance FROM simhash.near(%s, 12)", (to_signed(query),)).fetchall()
            assert sorted(rows) == brute_force(documents, query, 12)
            assert reader.execute("SELECT simhash.distance(0, -1)").fetchone()[0] == 64
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                reader.execute("DELETE FROM simhash.documents")
    finally:
        citus.execute(f'DROP OWNED BY "{role}"', database)
        citus.execute(f'DROP ROLE IF EXISTS "{role}"', database)


def test_grant_read_to_a_role_the_workers_lack_is_one_error_line(distributed_store, citus_url, citus):
    """A role created outside the store's database exists on the coordinator only: say so, grant nothing; once on every node, it works."""
    role = "lone_" + re.sub(r"\W", "", citus_url.rsplit("/", 1)[1])[-8:]
    database = citus_url.rsplit("/", 1)[1]
    citus.execute(f'CREATE ROLE "{role}" LOGIN')  # in the postgres database: Citus does not propagate it
    try:
        documents = random_documents(50, 17)
        distributed_store.add(documents)
        result = cli(citus_url, "grant-read", role)
        assert result.exit_code == 1
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
        assert f"role {role!r} exists on the coordinator but not on the Citus worker(s)" in lines[0]
        assert all(f"127.0.0.1:{port}" in lines[0] for port in citus.ports[1:]), lines[0]
        with psycopg.connect(citus_url) as connection:
            assert not connection.execute(
                "SELECT has_table_privilege(%s, 'simhash.documents', 'SELECT')", (role,)
            ).fetchone()[0]
        for port in citus.ports[1:]:
            citus.execute(f'CREATE ROLE "{role}" LOGIN', port=port)
        assert cli(citus_url, "grant-read", role).exit_code == 0
        query = documents[3].fingerprint
        with psycopg.connect(citus_url.replace("postgres@", f"{role}@"), autocommit=True) as reader:
            rows = reader.execute("SELECT key, distance FROM simhash.near(%s, 12)", (to_signed(query),)).fetchall()
            assert sorted(rows) == brute_force(documents, query, 12)
            rows = reader.execute(
                "SELECT key, distance FROM simhash.near_many(ARRAY[%s]::bigint[], 12)", (to_signed(query),)
            ).fetchall()
            assert sorted(rows) == brute_force(documents, query, 12)
    finally:
        citus.execute(f'DROP OWNED BY "{role}"', database)  # on the coordinator; Citus revokes on the workers
        for port in citus.ports:
            citus.execute(f'DROP ROLE IF EXISTS "{role}"', port=port)
