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

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .corpus import DELIBERATE, Skip, Source, digest, same_file, written_inside
from .errors import InputError, InvalidKeyError, OutputError, SimhashStoreError
from .keep import KeepPolicy
from .progress import OnProgress
from .terminal import visible

if TYPE_CHECKING:
    import numpy as np

    from .clusters import KnownNeighbours
    from .formats import RecordWriter
    from .ingest import Fingerprinter
    from .store import NewDocument, Store

DEFAULT_BATCH_SIZE = 1000


class ClusterDistanceError(SimhashStoreError):
    """Deduplication at a distance (or keep policy) other than the one the store's clusters were made at."""


class InputChangedError(InputError):
    """An input read twice (a keep policy other than ``first``) differed the second time."""


@dataclass(frozen=True)
class Verdict:
    """What happened to one record.

    ``kept``: the record is the representative of its cluster (or has no text to compare).
    ``duplicate_of``/``distance``: the representative it duplicates, and how far it is.
    ``problem``: why a bad record was not processed (then it is not kept).
    ``not_compared``: why a record was passed through (kept) without being compared or stored:
    ``"no words"`` for a text in which the scheme finds no features (empty, punctuation only,
    or a script it does not read), which has no fingerprint to compare.
    ``replaced``: the key of the representative this record replaced when it arrived (the keep
    policy ranks it better), stored before or earlier in the input; None for most records.
    """

    key: str | None
    kept: bool
    simhash: int | None = None
    cluster: int | None = None
    duplicate_of: str | None = None
    distance: int | None = None
    problem: str | None = None
    not_compared: str | None = None
    replaced: str | None = None

    def annotation(self) -> dict[str, Any]:
        """The fields ``--annotate`` adds to a record."""
        return {
            "simhash": None if self.simhash is None else f"{self.simhash:016x}",
            "cluster": self.cluster,
            "duplicate_of": self.duplicate_of,
            "distance": self.distance,
            "not_compared": self.not_compared,
        }


# The fields --annotate adds, in order. Not ``replaced``: a rerun, which finds everything stored,
# writes the same output byte for byte, and replaces nothing.
ANNOTATION_FIELDS = ("simhash", "cluster", "duplicate_of", "distance", "not_compared")


@dataclass
class DedupCounts:
    """What a run did beyond the verdicts: records recognised as stored with the same text (not
    fingerprinted again), and records fingerprinted."""

    unchanged: int = 0
    fingerprinted: int = 0


