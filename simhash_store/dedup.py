"""Deduplicate a stream of records against a store: each record gets a verdict, the first of near-duplicates is kept.

Every record with text is stored (key, fingerprint) and joins a cluster (see
:mod:`clusters`); the representative of each cluster is the record kept, every other
member is a duplicate of it. So a second batch is cleaned against the first, and a
rerun over the same input reads the verdicts back from the store: the same output,
byte for byte, after an interruption too.

>>> for record, verdict in dedup(records, store="postgresql://localhost/corpus"):  # doctest: +SKIP
...     if verdict.kept:
...         write(record)
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .corpus import DELIBERATE, Skip, Source
from .errors import InputError, InvalidKeyError, OutputError, SimhashStoreError
from .progress import OnProgress
from .terminal import visible

if TYPE_CHECKING:
    from .formats import RecordWriter
    from .ingest import Fingerprinter
    from .store import Store

DEFAULT_BATCH_SIZE = 1000


class ClusterDistanceError(SimhashStoreError):
    """Deduplication at a distance other than the one the store's clusters were made at."""


@dataclass(frozen=True)
class Verdict:
    """What happened to one record.

    ``kept``: the record is the representative of its cluster (or has no text to compare).
    ``duplicate_of``/``distance``: the representative it duplicates, and how far it is.
    ``problem``: why a bad record was not processed (then it is not kept).
    ``not_compared``: why a record was passed through (kept) without being compared or stored:
    ``"no words"`` for a text in which the scheme finds no features (empty, punctuation only,
    or a script it does not read), which has no fingerprint to compare.
    """

    key: str | None
    kept: bool
    simhash: int | None = None
    cluster: int | None = None
    duplicate_of: str | None = None
    distance: int | None = None
    problem: str | None = None
    not_compared: str | None = None

    def annotation(self) -> dict[str, Any]:
        """The fields ``--annotate`` adds to a record."""
        return {
            "simhash": None if self.simhash is None else f"{self.simhash:016x}",
            "cluster": self.cluster,
            "duplicate_of": self.duplicate_of,
            "distance": self.distance,
            "not_compared": self.not_compared,
        }


KEEPS = ("first", "longest")


def dedup(
    records: Iterable[Mapping[str, Any]],
    *,
    store: Store | str | None = None,
    key: str = "key",
    text: str = "text",
    max_distance: int | None = None,
    keep: str = "first",
    batch_size: int = DEFAULT_BATCH_SIZE,
    jobs: int | None = None,
    html: bool = False,
) -> Iterator[tuple[Mapping[str, Any], Verdict]]:
    """``(record, verdict)`` for each record, in order; records are dicts (or any mapping).

    ``store``: a :class:`Store`, a URL, or None for the default store. ``max_distance``:
    None for the store's cluster distance (for a store that keeps no clusters yet: the k
    recorded by ``calibrate --apply``, else 11); another value is accepted by an empty store
    only. ``keep="longest"``: the longest record of each cluster is kept, so verdicts come
    after all records are stored (a one-shot iterator is held in memory for that). A bad
    record (no key, no text, a key repeated) gets a verdict with ``problem`` set and the rest go on.
    ``html``: the ``text`` field holds a web page's HTML, and its main content is compared.
    """
    if keep == "longest" and not isinstance(records, Sequence):
        records = list(records)

    def rows() -> Iterator[tuple[str, Mapping[str, Any]]]:
        return ((f"record {number}", record) for number, record in enumerate(records, start=1))

    for _, record, verdict in dedup_rows(
        rows, store=store, key=key, text=text, max_distance=max_distance, keep=keep, batch_size=batch_size, jobs=jobs,
        html=html,
    ):
        yield record, verdict


Rows = Iterable[tuple[str, "Mapping[str, Any] | Skip"]]


