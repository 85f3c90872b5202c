"""Corpus to store: read and fingerprint in parallel, skip what did not change, write in batches.

This is the library behind ``simhash-store add`` and ``query``: it takes Sources from
:mod:`corpus`, fingerprints them on all cores, and hands batches to :class:`Store`.
Each batch is one transaction, so an interrupted run leaves a consistent store and
a re-run picks up where it stopped (unchanged inputs are recognised by digest and
not fingerprinted again).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from .corpus import (
    BAD_KEY,
    BAD_RECORD,
    NO_WORDS,
    TOO_LARGE,
    UNREADABLE,
    DecodeError,
    Skip,
    Source,
    digest,
    file_digest,
    read_file,
)
from .errors import InputError, InvalidKeyError, SchemeError, UserDictionaryError, WorkerDiedError
from .fingerprint import fingerprint_if_any
from .formats import DEFAULT_MAX_BYTES, ReadOptions, unique_keys
from .html import text_of
from .plural import counted
from .scheme import DEFAULT, DEFAULT_MAX_DISTANCE, SCHEMES, Scheme
from .segments import segment_fingerprints
from .sources import argument_sources
from .tokenizers import check_available
from .validation import validate_key

if TYPE_CHECKING:
    from .store import SkippedNearDuplicate, Store

# The store (SQLAlchemy, psycopg) is imported where it is used, not with this module, so
# that the CLI can start its workers first and let them load their dictionaries while it
# imports the database side (see Fingerprinter.start).

Progress = Callable[[int, int], None]  # (documents done, bytes done)

# Below this many documents in a batch, starting worker processes costs more than it saves,
# unless they were started early (Fingerprinter.start) to load dictionaries meanwhile.
PARALLEL_THRESHOLD = 16

# How long stopping the workers waits for each killed one to be gone (a process in uninterruptible
# sleep, on a hung disk, outlives SIGKILL for a while): the command ends meanwhile.
WORKER_EXIT_SECONDS = 10


@dataclass(frozen=True)
class Prepared:
    """A Source read and fingerprinted (or found unchanged, or skipped)."""

    key: str
    size: int
    fingerprint: int | None = None
    digest: bytes | None = None
    length: int | None = None
    unchanged: bool = False
    skip: Skip | None = None
    stamp: str | None = None
    warning: str | None = None  # stored, but the user should know: "3 invalid bytes replaced ..."
    segments: tuple[int, ...] | None = None  # for a store that keeps segments
    metadata: dict[str, Any] | None = None  # the record's fields kept with the document


@dataclass
class IngestSummary:
    """What happened to every input: each is counted in exactly one of added, updated,
    unchanged, near_duplicates, skipped (deliberate: not text) and failures."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    documents: int = 0
    bytes: int = 0
    skipped: list[Skip] = field(default_factory=list)  # deliberate skips and failures alike
    near_duplicates: list[SkippedNearDuplicate] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # In a store that keeps clusters: (key replaced, key replacing) for each representative that a
    # better copy replaced, by the store's keep policy.
    replaced: list[tuple[str, str]] = field(default_factory=list)

    @property
    def failures(self) -> list[Skip]:
        """Inputs that should have been stored but could not be read, decoded or keyed."""
        return [s for s in self.skipped if not s.deliberate]

    @property
    def deliberate(self) -> list[Skip]:
        """Inputs that are not text (empty, binary, no words, not a regular file)."""
        return [s for s in self.skipped if s.deliberate]

    @property
    def inputs(self) -> int:
        return self.added + self.updated + self.unchanged + len(self.near_duplicates) + len(self.skipped)

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.skipped))


# ------------------------------------------------------------ the per-document work (runs in workers)


