"""On the cluster: concurrent --skip-near-duplicates writers keep one of each group; kill -9 during add loses nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import psycopg
import pytest

from simhash_store import fingerprint
from simhash_store.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture
def distributed_url(citus_url):
    with Store(citus_url) as store:
        store.init(distributed=True)
    return citus_url


def stored(url: str) -> dict[str, int]:
    with Store(url) as store:
        return {m.key: m.fingerprint for m in store.query(0, 64)}


def python(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


WRITER = """
    import json, sys
    from simhash_store.store import NewDocument, Store
    url, path = sys.argv[1:]
    documents = [NewDocument(key, value) for key, value in json.load(open(path))]
    with Store(url) as store:
        result = store.add(documents, batch_size=3, skip_near_duplicates=True, max_distance=3)
    print(result.added, len(result.near_duplicates))
"""


def test_concurrent_skip_near_duplicates_keeps_one_of_each_group(distributed_url, tmp_path):
    """Two writers get the same 60 items (a bit apart) in opposite orders: one of each pair gets in, never both."""
    rng = random.Random(13)
    items = [rng.getrandbits(64) for _ in range(60)]
    first = [(f"one/{i}", value) for i, value in enumerate(items)]
    second = [(f"two/{i}", value ^ (1 << rng.randrange(64))) for i, value in reversed(list(enumerate(items)))]
    inputs = []
    for name, documents in (("one", first), ("two", second)):
        inputs.append(tmp_path / f"{name}.json")
        inputs[-1].write_text(json.dumps(documents))
    for _round in range(2):
        with psycopg.connect(distributed_url, autocommit=True) as connection:
            connection.execute("TRUNCATE simhash.documents")
        writers = [python(WRITER, distributed_url, str(path)) for path in inputs]
        for writer in writers:
            out, err = writer.communicate(timeout=300)
            assert writer.returncode == 0, err
        kept = stored(distributed_url)
        by_item: dict[str, list[str]] = {}
        for key in kept:
            by_item.setdefault(key.split("/")[1], []).append(key)
        assert sorted(by_item, key=int) == [str(i) for i in range(60)]
        assert all(len(keys) == 1 for keys in by_item.values()), by_item


def cli(*args: str, url: str) -> subprocess.Popen:
    env = {**os.environ, "SIMHASH_STORE_URL": url}
    return subprocess.Popen(
        [sys.executable, "-m", "simhash_store.cli", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_kill_9_during_add_then_rerun(distributed_url, citus, tmp_path, sample_paragraphs):
    records = [{"id": i, "text": text} for i, text in enumerate(sample_paragraphs)]  # shipped in tests/data
    source = tmp_path / "news.jsonl"
    source.write_text(
        "".join(json.dumps({"key": f"wiki/{r['id']}", "text": r["text"]}, ensure_ascii=False) + "\n" for r in records),
        encoding="utf-8",
    )
    expected = {f"wiki/{r['id']}": fingerprint(r["text"]) for r in records}
    rng = random.Random(20261122)
    for _trial in range(2):
        with psycopg.connect(distributed_url, autocommit=True) as connection:
            connection.execute("TRUNCATE simhash.documents")
        process = cli("add", "--jsonl", str(source), "--batch-size", "5", "-j", "1", url=distributed_url)
        target = rng.randrange(10, len(records) - 10)
        with Store(distributed_url) as store:
            while process.poll() is None and store.count() < target:
                time.sleep(0.02)
        time.sleep(rng.uniform(0, 0.1))
        process.send_signal(signal.SIGKILL)
        process.communicate()
        partial = stored(distributed_url)
        assert all(partial[key] == expected[key] for key in partial)  # what is there is right
        assert len(partial) % 5 == 0 or len(partial) == len(records)  # whole batches only
        rerun = cli("add", "--jsonl", str(source), "-j", "1", url=distributed_url)
        _, err = rerun.communicate(timeout=300)
        assert rerun.returncode == 0, err
        assert stored(distributed_url) == expected
    # No transaction left half-committed on a worker.
    with psycopg.connect(distributed_url, autocommit=True) as connection:
        connection.execute("SELECT recover_prepared_transactions()")
    for port in citus.ports[1:]:
        assert citus.execute("SELECT count(*) FROM pg_prepared_xacts", port=port) == [(0,)]