def dedup(
    records: Iterable[Mapping[str, Any]],
    *,
    store: Store | str | None = None,
    key: str = "key",
    text: str = "text",
    max_distance: int | None = None,
    keep: KeepPolicy | str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    jobs: int | None = None,
    html: bool = False,
    counts: DedupCounts | None = None,
) -> Iterator[tuple[Mapping[str, Any], Verdict]]:
    """``(record, verdict)`` for each record, in order; records are dicts (or any mapping).

    ``store``: a :class:`Store`, a URL, or None for the default store. ``max_distance``:
    None for the store's cluster distance (for a store that keeps no clusters yet: the k
    recorded by ``calibrate --apply``, else 11); another value is accepted by an empty store
    only. ``keep``: ``first``, ``longest``, ``shortest`` or ``field:NAME[:asc|desc]`` (:mod:`keep`;
    None: the store's policy, ``first`` for a new store); any but ``first`` gives verdicts after
    all records are stored (a one-shot iterator is held in memory for that). A record whose key
    is stored with the same text is not fingerprinted again (``counts`` says how many). A bad
    record (no key, no text, a key repeated) gets a verdict with ``problem`` set and the rest go on.
    ``html``: the ``text`` field holds a web page's HTML, and its main content is compared.
    """
    policy = None if keep is None else KeepPolicy.parse(keep)
    if (policy is None or policy.needs_every_record) and not isinstance(records, Sequence):
        records = list(records)

    def rows() -> Iterator[tuple[str, Mapping[str, Any]]]:
        return ((f"record {number}", record) for number, record in enumerate(records, start=1))

    for _, record, verdict in dedup_rows(
        rows,
        store=store,
        key=key,
        text=text,
        max_distance=max_distance,
        keep=policy,
        batch_size=batch_size,
        jobs=jobs,
        html=html,
        counts=counts,
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
    keep: KeepPolicy | str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    jobs: int | None = None,
    fingerprinter=None,
    html: bool = False,
    writable: Callable[[Mapping[str, Any]], str | None] | None = None,
    counts: DedupCounts | None = None,
    known: KnownNeighbours | None = None,
    in_memory: bool = False,
) -> Iterator[tuple[str, Mapping[str, Any] | Skip, Verdict]]:
    """:func:`dedup` over ``(where, record or Skip)`` rows as the file readers give them.

    ``rows`` is called once, and once more with a keep policy other than ``first``: every record
    is stored first, then each gets the verdict of the final clusters; each record of the second
    reading must be the one of the first (same key and text), else :class:`InputChangedError`.
    ``writable``: why the output could not hold a record (None: it can); such a record is a bad
    record, neither stored nor compared. ``known``: the stored documents near each record, found in
    advance by a caller that saw every fingerprint first (:class:`clusters.KnownNeighbours`).
    ``in_memory``: with keep ``first`` into a store that holds no documents, read and fingerprint
    every record first, then decide them all in memory and store them in one COPY
    (:func:`decide_in_memory`; the same verdicts, ids and clusters); where a record is bad, or the
    store was written meanwhile, nothing is stored that way and the batches decide, as without it.
    """
    from .ingest import Fingerprinter
    from .ingest import batches as in_batches
    from .scheme import DEFAULT
    from .store import Store

    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    policy = None if keep is None else KeepPolicy.parse(keep)
    counts = counts if counts is not None else DedupCounts()
    opened = store if isinstance(store, Store) else Store(store)
    try:
        seen: set[str] = set()
        readings: list[tuple] = []  # what each record was at the first reading, when there is a second
        with fingerprinter or Fingerprinter(DEFAULT, jobs) as fingerprinter:
            batches = in_batches(rows(), batch_size)
            # Known before the first batch: the store's policy (what its fields need) and the records
            # stored with the same text (not fingerprinted again). A new store is created meanwhile.
            stored_policy = _stored_policy(opened)
            if policy is None:
                policy = stored_policy or KeepPolicy()
            context = _Batching(key, text, seen, fingerprinter, opened, policy, writable, counts, readings, html)
            # The workers fingerprint the first batch while the store is created or checked (a new
            # store's migrations take a second or more), with the scheme they were started for:
            # the default unless told. A store of another scheme has the batch fingerprinted again.
            pending = [(batch, context.start(batch)) for batch in islice(batches, 1)]
            scheme = opened.init()
            _check_distance(opened, max_distance, policy)
            if fingerprinter.scheme != scheme:
                fingerprinter.scheme = scheme
                pending = [(batch, context.refingerprint(started)) for batch, started in pending]
            if in_memory and not policy.needs_every_record and opened.is_empty():
                # Every batch started and fingerprinted (the workers one batch ahead of the reading).
                started = []
                for batch in batches:
                    pending.append((batch, context.start(batch)))
                    started.append(_collected(*pending.pop(0)))
                started += [_collected(*done) for done in pending]
                k, _ = opened.cluster_state()
                assert k is not None  # _check_distance made the store keep clusters
                decided = _decided_batches(opened, started, k)
                if decided is not None:
                    for (batch, _), verdicts in zip(started, decided):
                        yield from zip(*zip(*batch), verdicts)
                    return
                pending, batches = started, iter(())  # the batches decide, their fingerprints already made
            # While the workers fingerprint one batch, the one before is stored and resolved.
            outcomes: list = []
            for batch in batches:
                pending.append((batch, context.start(batch)))
                yield from _finish_batch(opened, *pending.pop(0), policy, outcomes, known)
            for done in pending:
                yield from _finish_batch(opened, *done, policy, outcomes, known)
        if not policy.needs_every_record:
            return
        # Second pass: the clusters are final, every record's verdict is read from them.
        position = 0
        for start, batch in zip(range(0, len(outcomes), batch_size), in_batches(rows(), batch_size)):
            for where, record in batch:
                if _reading(record, key, text) != readings[position]:
                    raise InputChangedError(
                        f"{where}: the input changed while it was read twice (--keep {policy} reads it again "
                        "for the final verdicts); everything is stored, nothing written: run again on a file that "
                        "is not being written"
                    )
                position += 1
            keys = _stored_keys(outcomes[start : start + batch_size])
            memberships = opened.memberships(keys) if keys else {}
            yield from zip(*zip(*batch), _resolve(outcomes[start : start + batch_size], memberships))
        if position != len(readings):
            raise InputChangedError(
                f"the input changed while it was read twice (--keep {policy}): {len(readings)} records at the first "
                f"reading, {position} at the second; everything is stored, nothing written"
            )
    finally:
        if opened is not store:
            opened.close()


