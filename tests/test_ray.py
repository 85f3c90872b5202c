"""simhash_store.ray_data and `dedup --ray` on a real local Ray cluster: a head and two worker nodes.

The answers must be those of the single-machine code over the same records: fingerprints,
verdicts, cluster ids and annotations, byte for byte after ordering.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simhash_store import clusters, dedup, fingerprint
from simhash_store.cli import app
from simhash_store.fingerprint import fingerprint_if_any

from sample_text import edit_walks  # tests/sample_text.py
from stored_clusters import stored_clusters  # tests/stored_clusters.py

# The README's test command installs the test extra only: there these tests skip, saying why. CI
# installs the ray extra, so there they run (a skip for this reason fails CI's strict-skips rule).
ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[test,ray]' to run these")
from simhash_store.ray_data import dedup_dataset, fingerprint_dataset, write_dataset  # noqa: E402
from simhash_store.scheme import DEFAULT  # noqa: E402
from simhash_store.store import Store, writes  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
RAY = str(Path(sys.executable).with_name("ray"))
SIMHASH_STORE = str(Path(sys.executable).with_name("simhash-store"))  # the command the README runs
# One cluster for the whole module, in one test process: CI runs these alone (`pytest -n 0 -m slow
# tests/test_ray.py`), since Ray workers started from several xdist processes at once took them down.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


def _free_ports(count: int) -> list[int]:
    """``count`` different free ports, all held while they are chosen (probed one at a time and
    closed, the same port came back twice: a node given it for two services did not start)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def _free_port() -> int:
    return _free_ports(1)[0]


# Every port a node listens on that would collide with another node's on the same machine.
_PORT_OPTIONS = (
    "--node-manager-port",
    "--object-manager-port",
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--metrics-export-port",
    "--runtime-env-agent-port",
)
RAY_START_SECONDS = 180  # a node's start took 30 s on the loaded 2-core test machine


def _start_node(arguments: list[str], env: dict[str, str]) -> None:
    """``ray start`` with a port of its own for each service; a start that fails or hangs is one message."""
    ports = [f"{name}={port}" for name, port in zip(_PORT_OPTIONS, _free_ports(len(_PORT_OPTIONS)))]
    try:
        subprocess.run(
            [RAY, "start", "--node-ip-address=127.0.0.1", *arguments, *ports],
            check=True,
            env=env,
            capture_output=True,
            text=True,
            timeout=RAY_START_SECONDS,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"ray start {arguments[0]} did not finish in {RAY_START_SECONDS} s", pytrace=False)
    except subprocess.CalledProcessError as exc:
        pytest.fail(
            f"ray start {arguments[0]} failed (exit {exc.returncode}): {exc.stderr.strip()[-2000:]}", pytrace=False
        )


