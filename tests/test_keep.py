"""Keep policies: which copy represents a cluster, the same in dedup, clustered add and recluster;
reruns that do not fingerprint again; and the data-safety cases of dedup (docs/reliability.md)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text as sql_text
from typer.testing import CliRunner

from simhash_store import dedup, fingerprint, migrate
from simhash_store.cli import app
from simhash_store.clusters import leaders
from simhash_store.corpus import Source
from simhash_store.dedup import ClusterDistanceError, DedupCounts, InputChangedError, dedup_rows
from simhash_store.ingest import Fingerprinter, add
from simhash_store.keep import KeepPolicy, leaders_keeping
from simhash_store.leaders import sequential_leaders_keeping
from simhash_store.scheme import DEFAULT
from simhash_store.store import NewDocument, Store

# ------------------------------------------------------------ the policy (no database)


def test_policies_parse_and_refuse_in_one_message():
    assert str(KeepPolicy.parse("field:published_at")) == "field:published_at:asc"
    assert KeepPolicy.parse("field:rank:desc") == KeepPolicy("field", "rank", True)
    assert KeepPolicy.parse(None) == KeepPolicy.parse("first") == KeepPolicy()
    for wrong in ("latest", "field:", "field:x:up", "Longest"):
        with pytest.raises(ValueError, match="keep must be one of first, longest, shortest, field:NAME"):
            KeepPolicy.parse(wrong)


def test_a_descending_string_ranks_by_the_string_itself_not_a_tuple_of_its_characters():
    # A tuple of negated code points took about 40 bytes a character: 60 stored values of 1 MB made
    # `recluster --keep field:title:desc` take 2.6 GB (266 MB ascending).
    import pickle
    import tracemalloc

    descending = KeepPolicy.parse("field:title:desc")
    title = "x" * 1_000_000
    tracemalloc.start()
    try:
        rank = descending.rank(0, None, title)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 10_000, held
    assert pickle.loads(pickle.dumps(rank)) == rank and hash(rank) == hash(descending.rank(0, None, title))
    # The order of the tuples it replaces: reversed code points, a longer string first on a common start.
    texts = ["", "a", "ab", "abc", "b", "é", "\U0001f600", "a\U0001f600", "zz", "ab\x01"]
    old = {text: (tuple(-ord(c) for c in text) + (1,)) for text in texts}
    for a in texts:
        for b in texts:
            ra, rb = descending.rank(0, None, a)[:2], descending.rank(0, None, b)[:2]
            assert (ra < rb, ra <= rb, ra == rb, ra > rb, ra >= rb) == (
                old[a] < old[b],
                old[a] <= old[b],
                old[a] == old[b],
                old[a] > old[b],
                old[a] >= old[b],
            ), (a, b)


def test_field_values_compare_numbers_by_value_strings_by_text_and_missing_last():
    values = ["2024-05-01", 10, None, "2023-12-31T23:59:59Z", 9.5, True, {"a": 1}, "2024-05-01T00:00:00Z", -3]
    ascending = KeepPolicy.parse("field:v:asc")
    order = sorted(range(len(values)), key=lambda i: ascending.rank(i, None, ascending.value_of({"v": values[i]})))
    assert [values[i] for i in order] == [
        -3,
        9.5,
        10,
        "2023-12-31T23:59:59Z",
        "2024-05-01",
        "2024-05-01T00:00:00Z",
        None,
        True,
        {"a": 1},
    ]
    descending = KeepPolicy.parse("field:v:desc")
    order = sorted(range(len(values)), key=lambda i: descending.rank(i, None, descending.value_of({"v": values[i]})))
    # Missing, null, booleans and objects stay last (in input order: the tie-break), in both directions.
    assert [values[i] for i in order] == [
        10,
        9.5,
        -3,
        "2024-05-01T00:00:00Z",
        "2024-05-01",
        "2023-12-31T23:59:59Z",
        None,
        True,
        {"a": 1},
    ]
    longest = KeepPolicy.parse("longest")
    assert sorted([(0, 5), (1, 9), (2, None), (3, 9)], key=lambda d: longest.rank(d[0], d[1], None)) == [
        (1, 9),
        (3, 9),
        (0, 5),
        (2, None),
    ]


def _sequential_oracle(values: list[int], ranks: list[tuple], k: int) -> tuple[list[int], dict[int, int]]:
    """The rule written plainly: in order, join the nearest current representative (ties: the earliest),
    replace it when ranked better; else found a cluster."""
    heads: dict[int, int] = {}  # founder -> current representative
    cluster = []
    for position, value in enumerate(values):
        near = [
            (bin(value ^ values[h]).count("1"), h, f)
            for f, h in heads.items()
            if bin(value ^ values[h]).count("1") <= k
        ]
        if not near:
            heads[position] = position
            cluster.append(position)
            continue
        _, head, founder = min(near)
        cluster.append(founder)
        if ranks[position] < ranks[head]:
            heads[founder] = position
    return cluster, heads


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2**16 - 1), st.integers(0, 5)), min_size=0, max_size=40),
    st.integers(0, 6),
)
def test_leaders_keeping_is_the_sequential_rule(items, k):
    values = [value for value, _ in items]
    ranks = [(weight, position) for position, (_, weight) in enumerate(items)]
    cluster, head = leaders_keeping(np.array(values, dtype=np.uint64), ranks, k)
    expected_cluster, expected_heads = _sequential_oracle(values, ranks, k)
    assert cluster.tolist() == expected_cluster
    assert {f: int(head[f]) for f in np.flatnonzero(head >= 0).tolist()} == expected_heads
    # With ranks in arrival order (keep first), nothing is replaced: plain leader clustering.
    first, first_head = leaders_keeping(np.array(values, dtype=np.uint64), [(p,) for p in range(len(values))], k)
    assert first.tolist() == leaders(np.array(values, dtype=np.uint64), k).tolist()
    assert np.flatnonzero(first_head >= 0).tolist() == sorted(set(first.tolist()))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2**16 - 1), st.integers(0, 5)), min_size=0, max_size=40),
    st.integers(0, 6),
    st.integers(1, 9),
)
def test_leaders_keeping_searching_the_representatives_alone_is_the_sequential_rule(items, k, recent):
    # Few representatives a level, so that levels merge (leaving out the replaced ones) and the
    # newest, the levels and replacements all decide some documents.
    values = [value for value, _ in items]
    ranks = [(weight, position) for position, (_, weight) in enumerate(items)]
    cluster, head = sequential_leaders_keeping(np.array(values, dtype=np.uint64), ranks, k, recent=recent)
    expected_cluster, expected_heads = _sequential_oracle(values, ranks, k)
    assert cluster.tolist() == expected_cluster
    assert {f: int(head[f]) for f in np.flatnonzero(head >= 0).tolist()} == expected_heads


def test_leaders_keeping_many_copies_of_one_text_do_not_pair_every_copy_with_every_copy():
    # recluster --keep longest of 10,000 stored copies of one text took 65 s and 5.1 GB: every two
    # copies were a pair. 20,000 copies are 200 million pairs, far past 2 GB of address space.
    script = (
        "import resource, numpy as np\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
        "from simhash_store.keep import leaders_keeping\n"
        "values = np.full(20000, 0x0123456789ABCDEF, dtype=np.uint64)\n"
        "values[10000:] ^= np.uint64(1)\n"
        "ranks = [(-(p % 97), p) for p in range(len(values))]\n"  # longer copies arrive now and then
        "cluster, head = leaders_keeping(values, ranks, 11)\n"
        "print(len(set(cluster.tolist())), int(head[0]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "96"]


# ------------------------------------------------------------ a crawl with known originals


def _crawl(paragraphs: list[str], seed: int = 7) -> list[dict]:
    """Originals with the earliest date, and reposts (header, footer, edit, truncation) dated later, shuffled."""
    rng = random.Random(seed)
    records = []
    for number, text in enumerate(paragraphs[:24]):
        day = 1 + number % 27
        records.append({"key": f"o{number}", "text": text, "published_at": f"2024-03-{day:02d}", "original": True})
        reposts = [
            "【转载】" + text,
            text + "\n（本文来源：网络，版权归原作者所有，如有侵权请联系删除。）",
            text.replace("的", "之", 2),
            text[: int(len(text) * 0.9)],
        ]
        for variant, repost in enumerate(rng.sample(reposts, 2)):
            records.append(
                {
                    "key": f"o{number}-r{variant}",
                    "text": repost,
                    "published_at": f"2024-04-{day:02d}T0{variant}:00:00Z",
                    "original": False,
                }
            )
    rng.shuffle(records)
    return records


def _state(url) -> dict[str, tuple[int | None, str | None]]:
    """Every stored key's cluster and representative."""
    with Store(url) as store:
        with store.engine.connect() as connection:
            keys = [row[0] for row in connection.execute(sql_text("SELECT key FROM simhash.documents"))]
        return {key: (m.cluster, m.representative) for key, m in store.memberships(keys).items()}


