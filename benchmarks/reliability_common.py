"""What the reliability benchmarks (soak, memory, migrations) share: databases, machine, tables, memory sampling.

Loading fingerprints in bulk, the machine line and the load average come from
``store_speed.py``, so that every benchmark loads and describes the same way.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from simhash_store.config import normalize_url  # noqa: E402

from store_speed import admin_execute, bulk_load, load_now, machine, make_data, percentile  # noqa: E402,F401

DEFAULT_ADMIN_URL = os.environ.get("SIMHASH_STORE_BENCH_URL", "postgresql://root@127.0.0.1:5432/postgres")


def server_version(admin_url: str) -> str:
    with psycopg.connect(admin_url) as connection:
        return connection.execute("SHOW server_version").fetchone()[0]


def plain_url(url: str, database: str | None = None) -> str:
    """A URL psycopg and the CLI both take (the socket directory of an embedded server kept)."""
    parsed = normalize_url(url).set(drivername="postgresql").difference_update_query(["connect_timeout"])
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


@contextlib.contextmanager
def admin_url_for(choice: str) -> Iterator[str]:
    """The admin URL to benchmark on: the one given, or for ``embedded`` a throwaway embedded server."""
    if choice != "embedded":
        yield choice
        return
    import atexit
    import shutil
    import tempfile

    from simhash_store.embedded import server_for

    # A fresh directory the server's own system user can reach when this runs as root;
    # removed at exit, after the server has stopped (exit handlers run last registered first).
    directory = Path(tempfile.mkdtemp(prefix="simhash-bench-"))
    atexit.register(shutil.rmtree, directory, True)
    server = server_for(directory / "pgdata", cleanup_mode="delete")
    yield plain_url(server.get_uri())


@contextlib.contextmanager
def fresh_database(admin_url: str, name: str, keep: bool = False) -> Iterator[str]:
    """A new, empty database (dropped first if a previous run left it); its plain URL."""
    admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin_execute(admin_url, f'CREATE DATABASE "{name}"')
    url = plain_url(admin_url, name)
    try:
        yield url
    finally:
        if not keep:
            admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def mib(size: float) -> str:
    return f"{size / 2**20:,.0f} MiB"


@dataclass
class MemoryPeak:
    rss_sum: int = 0  # largest sum of RSS over the process tree (counts shared pages once per process)
    pss_sum: int = 0  # largest sum of PSS (shared pages divided among their users): the tree's real footprint
    rss_largest: int = 0  # largest RSS of any one process in the tree
    processes: int = 0  # most processes seen at once
    samples: int = 0


class TreeMemory:
    """Samples the memory of a process and all its descendants in a thread, until stopped."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.root = psutil.Process(pid)
        self.interval = interval
        self.peak = MemoryPeak()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        pss_every = max(1, int(0.5 / self.interval))  # PSS reads smaps: slower, so less often
        while not self._stop.is_set():
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                break
            rss, largest, pss = 0, 0, 0
            with_pss = self.peak.samples % pss_every == 0
            for process in tree:
                try:
                    if with_pss:
                        info = process.memory_full_info()
                        pss += info.pss
                    else:
                        info = process.memory_info()
                except psutil.Error:
                    continue
                rss += info.rss
                largest = max(largest, info.rss)
            peak = self.peak
            peak.rss_sum, peak.rss_largest = max(peak.rss_sum, rss), max(peak.rss_largest, largest)
            peak.pss_sum = max(peak.pss_sum, pss)
            peak.processes = max(peak.processes, len(tree))
            peak.samples += 1
            self._stop.wait(self.interval)


def corpus_documents():
    """The shared corpus's laws (600) and Wikipedia paragraphs (1,104) as (key, text) pairs."""
    from shared_corpus import load_laws, load_wiki

    return [(document.key, document.text) for document in (*load_laws(), *load_wiki())]