@dataclass
class FileCounts:
    """What :func:`dedup_files` wrote: records kept, duplicates, bad records, records passed
    through without a fingerprint (by reason), records found stored with the same text (not
    fingerprinted again), and each representative a better copy replaced: (key replaced, key replacing)."""

    kept: int = 0
    duplicates: int = 0
    bad: int = 0
    not_compared: Counter[str] = field(default_factory=Counter)
    unchanged: int = 0
    replaced: list[tuple[str, str]] = field(default_factory=list)


def refuse_annotation_clash(key: str, text: str) -> None:
    """InputError if the key or text field has the name of a field ``--annotate`` writes (it would be written over)."""
    clash = sorted({key, text} & set(ANNOTATION_FIELDS))
    if clash:
        raise InputError(
            f"--annotate writes a field {clash[0]!r}, which is the input's key or text field here: "
            "rename that field, or leave out --annotate"
        )


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
        annotation_types = {
            "simhash": pyarrow.string(),
            "cluster": pyarrow.int64(),
            "duplicate_of": pyarrow.string(),
            "distance": pyarrow.int32(),
            "not_compared": pyarrow.string(),
        }
    if output != "-":
        for path in inputs:
            if same_file(path, output):
                read = "standard input" if path == "-" else visible(path)
                raise OutputError(f"the output {visible(output)} is the input {read}: write to another file")
            if path != "-" and written_inside(output, path):
                raise OutputError(
                    f"the output {visible(output)} is inside the input directory {visible(path)}, where this and "
                    "later runs would read it (and its temporary file) as input: write it elsewhere"
                )
    try:
        return formats.open_writer(
            output, output_format, schema=schema, extra_fields=annotation_types if annotate else None
        )
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
    keep: KeepPolicy | str | None = None,
    annotate: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    fingerprinter: Fingerprinter | None = None,
    on_failure: Callable[[str], None] = lambda message: None,
    on_progress: OnProgress | None = None,
    html: bool = False,
    in_memory: bool = False,
) -> FileCounts:
    """:func:`dedup_rows` over the records of inputs of any format (``input_formats``: registered
    names, see :mod:`~simhash_store.formats`; ``-``: standard input), writing the kept records (every record with ``annotate``, with its
    verdict's fields added) to ``writer``, which is closed at the end, not abandoned on an error.
    A bad record, or one the output cannot hold (checked before it is stored, so it is neither
    stored nor compared), costs that record: ``on_failure`` is told why, and it is counted as bad,
    once. With ``annotate``, a key or text field named like an annotation is an InputError before
    any work, and a record holding a field of such a name is a bad record: nothing is written over.
    ``html``: the ``text`` field holds a web page's HTML. ``on_progress(done, total)`` is told the
    bytes of the inputs read so far, and their total size (None when one is standard input).
    ``in_memory``: decide in memory where :func:`dedup_rows` can (every record held until the end).
    """
    from . import formats

    if annotate:
        refuse_annotation_clash(key, text)
    options = formats.ReadOptions(
        key_field=key, text_field=text, required={key: "the key", text: "the page" if html else "the text"}
    )
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

    def writable(record: Mapping[str, Any]) -> str | None:
        if annotate:
            clash = next((name for name in ANNOTATION_FIELDS if name in record), None)
            if clash is not None:
                return f"has a field {clash!r}, which --annotate writes: rename it, or leave out --annotate"
        try:
            writer.check(record)
        except formats.FormatError as exc:
            return str(exc)
        return None

    counts = FileCounts()
    rerun = DedupCounts()
    for _, record, verdict in dedup_rows(
        rows,
        store=store,
        key=key,
        text=text,
        max_distance=max_distance,
        keep=keep,
        fingerprinter=fingerprinter,
        batch_size=batch_size,
        html=html,
        writable=writable,
        counts=rerun,
        in_memory=in_memory,
    ):
        if verdict.problem is not None or isinstance(record, Skip):  # a Skip always has its problem
            counts.bad += 1
            on_failure(str(verdict.problem))
            continue
        # Checked before it was stored (writable); what the check cannot see (fields of records checked
        # in the same batch, together past the Parquet column bound) costs that record here.
        try:
            if annotate:
                writer.write({**record, **verdict.annotation()})
            elif verdict.kept:
                writer.write(dict(record))
        except formats.FormatError as exc:
            counts.bad += 1
            on_failure(f"{verdict.key}: {exc}")
            continue
        if verdict.replaced is not None:
            counts.replaced.append((verdict.replaced, str(verdict.key)))
        if verdict.not_compared is not None:
            counts.not_compared[verdict.not_compared] += 1
        elif verdict.kept:
            counts.kept += 1
        else:
            counts.duplicates += 1
    writer.close()
    counts.unchanged = rerun.unchanged
    return counts