def _groups(state: dict[str, tuple[int | None, str | None]]) -> dict[str, tuple[frozenset[str], str | None]]:
    """Each key's cluster as the set of its members, and its representative: what does not depend on ids."""
    members: dict[int | None, set[str]] = {}
    for key, (cluster, _) in state.items():
        members.setdefault(cluster, set()).add(key)
    return {key: (frozenset(members[cluster]), representative) for key, (cluster, representative) in state.items()}


POLICIES = ["first", "longest", "shortest", "field:published_at:asc"]


@pytest.mark.parametrize("policy", POLICIES)
def test_recluster_and_batch_by_batch_dedup_give_what_one_fresh_dedup_gives(pg_server, sample_paragraphs, policy):
    records = _crawl(sample_paragraphs)
    states = []
    for how in ("fresh", "batches", "recluster"):
        name = pg_server.create_database()
        try:
            url = pg_server.url(name)
            if how == "fresh":
                verdicts = list(dedup(records, store=url, keep=policy))
            else:  # two runs, small batches, then (for recluster) every cluster done again from scratch
                list(dedup(records[:31], store=url, keep=policy, batch_size=7))
                list(dedup(records[31:], store=url, keep=policy, batch_size=5))
                if how == "recluster":
                    with Store(url) as store:
                        store.recluster()  # the store's distance and policy
                        assert store.keep_policy() == KeepPolicy.parse(policy)
            states.append(_state(url))
        finally:
            pg_server.drop_database(name)
    # Ids are numbered per batch (in key order), so other batches give other ids: the same groups and
    # representatives. Reclustering the store keeps its very ids.
    assert _groups(states[1]) == _groups(states[0])
    assert states[2] == states[1]
    assert sum(1 for _, v in verdicts if v.kept) < len(records)  # the crawl has near-duplicates to choose among


def test_add_then_recluster_follows_input_order_not_key_order(pg_server, sample_paragraphs):
    # Keys sort the other way round from the input: "first" must still be the first in the input.
    records = [
        {"key": f"z{9 - i}", "text": t}
        for i, t in enumerate(
            [
                sample_paragraphs[0],
                "【转载】" + sample_paragraphs[0],
                sample_paragraphs[1],
                sample_paragraphs[1] + "（完）",
            ]
        )
    ]
    states = []
    for how in ("fresh", "add"):
        name = pg_server.create_database()
        try:
            url = pg_server.url(name)
            if how == "fresh":
                list(dedup(records, store=url))
            else:
                with Store(url) as store:
                    add(store, [Source(r["key"], text=r["text"], size=len(r["text"])) for r in records], jobs=1)
                    store.recluster()
            states.append(_state(url))
        finally:
            pg_server.drop_database(name)
    assert _groups(states[1]) == _groups(states[0])
    assert states[0]["z8"][1] == "z9" and states[0]["z6"][1] == "z7"