def dedup_rows(
    rows: Callable[[], Rows],
    *,
    store: Store | str | None = None,
    key: str = "key",
    text: str = "text",
    max_distance: int | None = None,
    keep: str = "first",
    batch_size: int = DEFAULT_BATCH_SIZE,
    jobs: int | None = None,
    fingerprinter=None,
    html: bool = False,
) -> Iterator[tuple[str, Mapping[str, Any] | Skip, Verdict]]:
    """:func:`dedup` over ``(where, record or Skip)`` rows as the file readers give them.

    ``rows`` is called once, and once more with ``keep="longest"``: every record is stored
    first, then each gets the verdict of the final clusters.
    """
    from .ingest import Fingerprinter
    from .ingest import batches as in_batches
    from .scheme import DEFAULT
    from .store import Store

    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    if keep not in KEEPS:
        raise ValueError(f"keep must be first or longest, not {keep!r}")
    opened = store if isinstance(store, Store) else Store(store)
    try:
        seen: set[str] = set()
        with fingerprinter or Fingerprinter(DEFAULT, jobs) as fingerprinter:
            batches = in_batches(rows(), batch_size)
            # The workers fingerprint the first batch while the store is created or checked (a new
            # store's migrations take a second or more), with the scheme they were started for:
            # the default unless told. A store of another scheme has the batch fingerprinted again.
            pending = [(batch, _start_batch(batch, key, text, seen, fingerprinter, html)) for batch in islice(batches, 1)]
            scheme = opened.init()
            _check_distance(opened, max_distance)
            if fingerprinter.scheme != scheme:
                fingerprinter.scheme = scheme
                pending = [(batch, _fingerprint(so_far, sources, fingerprinter)) for batch, (so_far, sources, _) in pending]
            # While the workers fingerprint one batch, the one before is stored and resolved.
            outcomes: list = []
            for batch in batches:
                pending.append((batch, _start_batch(batch, key, text, seen, fingerprinter, html)))
                yield from _finish_batch(opened, *pending.pop(0), keep, outcomes)
            for done in pending:
                yield from _finish_batch(opened, *done, keep, outcomes)
        if keep == "first":
            return
        # Second pass: the clusters are final, every record's verdict is read from them.
        for start, batch in zip(range(0, len(outcomes), batch_size), in_batches(rows(), batch_size)):
            keys = _stored_keys(outcomes[start : start + batch_size])
            memberships = opened.memberships(keys) if keys else {}
            yield from zip(*zip(*batch), _resolve(outcomes[start : start + batch_size], memberships))
    finally:
        if opened is not store:
            opened.close()


@dataclass
class FileCounts:
    """What :func:`dedup_files` wrote: records kept, duplicates, bad records, and records
    passed through without a fingerprint (by reason)."""

    kept: int = 0
    duplicates: int = 0
    bad: int = 0
    not_compared: Counter[str] = field(default_factory=Counter)


def dedup_output(
    inputs: list[str], input_formats: list[str], output: str, output_format: str, *, annotate: bool = False
) -> RecordWriter:
    """The writer of :func:`dedup_files`' output, claimed before any work (a second run writing
    it stops here): the inputs exist and the output is none of them; a Parquet output keeps the
    Arrow types of the Parquet inputs' columns (the first input's first) and, with ``annotate``,
    gives the annotations their own. ``-`` is standard input or output.
    """
    from . import formats

    for path in inputs:
        if path != "-" and not Path(path).is_file() and not Path(path).is_dir():
            what = "not a regular file (a FIFO or device)" if Path(path).exists() else "no such file"
            raise InputError(f"cannot open {path}: {what}")
    schema = annotation_types = None
    if output_format == "parquet":
        schema = formats.parquet_schemas([path for path, kind in zip(inputs, input_formats) if kind == "parquet"])
        pyarrow = formats.pyarrow_module()
        annotation_types = {"simhash": pyarrow.string(), "cluster": pyarrow.int64(),
                            "duplicate_of": pyarrow.string(), "distance": pyarrow.int32(),
                            "not_compared": pyarrow.string()}
    if output != "-":
        for path in inputs:
            with contextlib.suppress(OSError):
                if path != "-" and os.path.samefile(path, output):
                    raise OutputError(f"the output {visible(output)} is the input {visible(path)}: write to another file")
    try:
        return formats.open_writer(output, output_format, schema=schema, extra_fields=annotation_types if annotate else None)
    except OSError as exc:
        raise OutputError(f"cannot write {output}: {exc.strerror or exc}") from None