def _ours(temp: str) -> list[int]:
    """Processes of our cluster: those whose command line names its temp dir."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if temp in (entry / "cmdline").read_bytes().decode("utf-8", "replace"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.fixture(scope="session")
def ray_address():
    """A head and two worker nodes of one CPU each, in a temp dir of their own; stopped at the end
    (only the processes of this temp dir: another user's Ray on the machine is left alone)."""
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    address = f"127.0.0.1:{_free_port()}"
    common = ["--num-cpus=1", "--object-store-memory=200000000", "--disable-usage-stats"]
    env = {**os.environ, "RAY_TMPDIR": temp}
    try:
        _start_node(
            ["--head", f"--port={address.split(':')[1]}", f"--temp-dir={temp}", "--include-dashboard=false", *common],
            env,
        )
        for _ in range(2):
            _start_node([f"--address={address}", *common], env)
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        deadline = time.monotonic() + 60
        while len([n for n in ray.nodes() if n["Alive"]]) < 3 and time.monotonic() < deadline:
            time.sleep(0.5)
        alive = len([n for n in ray.nodes() if n["Alive"]])
        assert alive == 3, f"{alive} of the cluster's 3 nodes alive 60 s after they started"
        yield address
    finally:
        ray.shutdown()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in _ours(temp):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            time.sleep(2)


@pytest.fixture
def connected(ray_address):
    if not ray.is_initialized():
        ray.init(address=ray_address, log_to_driver=False, logging_level="ERROR")
    return ray_address


def _records() -> list[dict]:
    """Real text: wiki paragraphs, laws, edited copies of the laws (near-duplicates), a wordless one."""
    records = []
    for line in (DATA / "wiki-paragraphs.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        records.append({"key": row["id"], "text": row["text"], "title": row["title"]})
    laws = sorted((DATA / "laws").glob("*.txt"))
    for path in laws:
        records.append({"key": path.stem, "text": path.read_text(encoding="utf-8"), "title": path.stem[:6]})
    for path in laws[:8]:
        text = path.read_text(encoding="utf-8")
        records.append(
            {"key": f"{path.stem}-copy", "text": text.replace("。", "，", 1) + "（责任编辑：王晓明）", "title": "copy"}
        )
    records.append({"key": "punctuation", "text": "。。。！", "title": "none"})
    return records


def _lines(records) -> list[str]:
    return sorted(json.dumps(r, ensure_ascii=False, sort_keys=True) for r in records)


def _second_database(pg_server):
    name = pg_server.create_database()
    return name, pg_server.url(name)


def test_fingerprints_on_the_workers_are_the_library_ones(connected):
    records = _records()
    rows = fingerprint_dataset(ray.data.from_items(records)).take_all()
    assert [r["key"] for r in rows] == [r["key"] for r in records]  # input order kept
    expected = [fingerprint_if_any(r["text"], DEFAULT) for r in records]
    assert [None if r["simhash"] is None else int(r["simhash"], 16) for r in rows] == expected
    assert expected[-1] is None and rows[-1]["_not_fingerprinted"].startswith("no words")


def test_a_fingerprinted_dataset_keeps_its_order_when_materialized(connected):
    """dedup_dataset materializes the fingerprinted records (for the join, or to read them twice).
    Ray 2.40's materialize runs in the current context, not the dataset's: in benchmarks/ray_speed.py
    (20,000 records, Ray started by ray.init) whole blocks came back out of order, and dedup gave
    other clusters. This smaller dataset did not come back out of order on the test cluster even
    without the fix: it guards the order, it does not reproduce the loss."""
    from simhash_store.ray_data import _materialized

    texts = [r["text"] for r in _records()]
    records = [{"key": f"r{n}", "text": texts[n % len(texts)][n % 50 : n % 50 + 60]} for n in range(3000)]
    ray.data.DataContext.get_current().execution_options.preserve_order = False  # Ray's default
    ds = ray.data.from_items(records)
    rows = _materialized(fingerprint_dataset(ds)).take_all()
    assert [r["key"] for r in rows] == [r["key"] for r in records]


def test_datasets_run_again_after_the_driver_reconnects(connected):
    """ray.shutdown() then ray.init() to the same cluster in one process (a notebook, a script
    that ran `dedup --ray`'s code first): Ray Data's handle from the first connection is stale."""
    records = _records()[:20]
    assert len(fingerprint_dataset(ray.data.from_items(records)).take_all()) == len(records)
    ray.shutdown()
    ray.init(address=connected, log_to_driver=False, logging_level="ERROR")
    rows = fingerprint_dataset(ray.data.from_items(records)).take_all()
    assert [r["key"] for r in rows] == [r["key"] for r in records]


def _no_search(*arguments):
    raise AssertionError("a batch searched the store for representatives: the join's lists were not used")


@pytest.mark.parametrize(("keep", "join"), [("first", False), ("longest", False), ("first", True), ("longest", True)])
def test_dedup_dataset_equals_single_machine_dedup(connected, database_url, pg_server, monkeypatch, keep, join):
    """``join``: the workers join the fingerprints on exact-match block keys and each batch reads the
    representatives near its records by key (forced here: at this size and k the library would not)."""
    records = _records()
    other, other_url = _second_database(pg_server)
    try:
        url = database_url.render_as_string(hide_password=False)
        ds = ray.data.from_items(records).repartition(6)
        ds.context.execution_options.preserve_order = False  # Ray's default: dedup_dataset must ask for the order
        with monkeypatch.context() as patch:
            if join:  # every batch reads the representatives the join names, and searches nothing
                patch.setattr(clusters, "_stored_candidates", _no_search)
            annotated = dedup_dataset(ds, url, 6, keep=keep, join=join, batch_size=9).take_all()
        with Store(other_url) as store:
            expected = [
                {**r, **v.annotation()} for r, v in dedup(records, store=store, max_distance=6, keep=keep, batch_size=9)
            ]
        stored = [stored_clusters(u) for u in (url, other_url)]
    finally:
        pg_server.drop_database(other)
    assert _lines(annotated) == _lines(expected)
    assert stored[0] == stored[1]
    assert any(r["duplicate_of"] for r in expected) and any(r["not_compared"] for r in expected)


def _shapes(annotated: list[dict], k: int) -> tuple[int, int, int]:
    """(ties, chains, exact copies) in an annotated run, in input order: a duplicate with two earlier
    representatives at its distance; a duplicate whose representative is farther than k from a
    record near it; a duplicate at distance 0."""
    value = {r["key"]: int(r["simhash"], 16) for r in annotated if r["simhash"]}
    heads: list[int] = []
    ties = chains = 0
    for record in annotated:
        if not record["simhash"]:
            continue
        mine = value[record["key"]]
        if record["duplicate_of"] is None:
            heads.append(mine)
            continue
        ties += sum(1 for h in heads if (h ^ mine).bit_count() == record["distance"]) > 1
        head = value[record["duplicate_of"]]
        chains += any((v ^ mine).bit_count() <= k < (v ^ head).bit_count() for v in value.values())
    return ties, chains, sum(1 for r in annotated if r["distance"] == 0 and r["duplicate_of"])


def _icu_database(pg_server) -> str:
    """A database whose text sorts by ICU's English collation ('a-b' after 'ab', 'B' after 'a'), not by bytes."""
    import sqlalchemy

    name = f"simhash_test_icu_{uuid.uuid4().hex[:12]}"
    try:
        pg_server._execute(
            f"CREATE DATABASE \"{name}\" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C.UTF-8'"
        )
    except sqlalchemy.exc.NotSupportedError as exc:
        if "ICU is not supported in this build" not in str(exc):
            raise
        pytest.skip("this server is built without ICU")
    return name


def _batch_path_refused(*arguments, **options):
    raise AssertionError("dedup_dataset decided batch by batch through the store: the in-memory path was not taken")


def _driver_copy_refused(*arguments, **options):
    raise AssertionError("the driver wrote the decided documents: the workers did not")


def _contents(url: str) -> list[tuple]:
    """What stored_clusters leaves out of each document: digest, metadata, stamp, keep value."""
    import psycopg
    from sqlalchemy.engine import make_url

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        return connection.execute(
            "SELECT id, key, digest, metadata, stamp, keep_value FROM simhash.documents ORDER BY id"
        ).fetchall()


@pytest.mark.parametrize(("join", "collation"), [(False, "C"), (True, "C"), (False, "icu")])
def test_dedup_dataset_decided_in_memory_equals_single_machine_dedup(
    connected, database_url, pg_server, monkeypatch, join, collation
):
    """keep first into an empty store: decided in memory (leaders over the run's pairs: the workers'
    join, or the all-pairs search on the driver) and stored in one COPY. Output and stored clusters
    (ids numbered by key within each batch, in the database's collation; arrivals; heads) are those of
    dedup in batches, with ties, chains, exact copies and a wordless record in the input."""
    from simhash_store import ray_data

    records = edit_walks()
    names = [_icu_database(pg_server), _icu_database(pg_server)] if collation == "icu" else []
    other, other_url = _second_database(pg_server)
    try:
        url = database_url.render_as_string(hide_password=False)
        if names:
            url, other_url = (pg_server.url(n).render_as_string(hide_password=False) for n in names)
        with monkeypatch.context() as patch:
            patch.setattr(ray_data, "dedup_rows", _batch_path_refused)
            patch.setattr(writes, "add_decided", _driver_copy_refused)
            ds = ray.data.from_items(records).repartition(5)
            annotated = dedup_dataset(ds, url, 4, join=join, batch_size=13).take_all()
        with Store(other_url) as store:
            expected = [{**r, **v.annotation()} for r, v in dedup(records, store=store, max_distance=4, batch_size=13)]
        stored = [(stored_clusters(u), _contents(u)) for u in (url, other_url)]
    finally:
        for name in [other, *names]:
            pg_server.drop_database(name)
    assert _lines(annotated) == _lines(expected)
    assert stored[0] == stored[1]
    ties, chains, copies = _shapes(expected, 4)
    assert ties and chains and copies and any(r["not_compared"] for r in expected)


def _typed(rows: list[dict]) -> list[list[tuple]]:
    """Each row's fields in order, with each value's type (a numpy array: its dtype and items)."""

    def typed(value):
        if hasattr(value, "dtype") and hasattr(value, "tolist"):
            return ("ndarray", str(value.dtype), value.tolist())
        return (type(value).__name__, value)

    return [[(name, typed(value)) for name, value in row.items()] for row in rows]


def test_dedup_dataset_in_memory_gives_the_rows_of_the_batches(connected, database_url, pg_server, monkeypatch):
    """The workers annotate the records in memory: the rows, in order, with the same fields in the same
    places and values of the same types as the batches give (which build the Dataset from Python rows):
    a field named like an annotation stays in its place, dates and lists (a column of pickled objects
    in the fingerprinted Dataset) come back as they did, integer keys are annotated as strings."""
    import datetime

    from simhash_store import ray_data

    records = [
        {
            "cluster": n,
            "key": n * 7 + 1,
            "text": r["text"],
            "day": datetime.date(2020, 1, 1 + n % 28),
            "tags": ["a", str(n)],
        }
        for n, r in enumerate(edit_walks()[:80])
    ]
    other, other_url = _second_database(pg_server)
    try:
        url = database_url.render_as_string(hide_password=False)
        with monkeypatch.context() as patch:
            patch.setattr(ray_data, "dedup_rows", _batch_path_refused)
            patch.setattr(writes, "add_decided", _driver_copy_refused)
            in_memory = dedup_dataset(ray.data.from_items(records).repartition(3), url, 4, batch_size=13).take_all()
        batches = dedup_dataset(ray.data.from_items(records), other_url, 4, batch_size=13, in_memory=False).take_all()
        stored = [stored_clusters(u) for u in (url, other_url)]
    finally:
        pg_server.drop_database(other)
    assert _typed(in_memory) == _typed(batches)
    assert stored[0] == stored[1]
    assert any(r["duplicate_of"] for r in batches) and list(batches[0])[:3] == ["cluster", "key", "text"]


def test_dedup_dataset_failing_before_the_move_stores_nothing(connected, database_url, monkeypatch):
    """The workers wrote every block into the staging table, then the run failed before the move
    into the store: the store holds no document and no cluster, and no staging table is left."""
    from simhash_store import ray_data

    staged: list[int] = []

    def fails(store, name, distance, blocks, first_batch):
        with store.engine.connect() as connection:
            staged.append(connection.exec_driver_sql(f"SELECT pg_catalog.count(*) FROM simhash.{name}").scalar())
        raise RuntimeError("the driver failed before the move")

    url = database_url.render_as_string(hide_password=False)
    monkeypatch.setattr(Store, "move_staged", fails)
    monkeypatch.setattr(ray_data, "dedup_rows", _batch_path_refused)
    with pytest.raises(RuntimeError, match="before the move"):
        dedup_dataset(ray.data.from_items(edit_walks()[:60]).repartition(3), url, 4, batch_size=13)
    assert staged and staged[0] > 0  # the workers wrote their blocks
    with Store(url) as store:
        assert store.count() == 0
    assert json.loads(stored_clusters(url)["heads"]) == []
    assert _contents(url) == []
    import psycopg
    from sqlalchemy.engine import make_url

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        left = connection.execute("SELECT relname FROM pg_catalog.pg_class WHERE relname LIKE 'dedup_staging_%'")
        assert left.fetchall() == []


@pytest.mark.parametrize("bad", ["repeated key", "no text"])
def test_dedup_dataset_with_a_bad_record_fails_as_dedup_does(connected, database_url, pg_server, bad):
    """A bad record: the in-memory path stores nothing and leaves it to the batches, which store
    the batches before it and raise at it, as dedup_dataset always did."""
    from simhash_store.errors import InputError

    records = edit_walks()[:60]
    records.insert(
        40, {"key": records[3]["key"], "text": "另一段文字"} if bad == "repeated key" else {"key": "x", "text": None}
    )
    other, other_url = _second_database(pg_server)
    try:
        url = database_url.render_as_string(hide_password=False)
        with pytest.raises(InputError) as raised:
            dedup_dataset(ray.data.from_items(records), url, 4, batch_size=13)
        with Store(other_url) as store:
            problem = next(
                v.problem for _, v in dedup(records, store=store, max_distance=4, batch_size=13) if v.problem
            )
        stored = [stored_clusters(u) for u in (url, other_url)]
    finally:
        pg_server.drop_database(other)
    assert str(raised.value) == problem and "record 41" in problem
    assert stored[0] == stored[1] and json.loads(stored[0]["documents"])  # the batches before it, stored alike


def test_near_fingerprints_are_every_pair_within_k(connected):
    """The workers' block-key join finds exactly the pairs of the library's all-pairs search."""
    import numpy as np

    from simhash_store.pairs import near_pairs
    from simhash_store.ray_data import near_fingerprints

    rng = random.Random(11)
    base = [rng.getrandbits(64) for _ in range(300)]
    values = base + [b ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)) for b in base[::2]] + base[:20]
    ds = ray.data.from_items([{"simhash": f"{v:016x}"} for v in values] + [{"simhash": None}]).repartition(4)
    for k in (2, 3, 4):
        found = near_fingerprints(ds, k)
        distinct = np.unique(np.array(values, dtype=np.uint64))
        left, right, _ = near_pairs(distinct, k)
        expected: dict[int, list[int]] = {}
        for a, b in zip(distinct[left].tolist(), distinct[right].tolist()):
            expected.setdefault(a, []).append(b)
            expected.setdefault(b, []).append(a)
        assert {v: sorted(n) for v, n in found.items()} == {v: sorted(n) for v, n in expected.items()}
        assert expected