def _file_size(path: str) -> int | None:
    """The size of a regular file; None for stdin or a directory (no total known in advance)."""
    return os.path.getsize(path) if path != "-" and os.path.isfile(path) else None


def _reading(record, key_field: str, text_field: str) -> tuple:
    """What the second reading of a record must match: its key and the digest of its text (or the skip)."""
    if isinstance(record, Skip):
        return ("skip", str(record))
    value = record.get(text_field)
    text = digest(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else repr(type(value))
    return (repr(record.get(key_field)), text)


def _stored_policy(store: Store) -> KeepPolicy | None:
    """The store's keep policy, or None for a store not created yet."""
    try:
        return store.keep_policy()
    except SimhashStoreError:
        return None


def _check_distance(store: Store, max_distance: int | None, policy: KeepPolicy) -> None:
    """Deduplicate against clusters at the distance and by the keep policy asked for; an empty store
    starts keeping them."""
    distance, unclustered = store.cluster_state()
    stored_policy = store.keep_policy()
    if distance is None or (max_distance is not None and max_distance != distance) or stored_policy != policy:
        if store.is_empty():
            store.recluster(max_distance, keep=policy)
            return
        if distance is not None and stored_policy != policy and (max_distance is None or max_distance == distance):
            raise ClusterDistanceError(
                f"the store's clusters keep {stored_policy}, not {policy}: run `simhash-store recluster --keep {policy}` "
                "first, or leave out --keep"
            )
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
    replaced: str | None = None


@dataclass
class _Batching:
    """Starts each batch: checks its records, recognises those stored with the same text, and
    sends the others to the fingerprinting workers."""

    key_field: str
    text_field: str
    seen: set[str]
    fingerprinter: Any
    store: Store
    policy: KeepPolicy
    writable: Callable[[Mapping[str, Any]], str | None] | None
    counts: DedupCounts
    readings: list[tuple]
    html: bool = False  # the text field holds a web page's HTML: its main content is compared

    def start(self, batch):
        """(outcomes so far, sources, collect) of one batch."""
        from .formats.html import field_text

        outcomes: list[Verdict | _Stored | None] = [None] * len(batch)
        sources: list[tuple[int, Source, bytes, Any]] = []
        key_field, text_field = self.key_field, self.text_field
        for position, (where, record) in enumerate(batch):
            if self.policy.needs_every_record:
                self.readings.append(_reading(record, key_field, text_field))
            checked = check_record(where, record, key_field, text_field, self.seen)
            if isinstance(checked, Verdict):
                outcomes[position] = checked
                continue
            key, text = checked, record.get(text_field)
            # A record the output cannot hold costs only itself: not stored, so it never represents others.
            problem = self.writable(record) if self.writable is not None else None
            if problem is not None:
                outcomes[position] = Verdict(key, False, problem=f"{where}: {problem}")
                continue
            self.seen.add(key)
            if self.html:
                text = field_text(record, text_field, where)
                if isinstance(text, Skip):  # no main content: passed through as kept, not compared, as empty text is
                    deliberate = text.reason in DELIBERATE
                    outcomes[position] = Verdict(
                        key,
                        deliberate,
                        problem=None if deliberate else str(text),
                        not_compared=text.reason if deliberate else None,
                    )
                    continue
            raw = text.encode("utf-8", "surrogatepass")
            source = Source(key, text=text, size=len(raw))
            sources.append((position, source, digest(raw), self.policy.value_of(record)))
        return self._fingerprint(outcomes, sources)

    def _fingerprint(self, outcomes, sources):
        """Records stored with the same text take their stored fingerprint; the others go to the workers."""
        stored = _stored_digests(self.store, [source.key for _, source, _, _ in sources])
        known: dict[int, tuple[int, int | None]] = {}
        tasks = []
        for index, (_, source, content, _) in enumerate(sources):
            found = stored.get(source.key)
            if found is not None and found[0] == content:
                known[index] = (found[1], found[2])
            else:
                tasks.append((source, None))
        self.counts.unchanged += len(known)
        self.counts.fingerprinted += len(tasks)
        collect = self.fingerprinter.submit(tasks)
        return outcomes, sources, known, collect

    def refingerprint(self, started):
        """A started batch again, for the store's scheme (the workers began with another)."""
        outcomes, sources, known, _ = started
        self.counts.unchanged -= len(known)
        self.counts.fingerprinted -= len(sources) - len(known)
        return self._fingerprint(outcomes, sources)


def check_record(
    where: str, record: Mapping[str, Any] | Skip, key_field: str, text_field: str, seen: set[str]
) -> str | Verdict:
    """The key of a record ``dedup`` goes on with (its text a string), or the verdict of a bad record:
    a reader's Skip, no key (a string or integer) or no text (a string), a key the store refuses,
    a key among ``seen`` (repeated in the input)."""
    from .store import validate_key

    if isinstance(record, Skip):
        return Verdict(None, False, problem=str(record))
    key, text = record.get(key_field), record.get(text_field)
    if not isinstance(key, (str, int)) or isinstance(key, bool) or key == "":
        return Verdict(None, False, problem=f"{where}: no {key_field!r} field with a string or integer")
    key = str(key)
    if not isinstance(text, str):
        return Verdict(key, False, problem=f"{where}: no {text_field!r} field with a string")
    try:
        validate_key(key)
    except InvalidKeyError as exc:
        return Verdict(None, False, problem=f"{where}: {exc}")
    if key in seen:
        return Verdict(key, False, problem=f"{where}: key {key!r} repeated in the input")
    return key


def _stored_digests(store: Store, keys: list[str]) -> dict[str, tuple[bytes | None, int, int | None]]:
    """(digest, fingerprint, length) of the keys stored; nothing for a store not created yet."""
    if not keys:
        return {}
    try:
        return store.stored_digests(keys)
    except SimhashStoreError:
        return {}


def _finish_batch(store: Store, batch, started, policy: KeepPolicy, kept_outcomes: list, neighbours=None):
    """Store a batch whose fingerprints are coming; with keep first, yield its verdicts at once
    (with any other policy, keep its outcomes for the second pass)."""
    outcomes, sources, known, collect = started
    outcomes, memberships = _store_batch(store, batch, outcomes, sources, known, collect(None), neighbours)
    if not policy.needs_every_record:
        yield from zip(*zip(*batch), _resolve(outcomes, memberships))
    else:
        kept_outcomes.extend(outcomes)


def _prepared_items(sources, known, fingerprinted):
    """(position, source, keep value, :class:`ingest.Prepared`) of each record of a batch that reached
    the fingerprint: from what the store already had (``known``: by index, (fingerprint, length)), else
    the next of ``fingerprinted``."""
    from .ingest import Prepared

    prepared = iter(fingerprinted)
    for index, (position, source, content, keep_value) in enumerate(sources):
        if index in known:
            fingerprint, length = known[index]
            item = Prepared(source.key, source.size, fingerprint=fingerprint, digest=content, length=length)
        else:
            item = next(prepared)
        yield position, source, keep_value, item


def _store_batch(store: Store, batch, outcomes, sources, known, fingerprinted, neighbours=None):
    """Store the fingerprinted records of one batch (one transaction, which also reads back where
    each sits): (outcomes, with a final verdict for records that cannot be stored; memberships)."""
    from .store import NewDocument

    documents = []
    for position, source, keep_value, item in _prepared_items(sources, known, fingerprinted):
        where = batch[position][0]
        if item.skip is not None:
            # Empty or wordless text cannot be compared: passed through as kept, not stored, and said so.
            deliberate = item.skip.reason in DELIBERATE
            detail = f" ({item.skip.detail})" if item.skip.detail else ""
            outcomes[position] = Verdict(
                source.key,
                deliberate,
                problem=None if deliberate else f"{where}: {item.skip.reason}{detail}",
                not_compared=item.skip.reason if deliberate else None,
            )
            continue
        assert item.fingerprint is not None  # not skipped: fingerprinted
        outcomes[position] = _Stored(source.key, item.fingerprint, where)
        documents.append(NewDocument(source.key, item.fingerprint, item.digest, item.length, keep_value=keep_value))
    # Keys stored before (by a run killed after this batch, or an earlier batch) keep their text
    # and are read back.
    memberships, replaced = store.add_new_and_cluster(documents, neighbours) if documents else ({}, [])
    if replaced:
        replacing = {new: old for old, new in replaced}
        outcomes = [
            _Stored(o.key, o.fingerprint, o.where, replacing[o.key])
            if isinstance(o, _Stored) and o.key in replacing
            else o
            for o in outcomes
        ]
    return outcomes, memberships


def decide_in_memory(
    store: Store,
    documents: Sequence[NewDocument],
    batches: Sequence[int],
    k: int,
    near: Mapping[int, Sequence[int]] | None = None,
) -> list[Verdict] | None:
    """The verdicts of a ``dedup`` run (keep ``first``, into a store that holds no documents and keeps
    clusters at ``k``) over its fingerprinted ``documents`` in input order (``batches``: each one's batch
    number), decided in memory and stored in one COPY (:func:`decided_clusters`). None, nothing stored,
    where the store is not so any more (written meanwhile): the batches then decide."""
    import numpy as np

    values = np.array([document.fingerprint for document in documents], dtype=np.uint64)
    found = decided_clusters(store, documents, values, batches, k, near)
    if found is None:
        return None
    leader, ids = found
    distances = np.bitwise_count(values ^ values[leader]).tolist()
    verdicts = []
    for index, document in enumerate(documents):
        head = int(leader[index])
        if head == index:
            verdicts.append(Verdict(document.key, True, document.fingerprint, ids[index], None, 0))
        else:
            verdicts.append(
                Verdict(document.key, False, document.fingerprint, ids[head], documents[head].key, distances[index])
            )
    return verdicts


def decided_clusters(
    store: Store,
    documents: Sequence[NewDocument],
    values: np.ndarray,
    batches: Sequence[int],
    k: int,
    near: Mapping[int, Sequence[int]] | None = None,
) -> tuple[np.ndarray, list[int]] | None:
    """What :func:`decide_in_memory` decides, as arrays: (the position of each document's
    representative, a numpy array; each document's id) for ``documents`` in input order (``values``:
    their fingerprints, a numpy uint64 array). The rule is ``dedup``'s: a record joins the cluster of
    the nearest earlier representative within ``k``, ties to the earliest, else founds one; with keep
    ``first`` representatives never change, so this is :func:`clusters.leaders_with_copies` over the
    run's pairs within ``k`` (``near``: found by the caller; None: here). The documents are stored in
    one COPY (:meth:`Store.add_decided`), each with the id, cluster and arrival :func:`dedup_rows` in
    batches of ``batches`` gives it. None, nothing stored, where the store is not so any more."""
    from .clusters import leaders_with_copies

    leader = leaders_with_copies(values, k, near)
    ids = store.add_decided(documents, batches, leader.tolist(), k)
    if ids is None:
        return None
    return leader, ids


def _decided_batches(store: Store, started: list, k: int) -> list[list[Verdict]] | None:
    """The verdicts of every record of batches started and fingerprinted (:func:`_collected`),
    decided in memory (:func:`decide_in_memory`); None, nothing stored, where the batches must
    decide: a bad record (whose fate is theirs to tell) or a store written meanwhile."""
    from .store import NewDocument

    verdicts: list[list[Verdict | None]] = []
    documents: list[NewDocument] = []
    numbers: list[int] = []
    places: list[tuple[int, int]] = []  # (batch, position) of each document
    for number, (_, (outcomes, sources, known, collect)) in enumerate(started):
        if any(isinstance(outcome, Verdict) and outcome.problem is not None for outcome in outcomes):
            return None
        decided: list[Verdict | None] = list(outcomes)
        for position, source, keep_value, item in _prepared_items(sources, known, collect(None)):
            if item.skip is not None:
                if item.skip.reason not in DELIBERATE:
                    return None
                decided[position] = Verdict(source.key, True, not_compared=item.skip.reason)
                continue
            assert item.fingerprint is not None
            documents.append(NewDocument(source.key, item.fingerprint, item.digest, item.length, keep_value=keep_value))
            numbers.append(number)
            places.append((number, position))
        verdicts.append(decided)
    found = decide_in_memory(store, documents, numbers, k)
    if found is None:
        return None
    for (number, position), verdict in zip(places, found):
        verdicts[number][position] = verdict
    return verdicts  # type: ignore[return-value]  # every place filled


def _collected(batch, started) -> tuple:
    """A started batch with its fingerprints collected: ``collect`` hands them out again at no cost."""
    outcomes, sources, known, collect = started
    done = collect(None)
    return batch, (outcomes, sources, known, lambda progress: done)


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
                Verdict(
                    k,
                    False,
                    value,
                    problem=f"{where}: key {k!r} is already stored with another text (remove it, or use another key)",
                )
            )
        elif membership.cluster is None or membership.is_representative:
            verdicts.append(Verdict(k, True, value, membership.cluster, None, 0, replaced=outcome.replaced))
        else:
            verdicts.append(
                Verdict(
                    k,
                    False,
                    value,
                    membership.cluster,
                    membership.representative,
                    membership.distance,
                    replaced=outcome.replaced,
                )
            )
    return verdicts


__all__ = [
    "ANNOTATION_FIELDS",
    "ClusterDistanceError",
    "DedupCounts",
    "FileCounts",
    "InputChangedError",
    "Verdict",
    "dedup",
    "dedup_files",
    "dedup_output",
    "dedup_rows",
    "refuse_annotation_clash",
]