def dedup_files(
    inputs: list[str],
    input_formats: list[str],
    writer: RecordWriter,
    *,
    store: Store,
    key: str = "key",
    text: str = "text",
    max_distance: int | None = None,
    keep: str = "first",
    annotate: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    fingerprinter: Fingerprinter | None = None,
    on_failure: Callable[[str], None] = lambda message: None,
    on_progress: OnProgress | None = None,
    html: bool = False,
) -> FileCounts:
    """:func:`dedup_rows` over the records of inputs of any format (``input_formats``: registered
    names, see :mod:`~simhash_store.formats`; ``-``: standard input), writing the kept records (every record with ``annotate``, with its
    verdict's fields added) to ``writer``, which is closed at the end, not abandoned on an error.
    A bad record, or one the output format cannot hold, costs that record: ``on_failure`` is
    told why, and it is counted as bad. ``html``: the ``text`` field holds a web page's HTML.
    ``on_progress(done, total)`` is told the bytes of the
    inputs read so far, and their total size (None when one is standard input).
    """
    from . import formats

    options = formats.ReadOptions(key_field=key, text_field=text, required={key: "the key", text: "the page" if html else "the text"})
    sizes = [_file_size(path) for path in inputs]
    total = None if None in sizes else sum(size or 0 for size in sizes)
    read = [0] * len(inputs)  # bytes of each input read so far

    def reader(number: int) -> Callable[[int], None] | None:
        if on_progress is None:
            return None

        def on_read(done: int) -> None:
            read[number] = done
            on_progress(sum(read), total)

        return on_read

    # Every input is opened and its first record checked before any is deduplicated.
    opened = [
        formats.read_records(path, kind, options, on_read=reader(number))
        for number, (path, kind) in enumerate(zip(inputs, input_formats))
    ]

    def rows() -> Iterator[tuple[str, Mapping[str, Any] | Skip]]:
        nonlocal opened
        parts, opened = opened, []  # read again (keep longest): opened afresh, without progress
        for number, part in enumerate(
            parts or [formats.read_records(path, kind, options) for path, kind in zip(inputs, input_formats)]
        ):
            yield from part
            if parts and on_progress is not None and sizes[number] is not None and read[number] != sizes[number]:
                read[number] = sizes[number] or 0  # a Parquet file, read by pyarrow: counted when done
                on_progress(sum(read), total)

    counts = FileCounts()
    for where, record, verdict in dedup_rows(
        rows, store=store, key=key, text=text, max_distance=max_distance, keep=keep,
        fingerprinter=fingerprinter, batch_size=batch_size, html=html,
    ):
        if verdict.problem is not None or isinstance(record, Skip):  # a Skip always has its problem
            counts.bad += 1
            on_failure(str(verdict.problem))
            continue
        if verdict.not_compared is not None:
            counts.not_compared[verdict.not_compared] += 1
        elif verdict.kept:
            counts.kept += 1
        else:
            counts.duplicates += 1
        try:  # a record the output format cannot hold costs that record
            if annotate:
                writer.write({**record, **verdict.annotation()})
            elif verdict.kept:
                writer.write(dict(record))
        except formats.FormatError as exc:
            counts.bad += 1
            on_failure(f"{where}: {exc}")
    writer.close()
    return counts


def _file_size(path: str) -> int | None:
    """The size of a regular file; None for stdin or a directory (no total known in advance)."""
    return os.path.getsize(path) if path != "-" and os.path.isfile(path) else None


def _check_distance(store: Store, max_distance: int | None) -> None:
    """Deduplicate against clusters at the distance asked for; an empty store starts keeping them."""
    distance, unclustered = store.cluster_state()
    if distance is None or (max_distance is not None and max_distance != distance):
        if store.is_empty():
            store.recluster(max_distance)
            return
        if distance is None:
            raise ClusterDistanceError(
                "this store keeps no clusters yet: run `simhash-store recluster"
                + (f" -k {max_distance}" if max_distance is not None else "")
                + "` first (it clusters what is stored, and every later write keeps the clusters)"
            )
        raise ClusterDistanceError(
            f"the store's clusters are made at distance {distance}, not {max_distance}: "
            f"run `simhash-store recluster -k {max_distance}` first, or leave out -k"
        )
    if unclustered:
        raise ClusterDistanceError(
            "some stored documents have no cluster (bulk-loaded, or inserted in SQL by another application): "
            "run `simhash-store recluster` first"
        )


@dataclass(frozen=True)
class _Stored:
    """A record stored (or found stored) under ``key``: its verdict is read from its cluster."""

    key: str
    fingerprint: int
    where: str