def test_field_policy_keeps_the_earliest_and_a_better_later_copy_takes_over(database_url, sample_paragraphs):
    records = _crawl(sample_paragraphs)
    verdicts = {v.key: v for _, v in dedup(records, store=database_url, keep="field:published_at:asc")}
    originals = [r["key"] for r in records if r["original"]]
    assert all(verdicts[key].kept for key in originals)
    # A later batch holds an even earlier copy of o0: it becomes the representative, the cluster keeps its id.
    cluster = verdicts["o0"].cluster
    earlier = {
        "key": "o0-earliest",
        "text": "【首发】" + records[[r["key"] for r in records].index("o0")]["text"],
        "published_at": "2024-01-01",
    }
    [(_, verdict)] = list(dedup([earlier], store=database_url))  # the store's policy, unnamed
    assert (verdict.kept, verdict.cluster, verdict.replaced) == (True, cluster, "o0")
    with Store(database_url) as store:
        assert store.memberships(["o0"])["o0"].representative == "o0-earliest"
        with pytest.raises(ClusterDistanceError, match="recluster --keep longest"):
            list(dedup([{"key": "x", "text": sample_paragraphs[30]}], store=store, keep="longest"))


def test_clustered_add_replaces_by_the_store_policy_and_reports_it(database_url, sample_paragraphs):
    text = sample_paragraphs[3]
    with Store(database_url) as store:
        store.init()
        store.recluster(keep="longest")
        first = add(store, [Source("short", text=text[:-20], size=1)], jobs=1)
        assert first.replaced == []
        second = add(store, [Source("long", text=text + "（完）", size=1)], jobs=1)
        assert second.replaced == [("short", "long")]
        assert store.memberships(["short"])["short"].representative == "long"


def test_cli_keep_field_reports_replacements_and_recluster_keeps_it(database_url, tmp_path, sample_paragraphs):
    text = sample_paragraphs[5]
    (tmp_path / "a.jsonl").write_text(
        json.dumps({"key": "repost", "text": "【转载】" + text, "published_at": "2024-05-02"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"key": "original", "text": text, "published_at": "2024-05-01"}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    env = {"SIMHASH_STORE_URL": str(database_url)}
    args = ["dedup", "--keep", "field:published_at:asc", "--annotate", "-o"]
    first = runner.invoke(app, [*args, str(tmp_path / "1.jsonl"), str(tmp_path / "a.jsonl")], env=env)
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, [*args, str(tmp_path / "2.jsonl"), str(tmp_path / "b.jsonl")], env=env)
    assert second.exit_code == 0, second.output
    assert "representatives replaced by a better copy: 1\n  replaced: repost by original" in second.stderr
    [row] = [json.loads(line) for line in (tmp_path / "2.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["duplicate_of"] is None
    other = runner.invoke(app, ["dedup", "--keep", "longest", str(tmp_path / "b.jsonl")], env=env)
    assert other.exit_code == 1 and "recluster --keep longest" in other.output
    wrong = runner.invoke(app, ["dedup", "--keep", "latest", str(tmp_path / "b.jsonl")], env=env)
    assert wrong.exit_code == 2 and "keep must be one of" in wrong.output
    reclustered = runner.invoke(app, ["recluster", "--keep", "longest"], env=env)
    assert reclustered.exit_code == 0 and "keeping longest" in reclustered.output
    with Store(database_url) as store:
        assert store.memberships(["original"])["original"].representative == "repost"  # the longer one now


def test_cli_add_jsonl_stores_the_keep_field_of_each_record(database_url, tmp_path, sample_paragraphs):
    text = sample_paragraphs[6]
    lines = [
        {"key": "late", "text": "【转载】" + text, "published_at": "2024-06-02"},
        {"key": "early", "text": text, "published_at": "2024-06-01"},
    ]
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), encoding="utf-8"
    )
    with Store(database_url) as store:
        store.init()
        store.recluster(keep="field:published_at")
    result = CliRunner().invoke(
        app, ["add", "--jsonl", str(tmp_path / "in.jsonl")], env={"SIMHASH_STORE_URL": str(database_url)}
    )
    assert result.exit_code == 0, result.output
    assert "replaced: late by early" in result.output
    with Store(database_url) as store:
        assert store.memberships(["late"])["late"].representative == "early"


def test_a_keep_value_corrected_under_the_same_text_ranks_the_copy_again(database_url, tmp_path, sample_paragraphs):
    # A record whose keep field was corrected but whose text was not was taken as unchanged: the stale
    # value stayed, and so did the wrong representative (hostile/keep_field_corrected_same_text).
    text = sample_paragraphs[6]
    source = tmp_path / "in.jsonl"

    def add(records: list[dict]) -> str:
        source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        result = CliRunner().invoke(app, ["add", "--jsonl", str(source)], env={"SIMHASH_STORE_URL": str(database_url)})
        assert result.exit_code == 0, result.output
        return result.output

    with Store(database_url) as store:
        store.init()
        store.recluster(keep="field:published_at")
    add(
        [
            {"key": "a", "text": text, "published_at": "2024-06-02"},
            {"key": "b", "text": "【转载】" + text, "published_at": "2024-06-03"},
        ]
    )
    with Store(database_url) as store:
        assert store.memberships(["b"])["b"].representative == "a"
    said = add([{"key": "b", "text": "【转载】" + text, "published_at": "2024-06-01"}])  # the date corrected
    assert "replaced: a by b" in said and "unchanged 1" not in said, said
    with Store(database_url) as store:
        assert store.stored_keep_values(["b"]) == {"b": "2024-06-01"}
        assert store.memberships(["a"])["a"].representative == "b"
    again = add([{"key": "b", "text": "【转载】" + text, "published_at": "2024-06-01"}])  # nothing new: unchanged
    assert "unchanged 1" in again, again


def test_dedup_takes_up_a_keep_value_corrected_under_the_same_text(database_url, tmp_path, sample_paragraphs):
    # dedup read a stored record's verdict back whatever its keep field now said: a date corrected
    # under the same text kept the stale value, and the wrong copy stayed the representative.
    text = sample_paragraphs[6]
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"

    def dedup_run(records: list[dict]) -> dict[str, dict]:
        source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        result = CliRunner().invoke(
            app,
            ["dedup", str(source), "-o", str(output), "--annotate", "--keep", "field:published_at"],
            env={"SIMHASH_STORE_URL": str(database_url)},
        )
        assert result.exit_code == 0, result.output
        lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
        return {line["key"]: line for line in lines}

    records = [
        {"key": "a", "text": text, "published_at": "2024-06-02"},
        {"key": "b", "text": "【转载】" + text, "published_at": "2024-06-03"},
    ]
    first = dedup_run(records)
    assert first["a"]["duplicate_of"] is None and first["b"]["duplicate_of"] == "a", first
    records[1]["published_at"] = "2024-06-01"  # the date corrected, the text the same
    second = dedup_run(records)
    assert second["b"]["duplicate_of"] is None and second["a"]["duplicate_of"] == "b", second
    assert second["a"]["cluster"] == second["b"]["cluster"]
    with Store(database_url) as store:
        assert store.stored_keep_values(["a", "b"]) == {"a": "2024-06-02", "b": "2024-06-01"}
        assert store.memberships(["a"])["a"].representative == "b"
    assert dedup_run(records) == second  # a rerun of the corrected input writes the same


def _write_records(path, records: list[dict], kind: str) -> None:
    """The records in one input format (every field a string in CSV and TSV, as a crawl exports them)."""
    if kind == "jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    elif kind in ("csv", "tsv"):
        import csv

        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(records[0]), delimiter="," if kind == "csv" else "\t")
            writer.writeheader()
            writer.writerows(records)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(records), path)