def _init_worker(scheme: Scheme, parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    _exit_with(parent)
    try:
        fingerprint_if_any("预热", scheme)  # load the scheme's dictionaries before the first task
    except SchemeError:
        pass  # e.g. rjieba not installed: the tasks report it, document by document


def _exit_with(parent: int) -> None:
    """End this worker when the process that started it is gone (kill -9, SIGTERM): nothing else would.

    Forked workers hold both ends of their task pipes, so they wait for work forever, with
    their memory and the parent's output pipes, once the parent has died without stopping them.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def prepare(
    source: Source,
    stored_digest: bytes | None,
    scheme: Scheme,
    max_bytes: int = DEFAULT_MAX_BYTES,
    segments: bool = False,
) -> Prepared:
    """Read, decode and fingerprint one Source; unchanged when its digest equals ``stored_digest``.

    A file is opened without blocking and checked to be a regular file first (it may
    have been replaced by a FIFO since the walk); a binary one is told from its first
    bytes, without reading the rest; one over ``max_bytes`` is refused, not read.
    """
    where = source.shown
    if source.text is not None:
        raw = source.text.encode("utf-8", "surrogatepass")
        text = source.text
    else:
        raw = read_file(source, max_bytes)
        if isinstance(raw, Skip):
            return Prepared(source.key, 0, skip=raw)  # 0: nothing read (a sparse 60 GB file is no throughput)
        text = None
    content_digest = digest(raw) if text is not None else file_digest(raw)
    if stored_digest is not None and stored_digest == content_digest:
        return Prepared(source.key, len(raw), digest=content_digest, unchanged=True, stamp=source.stamp)
    warning = None
    if text is None:
        try:
            # a web page found in a directory (by its name or content): its main content, as the html format reads it
            decoded = text_of(raw, source.path or "")
        except DecodeError as exc:
            return Prepared(source.key, len(raw), skip=Skip(where, exc.reason, exc.detail))
        except InputError as exc:  # a web page, and the html extra is not installed
            return Prepared(source.key, len(raw), skip=Skip(where, UNREADABLE, str(exc)))
        text = decoded.text
        if decoded.replaced:
            warning = (
                f"{where}: {counted(decoded.replaced, 'invalid byte')} replaced by U+FFFD (read as {decoded.encoding})"
            )
    del raw
    try:
        value = fingerprint_if_any(text, scheme)
    except UserDictionaryError:
        raise  # the scheme's, not this document's: every document would fail the same way
    except SchemeError as exc:  # e.g. a malformed token^weight line for the weighted schemes
        return Prepared(source.key, source.size, skip=Skip(where, BAD_RECORD, str(exc)))
    except MemoryError:
        return Prepared(source.key, source.size, skip=Skip(where, TOO_LARGE, "out of memory fingerprinting it"))
    if value is None:
        # Named with the scheme: an English text under a scheme that reads only Chinese words has none.
        return Prepared(source.key, source.size, skip=Skip(where, NO_WORDS, f"no features under scheme {scheme.name}"))
    return Prepared(
        source.key,
        source.size,
        fingerprint=value,
        digest=content_digest,
        length=len(text),
        stamp=source.stamp,
        warning=warning,
        metadata=source.metadata,
        segments=segment_fingerprints(text) if segments else None,
    )


def _prepare_indexed_in_worker(
    scheme: Scheme, max_bytes: int, segments: bool, tasks: list[tuple[int, tuple[Source, bytes | None]]]
) -> list[tuple[int, Prepared]]:
    return [(index, prepare(source, stored, scheme, max_bytes, segments)) for index, (source, stored) in tasks]


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on every system
        return os.cpu_count() or 1


def _recording(context: Any, forked: list) -> Any:
    """A fork context like ``context`` whose processes are added to ``forked`` before each is forked:
    an interrupt landing just after a fork, before the executor records the worker, must not leave
    it out of the stop (at exit, multiprocessing waits for every child it started)."""

    class Worker(context.Process):  # type: ignore[name-defined,misc]
        def start(self) -> None:
            forked.append(self)
            super().start()

    class Context(type(context)):  # type: ignore[misc]
        Process = Worker

    return Context()


class Fingerprinter:
    """Runs :func:`prepare` over many Sources, on ``jobs`` processes when there is enough work."""

    def __init__(self, scheme: Scheme, jobs: int | None = None, max_file_bytes: int = DEFAULT_MAX_BYTES) -> None:
        check_available(scheme)  # a missing segmenter is one error here, not one per document
        self.scheme = scheme
        # At most the cores this process may run on (two at least): each worker loads the dictionaries
        # (about 160 MB), and the executor forks them all at once, so -j 1000 asked for 160 GB on a
        # two-core machine, to fingerprint no faster.
        self.jobs = max(1, min(jobs or usable_cores(), max(2, usable_cores())))
        self.max_file_bytes = max_file_bytes
        self.segments = False  # also the segments of each document (a store that keeps them)
        self.submitted = 0  # documents given to fingerprint (a rerun of unchanged records gives none)
        self._pool = None
        self._forked: list = []  # the pool's worker processes, each recorded before it is forked
        self._exiting: list = []  # the executors' manager threads, still ending their workers

    def start(self, workers: int | None = None) -> None:
        """Start ``workers`` (at most ``jobs``; default all) now, loading their dictionaries
        while this process does other work; from then on every batch goes to them.

        Otherwise they start with the first batch that needs fingerprinting, so that
        re-adding an unchanged corpus never pays for the dictionaries. With ``jobs`` 1 there
        are no workers: everything runs in this process.
        """
        if self.jobs > 1:
            try:
                self._get_pool(workers).submit(int)  # the executor starts its processes with the first task
            except BaseException:
                # An interrupt (Ctrl-C, SIGTERM) while the executor forks its processes, before its
                # manager thread runs: nothing would tell them to exit, and at exit multiprocessing
                # waits for them forever (the command hung after its one line).
                self.terminate()
                raise

    def _get_pool(self, workers: int | None = None):
        if self._pool is None:
            import multiprocessing  # here, not at the top: most one-file commands never start workers
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
            if hasattr(os, "fork"):
                context = _recording(context, self._forked)
            # An executor, not multiprocessing.Pool: when a worker dies (kill -9, the kernel's OOM
            # killer) Pool starts another and waits forever for the lost tasks; the executor raises.
            self._pool = ProcessPoolExecutor(
                min(self.jobs, workers or self.jobs),
                mp_context=context,
                initializer=_init_worker,
                initargs=(self.scheme, os.getpid()),
            )
        return self._pool

    def submit(self, tasks: Sequence[tuple[Source, bytes | None]]) -> Callable[[Progress | None], list[Prepared]]:
        """Start work on a batch; returns a function that collects the results in input order,
        reporting each document to ``progress`` as it completes."""
        self.submitted += len(tasks)
        if self._pool is None and (self.jobs == 1 or len(tasks) < PARALLEL_THRESHOLD):

            def collect_here(progress: Progress | None) -> list[Prepared]:
                results = []
                for source, stored in tasks:
                    results.append(prepare(source, stored, self.scheme, self.max_file_bytes, self.segments))
                    if progress is not None:
                        progress(1, results[-1].size)
                return results

            return collect_here
        # Largest first, in small chunks: no worker is left alone with a long tail at the end.
        # But each worker starts with one of the smallest documents, alone, so that progress
        # shows within moments of the start, not once a chunk of the largest is done.
        order = sorted(range(len(tasks)), key=lambda i: -tasks[i][0].size)
        chunksize = max(1, min(16, len(tasks) // (self.jobs * 16)))
        first, order = order[: -self.jobs - 1 : -1], order[: -self.jobs]
        chunks = [[index] for index in first] + [
            order[start : start + chunksize] for start in range(0, len(order), chunksize)
        ]
        pool = self._get_pool()
        pending = [
            pool.submit(
                _prepare_indexed_in_worker,
                self.scheme,
                self.max_file_bytes,
                self.segments,
                [(i, tasks[i]) for i in chunk],
            )
            for chunk in chunks
        ]

        def collect(progress: Progress | None) -> list[Prepared]:
            from concurrent.futures import as_completed
            from concurrent.futures.process import BrokenProcessPool

            in_order: list[Prepared] = [None] * len(tasks)  # type: ignore[list-item]
            try:
                for chunk in as_completed(pending):
                    for index, prepared in chunk.result():
                        in_order[index] = prepared
                        if progress is not None:
                            progress(1, prepared.size)
            except BrokenProcessPool:
                raise WorkerDiedError(
                    "a fingerprinting worker process died (killed, perhaps by the kernel for lack of memory) "
                    "before this batch was done; every earlier batch is stored: run the same command again to continue"
                ) from None
            return in_order

        return collect

    def close(self) -> None:
        """Let the workers go, without waiting for them to exit: freeing their dictionaries
        takes a while, and the caller goes on meanwhile (a query to the database). Leaving
        the ``with`` block waits for them."""
        if self._pool is not None:
            self._exiting.append(getattr(self._pool, "_executor_manager_thread", None))
            self._pool.shutdown(wait=False)
            self._pool = None
            self._forked.clear()

    def terminate(self) -> None:
        if self._pool is not None:
            # The executor cannot stop running work before Python 3.14 (terminate_workers): stop its
            # processes, every one forked (the executor's own record of them may lack the last).
            workers = [worker for worker in self._forked if worker.pid is not None]
            self._forked.clear()
            self._exiting.append(getattr(self._pool, "_executor_manager_thread", None))
            self._pool.shutdown(wait=False, cancel_futures=True)
            for worker in workers:
                # SIGKILL: a SIGTERM that reaches a worker as it is forked, before Python has set up
                # its signal handling, is lost, and the worker waits for work forever.
                worker.kill()
            for worker in workers:
                worker.join(timeout=WORKER_EXIT_SECONDS)
            self._pool = None

    def _wait_for_exits(self) -> None:
        # Before the interpreter exits: there, concurrent.futures wakes every manager thread
        # without a lock, and one that is closing its pipe meanwhile makes Python 3.11 print
        # "OSError: [Errno 9] Bad file descriptor" after the command's output.
        for thread in self._exiting:
            if thread is not None:
                thread.join(timeout=30)
        self._exiting.clear()

    def __enter__(self) -> Fingerprinter:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.close()
        else:
            self.terminate()
        self._wait_for_exits()


def batches(items: Iterable, size: int) -> Iterator[list]:
    """Lists of ``size`` items (the last shorter), taken from ``items`` as they come."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _split(batch: list[Source | Skip], summary: IngestSummary) -> list[Source]:
    sources = []
    for item in batch:
        if isinstance(item, Skip):
            summary.skipped.append(item)
            continue
        try:
            validate_key(item.key)
        except InvalidKeyError as exc:
            summary.skipped.append(Skip(item.shown, BAD_KEY, str(exc)))
            continue
        sources.append(item)
    return sources


def add(
    store: Store,
    inputs: Iterable[Source | Skip],
    *,
    jobs: int | None = None,
    batch_size: int | None = None,
    skip_near_duplicates: bool = False,
    max_distance: int = DEFAULT_MAX_DISTANCE,
    progress: Progress | None = None,
    checksum: bool = False,
    fingerprinter: Fingerprinter | None = None,
) -> IngestSummary:
    """Fingerprint and store every input; returns what happened to each kind of input.

    A file whose size and modification time are those stored is unchanged without
    being read (``checksum``: read it and compare its content digest, as for every
    other input). While the workers fingerprint one batch, the previous one is
    written, so the database and the CPUs work at the same time. A ``fingerprinter``
    given (perhaps started early, see :meth:`Fingerprinter.start`) works for the store's
    scheme and is closed at the end.
    """
    from .store import DEFAULT_BATCH_SIZE

    scheme = store.init()
    summary = IngestSummary()
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    fingerprinter = fingerprinter or Fingerprinter(scheme, jobs)
    fingerprinter.scheme = scheme
    fingerprinter.segments = store.keeps_segments
    keep_values: dict[str, object] = {}  # of the records in flight: stored with them
    with fingerprinter:
        finished: list[Prepared] | None = None
        # Two inputs with one key (x.txt in both of `add a b`) are never merged: the first is
        # stored, the second reported; a re-run does the same, so nothing flips back and forth.
        for batch in batches(unique_keys(inputs), batch_size):
            sources = _split(batch, summary)
            stored = store.versions([s.key for s in sources]) if sources else {}
            # A record's metadata (--metadata-field) given or changed under the same text: a
            # record whose stored metadata differs is written again, not taken as unchanged.
            described = [s.key for s in sources if s.metadata is not None and s.key in stored]
            stored_metadata = store.stored_metadata(described) if described else {}
            # So is a record whose keep field's value was corrected under the same text: its
            # cluster then ranks it again (writes: a changed keep value is placed again).
            ranked = [s.key for s in sources if s.keep_value is not None and s.key in stored]
            stored_keep = store.stored_keep_values(ranked) if ranked else {}
            tasks, unchanged = [], []
            for source in sources:
                digest_stored, stamp_stored = stored.get(source.key, (None, None))
                if source.metadata is not None and stored_metadata.get(source.key) != source.metadata:
                    digest_stored = None  # fingerprinted and written again (the write compares it as stored)
                if source.keep_value is not None and source.key in stored_keep:
                    if stored_keep[source.key] != _stored_form(source.keep_value):
                        digest_stored = None
                if not checksum and source.stamp is not None and source.stamp == stamp_stored:
                    unchanged.append(Prepared(source.key, source.size, unchanged=True, stamp=source.stamp))
                elif source.text is not None and digest_stored is not None and _text_digest(source) == digest_stored:
                    # A record stored with this text: recognised here, not sent to the workers at all.
                    unchanged.append(Prepared(source.key, source.size, digest=digest_stored, unchanged=True))
                else:
                    tasks.append((source, digest_stored))
            keep_values.update((source.key, source.keep_value) for source in sources if source.keep_value is not None)
            collect = fingerprinter.submit(tasks)
            if finished is not None:
                _write(store, finished, summary, skip_near_duplicates, max_distance, keep_values)
            if progress is not None and unchanged:
                progress(len(unchanged), sum(item.size for item in unchanged))
            finished = collect(progress) + unchanged
        if finished is not None:
            _write(store, finished, summary, skip_near_duplicates, max_distance, keep_values)
    return summary


def _stored_form(value: object) -> object:
    """A keep value as the store holds it: a number or a string; anything else is stored as none."""
    from .keep import comparable

    return value if comparable(value) else None


def _text_digest(source: Source) -> bytes:
    return digest((source.text or "").encode("utf-8", "surrogatepass"))


def _write(
    store: Store,
    prepared: list[Prepared],
    summary: IngestSummary,
    skip_near_duplicates: bool,
    max_distance: int,
    keep_values: dict[str, object],
) -> None:
    from .keep import comparable
    from .store import NewDocument

    documents = []
    touched: dict[str, str] = {}  # same content, new size or modification time: record the new stamp
    for item in prepared:
        value = keep_values.pop(item.key, None)
        summary.documents += 1
        summary.bytes += item.size
        if item.warning is not None:
            summary.warnings.append(item.warning)
        if item.skip is not None:
            summary.skipped.append(item.skip)
        elif item.unchanged:
            summary.unchanged += 1
            if item.digest is not None and item.stamp is not None:
                touched[item.key] = item.stamp
        else:
            documents.append(
                NewDocument(
                    item.key,
                    item.fingerprint,
                    item.digest,
                    item.length,
                    metadata=item.metadata,
                    stamp=item.stamp,
                    segments=item.segments,
                    keep_value=value if comparable(value) else None,
                )
            )
    if touched:
        store.set_stamps(touched)
    if documents:
        result = store.add_batch(documents, skip_near_duplicates=skip_near_duplicates, max_distance=max_distance)
        summary.added += result.added
        summary.updated += result.updated
        summary.unchanged += result.unchanged
        summary.near_duplicates.extend(result.near_duplicates)
        summary.replaced.extend(result.replaced)


def early_fingerprinter(
    scheme: str | None, jobs: int | None, documents: int | None, few_too: bool = False
) -> Fingerprinter:
    """Workers for the store's scheme (guessed: the one named, else the default), started now
    when there is enough to do, so they load their dictionaries while this process opens the store.

    ``few_too``: for a handful of documents, one worker, which the command waits for anyway
    (a query cannot start before its fingerprints); it makes loading the dictionaries and
    opening the store run side by side.
    """
    fingerprinter = Fingerprinter(SCHEMES.get(scheme or DEFAULT.name, DEFAULT), jobs)
    if documents is None or documents >= PARALLEL_THRESHOLD:
        fingerprinter.start()
    elif documents and few_too:
        fingerprinter.start(workers=1)
    return fingerprinter


StoredDigests = Callable[[list[str]], "dict[str, tuple[bytes | None, int, int | None]]"]


def _known(sources: list[Source], stored: StoredDigests) -> dict[int, Prepared]:
    """The records of a batch (by position) stored under their key with the same text, as their
    stored fingerprints."""
    keys = sorted({source.key for source in sources if source.text is not None})
    try:
        found = stored(keys) if keys else {}
    except InvalidKeyError:  # a record named by something no store could hold as a key
        found = {}
    known = {}
    for number, source in enumerate(sources):
        content, value, length = found.get(source.key, (None, 0, None))
        if (
            source.text is not None
            and content is not None
            and content == digest(source.text.encode("utf-8", "surrogatepass"))
        ):
            known[number] = Prepared(
                source.key, source.size, fingerprint=value, digest=content, length=length, metadata=source.metadata
            )
    return known


def fingerprint_arguments(
    names: list[str],
    scheme: Scheme,
    *,
    jobs: int | None = None,
    fingerprinter: Fingerprinter | None = None,
    formats: Sequence[str | None] | None = None,
    options: ReadOptions | None = None,
    segments: bool = False,
    stored: StoredDigests | None = None,
) -> Iterator[tuple[Prepared, bool]]:
    """``(prepared, failed)`` for each document the arguments ``names`` (files, directories,
    ``-``, records of any format: see :func:`sources.argument_sources`) hold, in order. ``failed``
    is False for a fingerprint, and for an input skipped on purpose that was not named itself (a
    binary file a directory held, a record without words: not an error), True for any other skip.
    ``segments``: with its segments' fingerprints too. ``stored``: see :func:`fingerprint_sources`."""
    named = set(names)
    found = fingerprint_sources(
        argument_sources(names, formats, options),
        scheme,
        jobs=jobs,
        fingerprinter=fingerprinter,
        segments=segments,
        stored=stored,
    )
    for item in found:
        yield item, item.skip is not None and not (item.skip.deliberate and item.skip.where not in named)


def fingerprint_sources(
    inputs: Iterable[Source | Skip],
    scheme: Scheme,
    *,
    jobs: int | None = None,
    batch_size: int = 1000,
    fingerprinter: Fingerprinter | None = None,
    segments: bool = False,
    stored: StoredDigests | None = None,
) -> Iterator[Prepared]:
    """Fingerprints of inputs in order (Skips pass through as skipped Prepared values); with
    ``segments``, each with its segments' fingerprints too.

    ``stored``: ``Store.stored_digests`` or ``Lookup.stored_digests`` of the store the
    fingerprints are for (its scheme): a record whose key is stored with the same text takes the
    stored fingerprint instead of being fingerprinted again (not with ``segments``).

    A ``fingerprinter`` given (perhaps started early) works for ``scheme`` and is closed at the
    end: its workers exit while the caller goes on, and the caller's ``with`` waits for them.
    """
    given = fingerprinter is not None
    fingerprinter = fingerprinter or Fingerprinter(scheme, jobs)
    fingerprinter.scheme = scheme
    fingerprinter.segments = segments
    with contextlib.nullcontext() if given else fingerprinter:
        for batch in batches(inputs, batch_size):
            sources = [item for item in batch if isinstance(item, Source)]
            known = _known(sources, stored) if stored is not None and not segments else {}
            tasks = [(source, None) for number, source in enumerate(sources) if number not in known]
            results = iter(fingerprinter.submit(tasks)(None))
            number = 0
            for item in batch:
                if not isinstance(item, Source):
                    yield Prepared(item.where, 0, skip=item)
                    continue
                yield known[number] if number in known else next(results)
                number += 1
        fingerprinter.close()