def _start_batch(batch, key_field: str, text_field: str, seen: set[str], fingerprinter, html: bool = False):
    """Validate one batch and start fingerprinting its records: (outcomes so far, sources, collect)."""
    from .formats.html import field_text
    from .store import validate_key

    outcomes: list[Verdict | _Stored | None] = [None] * len(batch)
    sources: list[tuple[int, Source]] = []
    for position, (where, record) in enumerate(batch):
        if isinstance(record, Skip):
            outcomes[position] = Verdict(None, False, problem=str(record))
            continue
        key, text = record.get(key_field), record.get(text_field)
        if not isinstance(key, (str, int)) or isinstance(key, bool) or key == "":
            outcomes[position] = Verdict(None, False, problem=f"{where}: no {key_field!r} field with a string or integer")
            continue
        key = str(key)
        if not isinstance(text, str):
            outcomes[position] = Verdict(key, False, problem=f"{where}: no {text_field!r} field with a string")
            continue
        try:
            validate_key(key)
        except InvalidKeyError as exc:
            outcomes[position] = Verdict(None, False, problem=f"{where}: {exc}")
            continue
        if key in seen:
            outcomes[position] = Verdict(key, False, problem=f"{where}: key {key!r} repeated in the input")
            continue
        seen.add(key)
        if html:
            text = field_text(record, text_field, where)
            if isinstance(text, Skip):  # no main content: passed through as kept, not compared, as empty text is
                deliberate = text.reason in DELIBERATE
                outcomes[position] = Verdict(
                    key, deliberate, problem=None if deliberate else str(text),
                    not_compared=text.reason if deliberate else None,
                )
                continue
        sources.append((position, Source(key, text=text, size=len(text.encode("utf-8", "surrogatepass")))))
    return _fingerprint(outcomes, sources, fingerprinter)


def _fingerprint(outcomes, sources, fingerprinter):
    return outcomes, sources, fingerprinter.submit([(source, None) for _, source in sources])


def _finish_batch(store: Store, batch, started, keep: str, kept_outcomes: list):
    """Store a batch whose fingerprints are coming; with keep first, yield its verdicts at once
    (with keep longest, keep its outcomes for the second pass)."""
    outcomes, sources, collect = started
    outcomes, memberships = _store_batch(store, batch, outcomes, sources, collect(None), keep)
    if keep == "first":
        yield from zip(*zip(*batch), _resolve(outcomes, memberships))
    else:
        kept_outcomes.extend(outcomes)


def _store_batch(store: Store, batch, outcomes, sources, prepared, keep: str):
    """Store the fingerprinted records of one batch (one transaction, which also reads back where
    each sits): (outcomes, with a final verdict for records that cannot be stored; memberships)."""
    from .store import NewDocument

    documents = []
    for (position, source), item in zip(sources, prepared):
        where = batch[position][0]
        if item.skip is not None:
            # Empty or wordless text cannot be compared: passed through as kept, not stored, and said so.
            deliberate = item.skip.reason in DELIBERATE
            detail = f" ({item.skip.detail})" if item.skip.detail else ""
            outcomes[position] = Verdict(
                source.key, deliberate, problem=None if deliberate else f"{where}: {item.skip.reason}{detail}",
                not_compared=item.skip.reason if deliberate else None,
            )
            continue
        outcomes[position] = _Stored(source.key, item.fingerprint, where)
        documents.append(NewDocument(source.key, item.fingerprint, item.digest, item.length))
    # Keys stored before (by a run killed after this batch, or an earlier batch) keep their text
    # and are read back. With keep longest, the longer ones of this batch, and those stored with the
    # same text by a run killed before it could promote them, become their clusters' representatives.
    memberships = store.add_new_and_cluster(documents, prefer_longest=keep == "longest") if documents else {}
    return outcomes, memberships


def _stored_keys(outcomes: list[Verdict | _Stored]) -> list[str]:
    return [o.key for o in outcomes if isinstance(o, _Stored)]


def _resolve(outcomes: list[Verdict | _Stored], memberships: Mapping[str, Any]) -> list[Verdict]:
    """Each stored record's verdict from its cluster: kept if it is the representative."""
    verdicts = []
    for outcome in outcomes:
        if isinstance(outcome, Verdict):
            verdicts.append(outcome)
            continue
        membership = memberships.get(outcome.key)
        k, value, where = outcome.key, outcome.fingerprint, outcome.where
        if membership is None:
            verdicts.append(Verdict(k, False, value, problem=f"{where}: removed from the store meanwhile"))
        elif membership.fingerprint != value:
            verdicts.append(
                Verdict(k, False, value, problem=f"{where}: key {k!r} is already stored with another text "
                        "(remove it, or use another key)")
            )
        elif membership.cluster is None or membership.is_representative:
            verdicts.append(Verdict(k, True, value, membership.cluster, None, 0))
        else:
            verdicts.append(
                Verdict(k, False, value, membership.cluster, membership.representative, membership.distance)
            )
    return verdicts


__all__ = ["ClusterDistanceError", "Verdict", "dedup", "dedup_rows"]