RECORD_FORMATS = ["jsonl", "csv", "tsv", "parquet"]


@pytest.mark.parametrize("kind", RECORD_FORMATS)
def test_cli_dedup_keeps_by_a_field_of_every_record_format(database_url, tmp_path, sample_paragraphs, kind):
    text = sample_paragraphs[8]
    records = [  # the repost comes first in the file; the original, dated earlier, replaces it
        {"key": "repost", "text": "【转载】" + text + "（完）", "published_at": "2024-05-02T08:00:00Z"},
        {"key": "other", "text": sample_paragraphs[9], "published_at": "2024-05-03"},
        {"key": "original", "text": text, "published_at": "2024-05-01"},
    ]
    source = tmp_path / f"in.{kind}"
    _write_records(source, records, kind)
    out = tmp_path / "out.jsonl"
    env = {"SIMHASH_STORE_URL": str(database_url)}
    result = CliRunner().invoke(
        app, ["dedup", str(source), "--keep", "field:published_at:asc", "--annotate", "-o", str(out)], env=env
    )
    assert result.exit_code == 0, result.output
    assert "replaced: repost by original" in result.stderr
    rows = {row["key"]: row for row in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert (rows["original"]["duplicate_of"], rows["repost"]["duplicate_of"], rows["other"]["duplicate_of"]) == (
        None,
        "original",
        None,
    )
    # The other policies through the same command: shortest keeps the original, longest the repost.
    for policy, kept in (("shortest", "original"), ("longest", "repost")):
        reclustered = CliRunner().invoke(app, ["recluster", "--keep", policy], env=env)
        assert reclustered.exit_code == 0 and f"keeping {policy}" in reclustered.output
        again = CliRunner().invoke(app, ["dedup", str(source), "--keep", policy, "-o", str(out)], env=env)
        assert again.exit_code == 0, again.output
        written = [row["key"] for row in map(json.loads, out.read_text(encoding="utf-8").splitlines())]
        assert sorted(written) == sorted([kept, "other"])


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_cli_add_of_records_carries_the_keep_field_whatever_the_format(database_url, tmp_path, sample_paragraphs, kind):
    text = sample_paragraphs[10]
    records = [
        {"key": "late", "text": "【转载】" + text, "published_at": "2024-06-02"},
        {"key": "early", "text": text, "published_at": "2024-06-01"},
    ]
    source = tmp_path / f"in.{kind}"
    _write_records(source, records, kind)
    with Store(database_url) as store:
        store.init()
        store.recluster(keep="field:published_at")
    result = CliRunner().invoke(app, ["add", str(source)], env={"SIMHASH_STORE_URL": str(database_url)})
    assert result.exit_code == 0, result.output
    assert "replaced: late by early" in result.output
    with Store(database_url) as store:
        assert store.memberships(["late"])["late"].representative == "early"


def test_library_read_documents_carries_the_keep_field_and_add_keeps_by_it(database_url, tmp_path, sample_paragraphs):
    from simhash_store import formats

    text = sample_paragraphs[11]
    source = tmp_path / "in.csv"
    _write_records(
        source, [{"key": "b", "text": text + "（完）", "rank": "2"}, {"key": "a", "text": text, "rank": "1"}], "csv"
    )
    options = formats.ReadOptions(keep_field="rank")
    documents = list(formats.read_documents([str(source)], options=options))
    assert [(d.key, d.keep_value) for d in documents] == [("b", "2"), ("a", "1")]
    assert [d.keep_value for d in formats.read_documents([str(source)])] == [None, None]  # not asked for
    with Store(database_url) as store:
        store.init()
        store.recluster(keep="field:rank:asc")
        summary = add(store, documents, jobs=1)
    assert summary.replaced == [("b", "a")]
    # dedup() of mappings takes a policy by name or as a KeepPolicy, and the store's when left out.
    more = [{"key": "c", "text": text + "（全文完）", "rank": 0}]
    [(_, verdict)] = list(dedup(more, store=database_url, keep=KeepPolicy.parse("field:rank")))
    assert (verdict.kept, verdict.replaced) == (True, "a")


# ------------------------------------------------------------ cheap reruns


def test_a_rerun_of_dedup_fingerprints_nothing_and_gives_the_same_verdicts(database_url, sample_paragraphs):
    records = _crawl(sample_paragraphs)
    first_counts, again_counts = DedupCounts(), DedupCounts()
    first = [v for _, v in dedup(records, store=database_url, counts=first_counts)]
    with Fingerprinter(DEFAULT, 1) as fingerprinter:
        again = [
            v
            for _, _, v in dedup_rows(
                lambda: [(f"r{i}", r) for i, r in enumerate(records)],
                store=database_url,
                counts=again_counts,
                fingerprinter=fingerprinter,
            )
        ]
        assert fingerprinter.submitted == 0
    assert (first_counts.fingerprinted, first_counts.unchanged) == (len(records), 0)
    assert (again_counts.fingerprinted, again_counts.unchanged) == (0, len(records))
    assert again == first
    # One record edited: only it is fingerprinted (and, its key stored with another text, refused).
    changed = [dict(r) for r in records]
    changed[0]["text"] += "（更新）"
    counts = DedupCounts()
    verdicts = [v for _, v in dedup(changed, store=database_url, counts=counts)]
    assert (counts.fingerprinted, counts.unchanged) == (1, len(records) - 1)
    assert "already stored with another text" in verdicts[0].problem


def test_cli_dedup_rerun_says_how_many_records_it_did_not_fingerprint_again(database_url, tmp_path, sample_paragraphs):
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(
            json.dumps({"key": f"k{i}", "text": t}, ensure_ascii=False) + "\n"
            for i, t in enumerate(sample_paragraphs[:12])
        ),
        encoding="utf-8",
    )
    env = {"SIMHASH_STORE_URL": str(database_url)}
    first = CliRunner().invoke(app, ["dedup", str(path), "-o", str(tmp_path / "1.jsonl")], env=env)
    assert first.exit_code == 0 and "not fingerprinted again" not in first.stderr
    again = CliRunner().invoke(app, ["dedup", str(path), "-o", str(tmp_path / "2.jsonl")], env=env)
    assert again.exit_code == 0
    assert "stored before with the same text, not fingerprinted again: 12" in again.stderr
    assert (tmp_path / "2.jsonl").read_bytes() == (tmp_path / "1.jsonl").read_bytes()


