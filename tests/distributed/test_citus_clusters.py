"""Persistent clusters on a Citus store give, for the same input, what one server gives: the same
cluster ids, representatives and members, through every write and read that keeps them."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import psycopg
from sqlalchemy import create_engine
from typer.testing import CliRunner

from simhash_store import clusters, distributed, migrate
from simhash_store.cli import app
from simhash_store.store import NewDocument, Store

from sample_text import laws, paragraph_records, revision_pairs  # tests/sample_text.py: the text shipped in tests/data

runner = CliRunner()
K = 11


def cli(url: str, *args: str):
    result = runner.invoke(app, ["--db", url, *args])
    assert result.exit_code == 0, (args, result.output)
    return result


def near_copy(text: str, rng: random.Random) -> str:
    """The text with a few characters changed, as a republished copy has (within K of it, mostly)."""
    characters = list(text)
    for _ in range(3):
        characters[rng.randrange(len(characters))] = rng.choice("的一是在不了有和人这中大为上个国")
    return "".join(characters)


def write_jsonl(path: Path, records: list[tuple[str, str]]) -> str:
    path.write_text("".join(json.dumps({"key": key, "text": text}, ensure_ascii=False) + "\n" for key, text in records))
    return str(path)


def inputs(directory: Path) -> dict[str, str]:
    """Real text (tests/data) in five files: originals, near copies of them, and law revisions."""
    rng = random.Random(25)
    wiki = [(f"wiki/{r['id']}", r["text"]) for r in paragraph_records()]
    law = [(f"law/{number:02}", text) for number, text in enumerate(laws())]
    copies = [(f"copy/{key}", near_copy(text, rng)) for key, text in wiki[::3]]
    older = [(f"revision/{number}/old", old) for number, (old, _, _) in enumerate(revision_pairs())]
    newer = [(f"revision/{number}/new", new) for number, (_, new, _) in enumerate(revision_pairs())]
    again = [(f"again/{key}", near_copy(text, rng)) for key, text in wiki[1::4] + law[::5]]
    return {
        "first": write_jsonl(directory / "first.jsonl", wiki[:20] + law[:10] + older),
        "second": write_jsonl(directory / "second.jsonl", wiki[20:] + copies[:7] + newer[:3]),
        "third": write_jsonl(directory / "third.jsonl", law[10:] + copies[7:] + newer[3:]),
        "dedup": write_jsonl(directory / "dedup.jsonl", again + wiki[:5]),
        # wiki/DEV_0 represents its cluster (stored first): re-written with unrelated text, it leaves it.
        "rewrite": write_jsonl(directory / "rewrite.jsonl", [("wiki/DEV_0", laws()[3][:600])]),
    }


def snapshot(url: str, dedup_output: Path) -> dict[str, str]:
    """Everything a reader sees of the clusters, ordered, as text to compare byte for byte."""
    with psycopg.connect(url) as connection:
        sql = {
            "documents": "SELECT id, key, cluster FROM simhash.documents ORDER BY key",
            "heads": "SELECT cluster, representative_id FROM simhash.cluster_heads ORDER BY cluster",
            "view": "SELECT cluster, representative_key, size FROM simhash.clusters ORDER BY cluster",
            "distance": "SELECT cluster_max_distance FROM simhash.store_info",
        }
        seen = {
            name: json.dumps(connection.execute(statement).fetchall(), ensure_ascii=False)
            for name, statement in sql.items()
        }
        keys = [row[1] for row in json.loads(seen["documents"])]
        # Keys given, not read from documents: on Citus a function that reads documents cannot run
        # inside a query over the shards (nested distributed execution); with given keys, it can.
        seen["cluster_of"] = json.dumps(
            connection.execute(
                "SELECT k, simhash.cluster_of(k) FROM pg_catalog.unnest(%s::text[]) AS k ORDER BY k",
                (keys + ["absent"],),
            ).fetchall(),
            ensure_ascii=False,
        )
    with Store(url) as store:
        seen["memberships"] = repr(sorted(store.memberships(keys + ["absent"]).items()))
        seen["stored_clusters"] = repr(store.stored_clusters(min_size=1))
        seen["state"] = repr(store.cluster_state())
    seen["dedup"] = dedup_output.read_text()
    return seen


def test_a_clustered_store_on_citus_answers_as_on_one_server(citus_url, single_node_url, tmp_path, monkeypatch):
    """The same writes, in the same order, on one server and on Citus: recluster, add on both of its
    paths (representatives compared in memory, and found by radius search in SQL), dedup, a
    representative re-written with other text and one removed; then every read of the clusters."""
    files = inputs(tmp_path)
    seen = {}
    for url in (single_node_url, citus_url):
        cli(url, *(["init", "--distributed"] if url == citus_url else ["init"]))
        cli(url, "add", "--jsonl", files["first"], "-j", "1", "-q")
        cli(url, "recluster", "-k", str(K), "--keep", "longest", "-q")  # the longest copy represents its cluster
        cli(url, "add", "--jsonl", files["second"], "-j", "1", "-q")
        with monkeypatch.context() as patch:  # beyond this many clusters, a write searches them in SQL
            patch.setattr(clusters, "IN_MEMORY_REPRESENTATIVES", 0)
            cli(url, "add", "--jsonl", files["third"], "-j", "1", "-q")
        output = tmp_path / f"dedup-{'citus' if url == citus_url else 'single'}.jsonl"
        cli(url, "dedup", files["dedup"], "-o", str(output), "--annotate", "-j", "1")
        cli(url, "add", "--jsonl", files["rewrite"], "-j", "1", "-q")
        cli(url, "remove", "law/05")
        seen[url] = snapshot(url, output)
    single, citus = seen[single_node_url], seen[citus_url]
    for name in single:
        assert citus[name] == single[name], name
    # The input did make clusters of several documents, and both kinds of change happened.
    view = json.loads(single["view"])
    assert sum(size > 1 for _, _, size in view) >= 10, view
    assert '"duplicate_of"' in single["dedup"] and '"again/' in single["dedup"]
    documents = {key: cluster for _, key, cluster in json.loads(single["documents"])}
    assert documents["wiki/DEV_0"] != documents["copy/wiki/DEV_0"]  # the rewrite left its cluster...
    assert dict((c, r) for c, r, _ in view)[documents["copy/wiki/DEV_0"]] == "copy/wiki/DEV_0"  # ...to its copy


def test_a_clustered_store_is_distributed_in_place(citus_url, tmp_path):
    """init --distributed on a store that keeps clusters: its clusters are kept, and writes go on clustering."""
    records = [(f"wiki/{r['id']}", r["text"]) for r in paragraph_records()]
    rng = random.Random(7)
    cli(citus_url, "init")  # one server first (Citus installed, not used)
    cli(citus_url, "add", "--jsonl", write_jsonl(tmp_path / "first.jsonl", records[:30]), "-j", "1", "-q")
    cli(citus_url, "recluster", "-k", str(K), "-q")
    with Store(citus_url) as store:
        before = store.stored_clusters(min_size=1)
        store.init(distributed=True)
        assert store.stored_clusters(min_size=1) == before
        assert store.cluster_state() == (K, False)
    copy = ("copy/wiki/DEV_3", near_copy(records[3][1], rng))
    cli(citus_url, "add", "--jsonl", write_jsonl(tmp_path / "more.jsonl", [copy]), "-j", "1", "-q")
    with Store(citus_url) as store:
        found = store.memberships(["copy/wiki/DEV_3"])["copy/wiki/DEV_3"]
        assert found.representative == "wiki/DEV_3"
    with psycopg.connect(citus_url) as connection:
        layout = dict(connection.execute("SELECT logicalrelid::text, partmethod FROM pg_dist_partition").fetchall())
    assert layout["simhash.documents"] == "h" and layout["simhash.cluster_heads"] == "n"


def test_a_store_distributed_at_an_earlier_revision_keeps_clusters_once_upgraded(citus_url, tmp_path):
    """A store distributed by an earlier release (revision 0005, when clusters were refused there):
    the next write upgrades it in place, and from then on it keeps clusters."""
    engine = create_engine(citus_url.replace("postgresql:", "postgresql+psycopg:"))
    migrate.upgrade(engine, "0005")
    distributed.distribute_store(engine)
    records = [(f"wiki/{r['id']}", r["text"]) for r in paragraph_records()[:10]]
    cli(citus_url, "add", "--jsonl", write_jsonl(tmp_path / "first.jsonl", records), "-j", "1", "-q")
    assert migrate.current_revision(engine) == migrate.head_revision()
    cli(citus_url, "recluster", "-k", str(K), "-q")
    copy = ("copy/wiki/DEV_2", near_copy(records[2][1], random.Random(3)))
    cli(citus_url, "add", "--jsonl", write_jsonl(tmp_path / "more.jsonl", [copy]), "-j", "1", "-q")
    with Store(citus_url) as store:
        assert store.memberships(["copy/wiki/DEV_2"])["copy/wiki/DEV_2"].representative == "wiki/DEV_2"
        assert store.cluster_state() == (K, False)
    engine.dispose()


def test_concurrent_writers_through_the_coordinator_put_near_duplicates_in_one_cluster(citus_url):
    """The cluster lock is the coordinator's advisory lock: two writers storing near-duplicates at
    the same moment take turns, and each pair ends in one cluster."""
    rounds = 8
    rng = random.Random(4)
    bases = [rng.getrandbits(64) for _ in range(rounds)]
    with Store(citus_url) as store:
        store.init(distributed=True)
        store.recluster(K)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(side: int) -> None:
        try:
            with Store(citus_url) as store:
                for n, base in enumerate(bases):
                    barrier.wait()
                    store.add([NewDocument(f"{n}/{side}", base ^ (0b11 << (10 * side)))])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=writer, args=(side,)) for side in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    with psycopg.connect(citus_url) as connection:
        found = dict(connection.execute("SELECT key, cluster FROM simhash.documents").fetchall())
    assert all(found[f"{n}/0"] == found[f"{n}/1"] is not None for n in range(rounds)), found


def test_dedup_reads_its_clusters_back_when_citus_writes_over_several_connections(
    citus, citus_url, single_node_url, tmp_path, monkeypatch
):
    """A clustered batch reads its memberships back after its insert, in its transaction. Citus runs
    a multi-shard write over several connections to a worker when it has them open (the radius
    searches of a store past the in-memory bound) or its tasks start slowly (a loaded machine), and
    then refused that read: `dedup --ray` into Citus failed so under load. Forced here for every
    statement (citus.force_max_query_parallelization); the writes go over one connection a worker."""
    name = citus_url.rsplit("/", 1)[1]
    citus.execute(f'ALTER DATABASE "{name}" SET citus.force_max_query_parallelization = on', name)
    files = inputs(tmp_path)
    monkeypatch.setattr(clusters, "IN_MEMORY_REPRESENTATIVES", 0)  # a radius search per document
    outputs = []
    for url in (single_node_url, citus_url):
        cli(url, *(["init", "--distributed"] if url == citus_url else ["init"]))
        for part in ("first", "dedup"):
            output = tmp_path / f"{part}-{len(outputs)}.jsonl"
            cli(url, "dedup", files[part], "-o", str(output), "--annotate", "--batch-size", "7", "-j", "1")
            outputs.append(output.read_bytes())
    assert outputs[:2] == outputs[2:]
    assert b'"duplicate_of": "' in outputs[1]


def test_a_keep_value_corrected_under_the_same_text_is_taken_up_on_citus_as_on_one_server(
    citus_url, single_node_url, tmp_path
):
    """dedup into a store kept by a field, then again with one copy's date corrected (same texts): the
    corrected copy takes over its cluster on Citus as on one server, and the outputs are the same."""
    rng = random.Random(7)
    originals = [(f"wiki/{r['id']}", r["text"]) for r in paragraph_records()[:12]]
    records = [
        {"key": key, "text": text, "published_at": f"2024-06-{10 + n:02}"} for n, (key, text) in enumerate(originals)
    ] + [
        {"key": f"copy/{key}", "text": near_copy(text, rng), "published_at": f"2024-07-{10 + n:02}"}
        for n, (key, text) in enumerate(originals[:6])
    ]
    source = tmp_path / "in.jsonl"
    seen = {}
    for url in (single_node_url, citus_url):
        cli(url, *(["init", "--distributed"] if url == citus_url else ["init"]))
        outputs = []
        records[-1]["published_at"] = "2024-07-15"
        for corrected in (False, True):
            if corrected:
                records[-1]["published_at"] = "2024-01-01"  # copy/<sixth original> was published first
            source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
            output = tmp_path / f"out-{len(seen)}-{corrected}.jsonl"
            cli(url, "dedup", str(source), "-o", str(output), "--annotate", "-j", "1", "--keep", "field:published_at")
            outputs.append(output.read_text())
        seen[url] = outputs
    assert seen[citus_url] == seen[single_node_url]
    before, after = ({json.loads(line)["key"]: json.loads(line) for line in o.splitlines()} for o in seen[citus_url])
    copy, original = records[-1]["key"], originals[5][0]
    assert before[copy]["duplicate_of"] == original, before[copy]
    assert after[copy]["duplicate_of"] is None and after[original]["duplicate_of"] == copy, (
        after[copy],
        after[original],
    )