def test_dedup_dataset_with_the_join_into_a_store_holding_documents(connected, database_url, pg_server, monkeypatch):
    """Documents stored before the run are found by one batched search (near_many), the run's own by
    the workers' join: the same verdicts and clusters as dedup, run after run."""
    records = _records()
    rng = random.Random(5)
    # The fields of every record (Ray Data gives a record without one of them the field, as None).
    later = [{"key": f"copy/{r['key']}", "text": _near_copy(r["text"], rng), "title": "copy"} for r in records[:-1:2]]
    other, other_url = _second_database(pg_server)
    try:
        url = database_url.render_as_string(hide_password=False)
        for target in (url, other_url):
            with Store(target) as store:
                list(dedup(records[: len(records) // 2], store=store, max_distance=4))
        with monkeypatch.context() as patch:
            patch.setattr(clusters, "_stored_candidates", _no_search)
            annotated = dedup_dataset(ray.data.from_items(records + later), url, join=True, batch_size=7).take_all()
        with Store(other_url) as store:
            expected = [{**r, **v.annotation()} for r, v in dedup(records + later, store=store, batch_size=7)]
        stored = [stored_clusters(u) for u in (url, other_url)]
    finally:
        pg_server.drop_database(other)
    assert _lines(annotated) == _lines(expected)
    assert stored[0] == stored[1]
    assert any(r["duplicate_of"] and r["key"].startswith("copy/") for r in expected)


def test_write_dataset_twice_writes_nothing_twice(connected, database_url):
    records = _records()
    url = database_url.render_as_string(hide_password=False)
    ds = ray.data.from_items(records).repartition(3)
    first = write_dataset(ds, url)
    second = write_dataset(ds, url)
    stored = len(records) - 1  # the wordless text has no fingerprint
    assert first == {"added": stored, "updated": 0, "unchanged": 0}
    assert second == {"added": 0, "updated": 0, "unchanged": stored}
    with Store(url) as store:
        assert store.count() == stored
        assert store.get("punctuation") is None
        law = next(r for r in records if r["key"].endswith("-copy"))
        assert store.get(law["key"]).fingerprint == fingerprint(law["text"])


@pytest.mark.parametrize("bad", [False, True])
def test_dedup_command_on_ray_writes_what_it_writes_alone(connected, database_url, pg_server, tmp_path, bad):
    """`dedup --ray` into an empty store decides in memory, as dedup_dataset does (no batch stored
    through the store); with a bad record in the input, batch by batch. Either way the output and
    the stored clusters are those of `dedup` without --ray, and a rerun writes the same output."""
    import importlib

    from simhash_store.dedup import _finish_batch

    records = edit_walks() + _records()
    if bad:
        records.insert(70, {"key": records[5]["key"], "text": "另一段文字"})  # a key repeated
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    ray.shutdown()  # the command connects by the address itself
    other, other_url = _second_database(pg_server)
    batches_stored = []

    def finish_batch(*arguments):
        batches_stored.append(1)
        return _finish_batch(*arguments)

    try:
        outputs, stored = [], []
        for url, extra in ((database_url, ["--ray", connected]), (other_url, []), (database_url, ["--ray", connected])):
            target = tmp_path / f"out{len(outputs)}.jsonl"
            with pytest.MonkeyPatch.context() as patch:
                # The module (simhash_store.dedup, the name, is the function).
                patch.setattr(importlib.import_module("simhash_store.dedup"), "_finish_batch", finish_batch)
                result = CliRunner().invoke(
                    app,
                    [
                        "--db",
                        url.render_as_string(hide_password=False),
                        "dedup",
                        str(source),
                        "--annotate",
                        "-k",
                        "4",
                        "--batch-size",
                        "13",
                        "-o",
                        str(target),
                        *extra,
                    ],
                )
            assert result.exit_code == (1 if bad else 0), result.output
            outputs.append(target.read_bytes())
            stored.append(stored_clusters(url))
            if not outputs[1:]:
                on_ray_batches, batches_stored[:] = len(batches_stored), []
    finally:
        pg_server.drop_database(other)
        ray.shutdown()
    assert outputs[0] == outputs[1] == outputs[2]
    assert stored[0] == stored[1] == stored[2]
    assert (on_ray_batches > 0) == bad  # in memory unless a record is bad
    assert b'"duplicate_of": "' in outputs[0]


def test_dedup_command_names_an_unreachable_cluster(database_url, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"key": "a", "text": "中文"}\n', encoding="utf-8")
    ray.shutdown()
    result = CliRunner().invoke(
        app,
        [
            "--db",
            database_url.render_as_string(hide_password=False),
            "dedup",
            str(source),
            "-o",
            str(tmp_path / "out.jsonl"),
            "--ray",
            f"127.0.0.1:{_free_port()}",
        ],
    )
    assert result.exit_code == 1
    assert "cannot connect to the Ray cluster" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "out.jsonl").exists()


@pytest.fixture(scope="module")
def citus():
    """A Citus cluster, a coordinator and two workers (tests/distributed/cluster.py), for the tests below.

    Skipped, with the reason, where none can start (no PostgreSQL 15, no Citus build); CI has both,
    and its strict-skips rule fails the Ray lane if this is skipped there."""
    from distributed.cluster import Cluster, unavailable  # tests/distributed, beside this file

    reason = unavailable()
    if reason is not None:
        pytest.skip(f"no Citus cluster can start here: {reason}")
    cluster = Cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _near_copy(text: str, rng: random.Random) -> str:
    """The text with a few characters changed, as a republished copy has."""
    characters = list(text)
    for _ in range(3):
        characters[rng.randrange(len(characters))] = rng.choice("的一是在不了有和人这中大为上个国")
    return "".join(characters)


def _crawls(directory: Path) -> list[Path]:
    """Three crawls of real text: the records above; near copies of them and law revisions; more copies."""
    rng = random.Random(25)
    first = _records()
    texts = [r for r in first if r["key"] != "punctuation"]
    revisions = sorted((DATA / "law-revisions").rglob("*.txt"))
    second = [{"key": f"copy/{r['key']}", "text": _near_copy(r["text"], rng), "title": "copy"} for r in texts[::3]]
    second += [{"key": f"revision/{p.parent.name}/{p.stem}", "text": p.read_text(encoding="utf-8")} for p in revisions]
    third = [{"key": f"again/{r['key']}", "text": _near_copy(r["text"], rng)} for r in texts[1::4]]
    third += [{"key": f"new/{r['key']}", "text": r["text"][::-1]} for r in texts[2::9]]  # unlike anything stored
    paths = []
    for number, records in enumerate((first, second, third)):
        path = directory / f"crawl{number}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        paths.append(path)
    return paths


def _run(url: str, *arguments: object) -> None:
    """``simhash-store --db URL ...`` as a command of its own, as the README runs it."""
    done = subprocess.run(
        [SIMHASH_STORE, "--db", url, *map(str, arguments)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, (arguments, done.stdout[-2000:], done.stderr[-4000:])


def test_the_readme_dedup_on_ray_into_citus_writes_what_one_server_writes(ray_address, citus, tmp_path, monkeypatch):
    """The README's commands on the local clusters: `init --distributed` on the Citus coordinator, then
    `dedup --ray` into it. Output files and the clusters kept are byte for byte those of `dedup` into
    a one-node store of the same input, through three crawls: the first into the empty store (as
    written in the README), the next two cleaned against what is stored, annotated, in batches of 7;
    the last with the stored representatives found by radius search on the shards."""
    crawls = _crawls(tmp_path)
    ray.shutdown()  # the commands connect by the address themselves
    suffix = uuid.uuid4().hex[:10]
    citus_url = citus.create_database(f"ray_citus_{suffix}")
    citus.execute(f'CREATE DATABASE "ray_single_{suffix}"')
    single_url = citus.url(f"ray_single_{suffix}")  # one node: a plain database of the same server
    try:
        _run(citus_url, "init", "--distributed")
        _run(citus_url, "dedup", crawls[0], "--ray", ray_address, "-o", tmp_path / "clean.jsonl")
        _run(single_url, "dedup", crawls[0], "-o", tmp_path / "clean-one.jsonl", "-j", "1")
        assert (tmp_path / "clean.jsonl").read_bytes() == (tmp_path / "clean-one.jsonl").read_bytes()
        assert stored_clusters(citus_url) == stored_clusters(single_url)

        small = ["--annotate", "--batch-size", "7"]
        _run(citus_url, "dedup", crawls[1], "--ray", ray_address, *small, "-o", tmp_path / "second.jsonl")
        _run(single_url, "dedup", crawls[1], *small, "-j", "1", "-o", tmp_path / "second-one.jsonl")
        assert (tmp_path / "second.jsonl").read_bytes() == (tmp_path / "second-one.jsonl").read_bytes()
        assert stored_clusters(citus_url) == stored_clusters(single_url)

        # Beyond IN_MEMORY_REPRESENTATIVES stored clusters, each batch finds the stored representatives
        # near its records by radius search (on Citus: probes of every shard) instead of in memory.
        monkeypatch.setattr(clusters, "IN_MEMORY_REPRESENTATIVES", 0)
        for url, extra, name in ((citus_url, ["--ray", ray_address], "third"), (single_url, ["-j", "1"], "third-one")):
            result = CliRunner().invoke(
                app, ["--db", url, "dedup", str(crawls[2]), *small, *extra, "-o", str(tmp_path / f"{name}.jsonl")]
            )
            ray.shutdown()
            assert result.exit_code == 0, result.output
        assert (tmp_path / "third.jsonl").read_bytes() == (tmp_path / "third-one.jsonl").read_bytes()
        assert stored_clusters(citus_url) == stored_clusters(single_url)
        layout = citus.execute("SELECT logicalrelid::text, partmethod FROM pg_dist_partition", f"ray_citus_{suffix}")
    finally:
        citus.drop_database(f"ray_citus_{suffix}")
        citus.execute(f'DROP DATABASE IF EXISTS "ray_single_{suffix}" WITH (FORCE)')
    assert dict(layout)["simhash.documents"] == "h"  # the store was distributed, not on the coordinator alone
    # The crawls did what they are for: duplicates in the first, of stored records in the later ones.
    first = [json.loads(line) for line in (tmp_path / "clean-one.jsonl").read_text(encoding="utf-8").splitlines()]
    assert 0 < len(first) < len(_records())
    for name in ("second-one", "third-one"):
        rows = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert any(r["duplicate_of"] and not r["duplicate_of"].startswith(("copy/", "again/")) for r in rows), name
        assert any(r["duplicate_of"] is None and r["not_compared"] is None for r in rows), name


@pytest.mark.parametrize("in_memory", [False, True])
def test_dedup_dataset_into_citus_joins_on_the_workers_by_default(connected, citus, tmp_path, monkeypatch, in_memory):
    """Into a Citus store holding more documents than a batch compares in memory (the bound lowered
    here), dedup_dataset joins on the workers by default: batch by batch, it reads the representatives
    by key; in memory, it decides over the join's pairs and stores in one COPY into the shards. The
    verdicts and clusters of dedup into a one-node store, and no search of the shards."""
    from simhash_store import ray_data

    lines = _crawls(tmp_path)[1].read_text(encoding="utf-8").splitlines()
    # Every record with the same fields (Ray Data gives a record without one of them the field, as None).
    records = [{"title": "", **json.loads(line)} for line in lines] + _records()
    suffix = uuid.uuid4().hex[:10]
    citus_url = citus.create_database(f"ray_join_{suffix}")
    citus.execute(f'CREATE DATABASE "ray_join_single_{suffix}"')
    single_url = citus.url(f"ray_join_single_{suffix}")
    monkeypatch.setattr(clusters, "IN_MEMORY_REPRESENTATIVES", 0)
    try:
        with Store(citus_url) as store:
            store.init(distributed=True)
        with Store(single_url) as store:
            expected = [{**r, **v.annotation()} for r, v in dedup(records, store=store, max_distance=4, batch_size=9)]
        with monkeypatch.context() as patch:
            patch.setattr(clusters, "_stored_candidates", _no_search)
            if in_memory:  # the documents written by the workers, moved on every shard
                patch.setattr(ray_data, "dedup_rows", _batch_path_refused)
                patch.setattr(writes, "add_decided", _driver_copy_refused)
            annotated = dedup_dataset(
                ray.data.from_items(records), citus_url, 4, batch_size=9, in_memory=in_memory
            ).take_all()
        stored = [stored_clusters(url) for url in (citus_url, single_url)]
    finally:
        citus.drop_database(f"ray_join_{suffix}")
        citus.execute(f'DROP DATABASE IF EXISTS "ray_join_single_{suffix}" WITH (FORCE)')
    assert _lines(annotated) == _lines(expected)
    assert stored[0] == stored[1]
    assert any(r["duplicate_of"] for r in expected)