def test_a_rerun_of_add_jsonl_sends_nothing_to_the_workers(database_url, tmp_path, sample_paragraphs):
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(
            json.dumps({"key": f"k{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(sample_paragraphs)
        ),
        encoding="utf-8",
    )
    from simhash_store.formats import read_jsonl

    with Store(database_url) as store:
        for expected_submitted, expected_added in ((len(sample_paragraphs), len(sample_paragraphs)), (0, 0)):
            with path.open("rb") as stream, Fingerprinter(DEFAULT, 1) as fingerprinter:
                summary = add(store, read_jsonl(stream, str(path)), fingerprinter=fingerprinter)
                assert (fingerprinter.submitted, summary.added) == (expected_submitted, expected_added)
        assert summary.unchanged == len(sample_paragraphs)
    result = CliRunner().invoke(app, ["add", "--jsonl", str(path)], env={"SIMHASH_STORE_URL": str(database_url)})
    assert result.exit_code == 0 and f"unchanged {len(sample_paragraphs)}" in result.output


def test_query_of_records_stored_with_the_same_text_fingerprints_only_the_others(
    database_url, tmp_path, sample_paragraphs, monkeypatch
):
    from simhash_store import ingest

    records = [{"key": f"k{i}", "text": t} for i, t in enumerate(sample_paragraphs[:20])]
    path = tmp_path / "in.jsonl"
    _write_records(path, records, "jsonl")
    env = {"SIMHASH_STORE_URL": str(database_url)}
    assert CliRunner().invoke(app, ["add", "--jsonl", str(path), "-q"], env=env).exit_code == 0
    # The library: stored records take their stored fingerprint; an edited one and a new one are fingerprinted.
    changed = [
        Source("k0", text=records[0]["text"] + "（更新）", size=1),
        Source("k1", text=records[1]["text"], size=1),
        Source("new", text=sample_paragraphs[30], size=1),
    ]
    with Store(database_url) as store, Fingerprinter(DEFAULT, 1) as fingerprinter:
        found = list(
            ingest.fingerprint_sources(changed, store.scheme, fingerprinter=fingerprinter, stored=store.stored_digests)
        )
        assert fingerprinter.submitted == 2
        assert [p.fingerprint for p in found] == [fingerprint(s.text) for s in changed]
    # The command: query --jsonl of the stored file sends nothing to the workers, and finds each record itself.
    sent: list[int] = []
    real = ingest.Fingerprinter.submit

    def counted_submit(self, tasks):
        sent.append(len(tasks))
        return real(self, tasks)

    monkeypatch.setattr(ingest.Fingerprinter, "submit", counted_submit)
    result = CliRunner().invoke(app, ["query", "--jsonl", str(path), "--json", "-k", "0"], env=env)
    assert result.exit_code == 0, result.output
    assert sum(sent) == 0
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [[m["key"] for m in a["matches"]] for a in answers] == [[r["key"]] for r in records]


# ------------------------------------------------------------ data safety


def test_an_input_changed_between_the_two_readings_fails_instead_of_mixing_verdicts(database_url, sample_paragraphs):
    readings = [
        [("in:1", {"key": "a", "text": sample_paragraphs[0]}), ("in:2", {"key": "b", "text": sample_paragraphs[1]})],
        [("in:1", {"key": "b", "text": sample_paragraphs[1]}), ("in:2", {"key": "a", "text": sample_paragraphs[0]})],
    ]
    calls = iter(readings)
    with pytest.raises(InputChangedError, match="in:1: the input changed while it was read twice"):
        list(dedup_rows(lambda: next(calls), store=database_url, keep="longest"))


def test_cli_second_reading_that_differs_fails_in_one_line_and_writes_nothing(
    database_url, tmp_path, sample_paragraphs, monkeypatch
):
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(
            json.dumps({"key": f"k{i}", "text": t}, ensure_ascii=False) + "\n"
            for i, t in enumerate(sample_paragraphs[:4])
        ),
        encoding="utf-8",
    )
    from simhash_store import formats

    real, calls = formats.read_records, []

    def read_then_change(*args, **kwargs):  # the file is rewritten after the first reading, as a crawler might
        calls.append(1)
        if len(calls) == 2:
            path.write_text(path.read_text(encoding="utf-8").replace("k0", "k9"), encoding="utf-8")
        return real(*args, **kwargs)

    monkeypatch.setattr(formats, "read_records", read_then_change)
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app, ["dedup", str(path), "--keep", "longest", "-o", str(out)], env={"SIMHASH_STORE_URL": str(database_url)}
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "the input changed while it was read twice" in result.output
    assert not out.exists()


def test_annotate_refuses_to_write_over_the_key_field_and_over_input_fields(database_url, tmp_path, sample_paragraphs):
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps({"cluster": "c1", "text": sample_paragraphs[0]}, ensure_ascii=False)
        + "\n"
        + json.dumps({"cluster": "c2", "text": sample_paragraphs[1], "distance": "far"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    env = {"SIMHASH_STORE_URL": str(database_url)}
    result = CliRunner().invoke(app, ["dedup", str(path), "--key-field", "cluster", "--annotate"], env=env)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: --annotate writes a field 'cluster', which is the input's key or text field here: "
        "rename that field, or leave out --annotate"
    ]
    with Store(database_url) as store:
        assert store.count() == 0  # refused before any work
    (tmp_path / "two.jsonl").write_text(
        json.dumps({"key": "a", "text": sample_paragraphs[0]}, ensure_ascii=False)
        + "\n"
        + json.dumps({"key": "b", "text": sample_paragraphs[1], "distance": "far"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["dedup", str(tmp_path / "two.jsonl"), "--annotate", "-o", str(out)], env=env)
    assert result.exit_code == 1
    assert "failed: " in result.stderr and "has a field 'distance', which --annotate writes" in result.stderr
    assert [json.loads(line)["key"] for line in out.read_text(encoding="utf-8").splitlines()] == ["a"]
    with Store(database_url) as store:
        assert store.get("b") is None


def test_a_record_the_output_cannot_hold_is_not_stored_and_counted_once(database_url, tmp_path, sample_paragraphs):
    text = sample_paragraphs[2]
    path = tmp_path / "in.jsonl"
    # The first copy holds a lone surrogate: it must not become the representative of the second.
    path.write_text(
        '{"key": "bad", "text": '
        + json.dumps(text, ensure_ascii=False)
        + ', "note": "\\ud800"}\n'
        + json.dumps({"key": "good", "text": text + "（完）"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["dedup", str(path), "-o", str(out)], env={"SIMHASH_STORE_URL": str(database_url)})
    assert result.exit_code == 1
    assert "kept 1, duplicates 0, bad records 1" in result.stderr
    assert result.stderr.count("failed: ") == 1
    assert [json.loads(line)["key"] for line in out.read_text(encoding="utf-8").splitlines()] == ["good"]
    with Store(database_url) as store:
        assert store.get("bad") is None
        assert store.memberships(["good"])["good"].is_representative


# ------------------------------------------------------------ the revision


def test_clusters_of_an_earlier_revision_upgrade_in_place_and_downgrade(empty_database_url):
    from sqlalchemy import create_engine

    engine = create_engine(empty_database_url)
    try:
        migrate.upgrade(engine, "0009")
        url = empty_database_url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(
                "INSERT INTO simhash.store_info (singleton, scheme_name, scheme, cluster_max_distance) "
                "VALUES (true, %s, %s::jsonb, 3)",
                (DEFAULT.name, DEFAULT.to_json()),
            )
            # Ids in key order, input order the other way: what a store of 0009 holds.
            connection.execute(
                "INSERT INTO simhash.documents (id, key, fingerprint, cluster) VALUES "
                "(1, 'a', 0, 1), (2, 'b', 1, 1), (3, 'c', 4095, 3)"
            )
            connection.execute("INSERT INTO simhash.cluster_heads VALUES (1, 1), (3, 3)")
        migrate.upgrade(engine)
        with psycopg.connect(url, autocommit=True) as connection:
            assert connection.execute("SELECT id, arrival, cluster FROM simhash.documents ORDER BY id").fetchall() == [
                (1, 1, 1),
                (2, 2, 1),
                (3, 3, 3),
            ]
            assert connection.execute("SELECT keep_policy FROM simhash.store_info").fetchone() == (None,)
        with Store(empty_database_url) as store:
            assert store.keep_policy() == KeepPolicy()
            before = store.memberships(["a", "b", "c"])
            store.recluster()
            assert store.memberships(["a", "b", "c"]) == before
        migrate.downgrade(engine, "0009")
        with psycopg.connect(url, autocommit=True) as connection:
            columns = {
                row[0]
                for row in connection.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = 'simhash'"
                )
            }
            assert not {"arrival", "keep_value", "keep_policy"} & columns
            assert connection.execute("SELECT count(*) FROM simhash.cluster_heads").fetchone() == (2,)
    finally:
        engine.dispose()


def test_cli_dedup_lists_the_first_twenty_replacements_and_counts_the_rest(database_url, tmp_path, sample_paragraphs):
    # 25 families, each repost before its earlier-dated original: 25 replacements, a screenful at most.
    texts = sample_paragraphs[:25]
    records = [
        {"key": f"repost{n}", "text": "【转载】" + t + "（完）", "published_at": "2024-05-02"}
        for n, t in enumerate(texts)
    ]
    records += [{"key": f"original{n}", "text": t, "published_at": "2024-05-01"} for n, t in enumerate(texts)]
    source = tmp_path / "in.jsonl"
    _write_records(source, records, "jsonl")
    env = {"SIMHASH_STORE_URL": str(database_url)}
    args = ["dedup", str(source), "--keep", "field:published_at:asc", "-o", str(tmp_path / "out.jsonl")]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    replaced = result.stderr.count("  replaced: repost")
    total = int(result.stderr.split("representatives replaced by a better copy: ")[1].split()[0])
    assert total >= 21 and replaced == 20, result.stderr  # near copies of each other may merge families
    assert f"  ... and {total - 20} more" in result.stderr


def test_a_keep_field_value_postgresql_cannot_hold_counts_as_missing_instead_of_failing_the_run(
    database_url, tmp_path, sample_paragraphs
):
    # A string holding NUL is a string (comparable) but jsonb cannot hold it: the batch's COPY failed,
    # and dedup died with a traceback, writing nothing. Now such a value counts as missing.
    first, second = sample_paragraphs[:2]
    records = [
        {"key": "a", "text": first, "rank": 5},
        {"key": "b", "text": first + "。", "rank": "x\u0000y"},
        {"key": "c", "text": second, "rank": {"deep": ["\u0000"]}},
        {"key": "d", "text": second + "。", "rank": 1},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    env = {"SIMHASH_STORE_URL": str(database_url)}
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["dedup", str(path), "--keep", "field:rank:asc", "-o", str(out), "-q"], env=env)
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["key"] for line in out.read_text(encoding="utf-8").splitlines()] == ["a", "d"]
    # add of records into the store kept by that field: the same value is stored as missing.
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"key": "e", "text": sample_paragraphs[2], "rank": "\u0000"}) + "\n", encoding="utf-8")
    added = CliRunner().invoke(app, ["add", "--jsonl", str(more)], env=env)
    assert added.exit_code == 0, added.output
    with Store(database_url) as store, store.engine.connect() as connection:
        stored = dict(connection.execute(sql_text("SELECT key, keep_value FROM simhash.documents")).all())
    assert stored == {"a": 5, "b": None, "c": None, "d": 1, "e": None}


def test_recluster_prints_a_keep_field_name_with_control_characters_escaped(database_url):
    # The field's name is printed back (and stored): an ESC sequence in it reached the terminal raw.
    with Store(database_url) as store:
        store.add([NewDocument("a", 1), NewDocument("b", 3)])
    result = CliRunner().invoke(
        app, ["recluster", "--keep", "field:\x1b]0;title\x07\u202e:desc"], env={"SIMHASH_STORE_URL": str(database_url)}
    )
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert "keeping field:\\x1b]0;title\\x07\\u202e:desc" in result.output
    with Store(database_url) as store:
        assert store.keep_policy().field == "\x1b]0;title\x07\u202e"  # stored as given


def test_recluster_by_another_field_than_the_one_whose_values_are_stored_is_refused(database_url, tmp_path):
    # Each document keeps the value of the field the store was kept by; `recluster --keep field:y`
    # on a store kept by field:x ranked the documents by x's values, recorded as field:y, silently.
    text = "中华人民共和国保护人民的合法权益，维护社会秩序，保障公民的基本权利和自由。"
    records = [
        {"key": "a", "text": text, "x": 1, "y": 3},
        {"key": "b", "text": text + "（转载）", "x": 2, "y": 1},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    env = {"SIMHASH_STORE_URL": str(database_url)}
    done = CliRunner().invoke(
        app, ["dedup", str(source), "-o", str(tmp_path / "out.jsonl"), "--keep", "field:x"], env=env
    )
    assert done.exit_code == 0, done.output
    refused = CliRunner().invoke(app, ["recluster", "--keep", "field:y"], env=env)
    assert refused.exit_code == 1, refused.output
    assert refused.output.startswith("Error: the store's documents hold the values of field 'x'"), refused.output
    assert refused.output.count("\n") == 1, refused.output
    with Store(database_url) as store:
        assert str(store.keep_policy()) == "field:x:asc"
        assert store.memberships(["b"])["b"].representative == "a"
    # The same field the other way round is the same values: accepted.
    again = CliRunner().invoke(app, ["recluster", "--keep", "field:x:desc"], env=env)
    assert again.exit_code == 0, again.output
    with Store(database_url) as store:
        assert store.memberships(["a"])["a"].representative == "b"
    # Kept by longest since, the store names no field: x's values stay, unlabelled, and keeping by
    # field:y ranked by them under y's name, silently. Refused, whichever field is asked for.
    longest = CliRunner().invoke(app, ["recluster", "--keep", "longest"], env=env)
    assert longest.exit_code == 0, longest.output
    for field in ("field:y", "field:x"):
        refused = CliRunner().invoke(app, ["recluster", "--keep", field], env=env)
        assert refused.exit_code == 1, refused.output
        assert refused.output.startswith("Error: the store's documents hold values of the field its clusters were")
        assert refused.output.count("\n") == 1, refused.output
    with Store(database_url) as store:
        assert str(store.keep_policy()) == "longest"


@pytest.mark.parametrize(
    ("field", "direction", "kept"),
    [("published_at", "desc", "c"), ("published_at", "asc", "b"), ("day", "desc", "c"), ("price", "asc", "c")],
)
def test_parquet_dates_times_and_decimals_rank_by_their_values(
    database_url, tmp_path, sample_paragraphs, field, direction, kept
):
    # A Parquet timestamp[us], date32 or decimal keep field ranked as missing: every copy tied and
    # the first was kept, silently, whatever the direction (hostile/parquet_keep_types.py).
    import datetime
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    text = sample_paragraphs[3]
    utc = datetime.timezone.utc
    table = pa.table(
        {
            "key": ["a", "b", "c"],
            "text": [text, "【转载】" + text, text + "（完）"],
            "published_at": pa.array(
                [
                    datetime.datetime(2024, 6, 2, 8, tzinfo=utc),
                    datetime.datetime(2024, 6, 1, tzinfo=utc),
                    datetime.datetime(2024, 6, 3, tzinfo=utc),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array([datetime.date(2024, 6, 2), datetime.date(2024, 6, 1), datetime.date(2024, 6, 3)]),
            "price": pa.array(
                [decimal.Decimal("10.50"), decimal.Decimal("9.75"), decimal.Decimal("2.00")], pa.decimal128(6, 2)
            ),
        }
    )
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    output = tmp_path / "out.parquet"
    env = {"SIMHASH_STORE_URL": str(database_url)}
    result = CliRunner().invoke(
        app, ["dedup", str(source), "-o", str(output), "--keep", f"field:{field}:{direction}"], env=env
    )
    assert result.exit_code == 0, result.output
    assert [r["key"] for r in pq.read_table(output).to_pylist()] == [kept]
    with Store(database_url) as store:
        assert store.memberships(["a"])["a"].representative == kept


def _as_role(url, role: str) -> str:
    """A psycopg URL of ``url``'s database for ``role`` (trust authentication)."""
    return url.set(drivername="postgresql", username=role, password=None).render_as_string(hide_password=False)


def test_a_keep_value_too_long_to_compare_ranks_as_missing_wherever_it_comes_from(
    database_url, make_role, sample_paragraphs
):
    # Another role (a writer, a member of pg_write_all_data, another application) may store any
    # jsonb as a keep value; the owner's writes read the representatives' values. A string of over
    # 1,000 characters ranks as missing, from the store as from an input, and is never read whole.
    from roles import WRITER_GRANTS  # tests/roles.py

    policy = KeepPolicy.parse("field:published_at:asc")
    assert policy.value_of({"published_at": "0" * 1001}) is None
    assert policy.value_of({"published_at": "0" * 1000}) == "0" * 1000
    assert policy.value_of({"published_at": 10**1000}) is None and policy.value_of({"published_at": 10**999})
    text = sample_paragraphs[7]
    with Store(database_url) as store:
        store.init()
        store.recluster(keep="field:published_at:asc")
        store.add([NewDocument("a", fingerprint(text), keep_value="2024-06-02")])
    writer = make_role(database_url, *WRITER_GRANTS, prefix="simhash_writer")
    with psycopg.connect(_as_role(database_url, writer)) as connection:
        connection.execute("UPDATE simhash.documents SET keep_value = to_jsonb(repeat('0', 2000)) WHERE key = 'a'")
    with Store(database_url) as store:
        result = store.add([NewDocument("b", fingerprint("【转载】" + text), keep_value="2024-06-03")])
        assert result.replaced == [("a", "b")], result
        assert store.memberships(["a"])["a"].representative == "b"


def test_keep_values_another_role_made_huge_cost_the_owners_writes_no_memory(
    database_url, make_role, sample_paragraphs
):
    # A writer set every representative's keep value to a 5 MB string (50 KB in the table,
    # compressed): every later write into the clustered store read them all, whatever the keep rule
    # (a one-document add took 1.8 GB and 9 s with 40 values of 20 MB); so did recluster.
    import tracemalloc

    from roles import WRITER_GRANTS  # tests/roles.py

    with Store(database_url) as store:
        store.init()
        store.recluster(keep="field:published_at")
        store.add(
            [
                NewDocument(f"p{i}", fingerprint(t), keep_value=f"2024-{i:02d}")
                for i, t in enumerate(sample_paragraphs[:30])
            ]
        )
    writer = make_role(database_url, *WRITER_GRANTS, prefix="simhash_writer")
    with psycopg.connect(_as_role(database_url, writer)) as connection:
        connection.execute("UPDATE simhash.documents SET keep_value = to_jsonb(repeat('x', 5000000) || id)")
    with Store(database_url) as store:
        for keep, added in (("field:published_at", 35), ("first", 36)):  # values read up to what compares; none
            store.recluster(keep=keep)
            tracemalloc.start()
            try:
                store.add([NewDocument(f"new{added}", fingerprint(sample_paragraphs[added]), keep_value="2024")])
                store.recluster()
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert peak < 40_000_000, (keep, peak)  # 30 values of 5 MB: 150 MB as text, more parsed
            assert store.memberships([f"new{added}"])[f"new{added}"].representative == f"new{added}"


def test_parquet_timestamps_of_other_time_zones_rank_as_the_moments_they_are(database_url, tmp_path, sample_paragraphs):
    # Timestamps with a time zone ranked by their text: a copy at 08:00 in New York (12:00 UTC) sorted
    # before one at 10:00 UTC, and in one Berlin column 02:15+01:00 (after the clocks fell back) before
    # 02:45+02:00, half an hour earlier: the older copy was kept (hostile/parquet_keep_time_zones.py).
    import datetime
    import zoneinfo

    import pyarrow as pa
    import pyarrow.parquet as pq

    text = sample_paragraphs[3]
    utc, new_york = datetime.timezone.utc, zoneinfo.ZoneInfo("America/New_York")
    files = {
        "utc": ("UTC", [("u", text, datetime.datetime(2024, 6, 3, 10, tzinfo=utc))]),
        "ny": ("America/New_York", [("n", "【转载】" + text, datetime.datetime(2024, 6, 3, 8, tzinfo=new_york))]),
        "berlin": (
            "Europe/Berlin",
            [
                ("b1", sample_paragraphs[4], datetime.datetime(2024, 10, 27, 0, 45, tzinfo=utc)),  # 02:45+02:00
                (
                    "b2",
                    sample_paragraphs[4] + "（完）",
                    datetime.datetime(2024, 10, 27, 1, 15, tzinfo=utc),
                ),  # 02:15+01:00
            ],
        ),
    }
    sources = []
    for name, (zone, rows) in files.items():
        keys, texts, moments = zip(*rows)
        table = pa.table({"key": keys, "text": texts, "published_at": pa.array(moments, pa.timestamp("us", tz=zone))})
        sources.append(tmp_path / f"{name}.parquet")
        pq.write_table(table, sources[-1])
    output = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        ["dedup", *map(str, sources), "-o", str(output), "--keep", "field:published_at:desc"],
        env={"SIMHASH_STORE_URL": str(database_url)},
    )
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(line)["key"] for line in output.read_text().splitlines()) == ["b2", "n"]
