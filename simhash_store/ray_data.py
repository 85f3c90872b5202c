"""Fingerprint, store and deduplicate Ray Datasets of records on a Ray cluster (``simhash-store[ray]``).

The fingerprinting (the costly part: segmentation, about 1 MB/s a core) runs on the workers,
each loading the scheme's dictionaries and weights once; the writes go from the workers to the
store in parallel; deduplication decides on the driver. With keep ``first`` into a store that
holds no documents, it decides in memory over the run's pairs within k (:func:`clusters.leaders`,
``dedup``'s rule) and stores the documents and clusters with the ids, clusters and arrivals
``dedup``'s batches give them, the records staying on the workers (they check them, write the
documents into a staging table the driver moves into the store in one transaction, and add the
annotations; the driver reads keys and fingerprints); otherwise with the very code of ``dedup``
(:func:`dedup.dedup_rows`), batch by batch through the store, its fingerprints taken from the
workers. Either way its verdicts, cluster ids and annotations are those of the ``dedup`` command
over the same records in the same order. At a distance where exact-match block tables have keys
long enough (k up to 4), the workers can also join the fingerprints on those keys
(:func:`near_fingerprints`): the pairs the in-memory decisions run over, or, batch by batch, the
representatives each batch reads by key instead of comparing all of them or searching the store
per record (``dedup_dataset(join=...)``).

>>> import ray  # doctest: +SKIP
>>> ds = ray.data.read_json("crawl/")  # doctest: +SKIP
>>> kept = dedup_dataset(ds, "postgresql://coordinator/corpus").filter(
...     lambda r: r["duplicate_of"] is None
... )  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from . import clusters, pairs
from .clusters import KnownNeighbours
from .corpus import DELIBERATE, Skip, Source
from .dedup import DEFAULT_BATCH_SIZE, Verdict, check_record, decided_clusters, dedup_rows
from .dedup import _check_distance as check_distance
from .errors import InputError
from .ingest import Prepared, Progress, prepare
from .keep import KeepPolicy
from .scheme import DEFAULT, Scheme, get_scheme

if TYPE_CHECKING:
    import pyarrow
    from ray.data import Dataset

    from .store import NewDocument, Store

# Columns fingerprint_dataset adds (write_dataset and dedup_dataset read them back).
SIMHASH, DIGEST, LENGTH, NOT_FINGERPRINTED, SIZE = "simhash", "_digest", "_length", "_not_fingerprinted", "_size"
_ADDED = (SIMHASH, DIGEST, LENGTH, NOT_FINGERPRINTED, SIZE)
_ANNOTATIONS = ("simhash", "cluster", "duplicate_of", "distance", "not_compared")
RECORDS_PER_TASK = 500  # rows per map_batches call: large enough to amortise a task, small enough to spread


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("Ray is not installed: pip install 'simhash-store[ray]'") from None
    return ray


def _fresh_ray_data(ray: Any) -> None:
    """Let Ray Data run in a driver that disconnected from its cluster and connected again.

    Ray Data (before the fix of https://github.com/ray-project/ray/issues/54841, August 2025)
    keeps the handle of its stats actor for the whole process, checked only against the
    cluster's id: after ``ray.shutdown()`` and ``ray.init()`` to the same cluster every Dataset
    failed with "Can't find actor ... It might be dead or it's from a different cluster". Its
    handle from an earlier connection is dropped here, so Ray Data looks the actor up again
    by name. Nothing is done where Ray's internals differ (a newer Ray has no such handle).
    """
    if not ray.is_initialized():
        return
    try:
        from ray.data._internal.stats import StatsManager
    except ImportError:
        return
    connection = ray.get_runtime_context().get_job_id()  # a new one at each ray.init
    manager: Any = StatsManager  # Ray's singleton, given a mark of ours (not among its typed attributes)
    if getattr(manager, "_simhash_connection", None) != connection and hasattr(manager, "_stats_actor_handle"):
        manager._stats_actor_handle = None
        manager._simhash_connection = connection


def _key_of(value: Any) -> str | None:
    """The key as dedup reads it (a string, or an integer written out), else None."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None
    return str(value)


class FingerprintBatch:
    """The ``map_batches`` callable: one per worker, so the scheme (dictionaries, weights) loads once."""

    def __init__(self, scheme: str, text_field: str = "text", key_field: str = "key") -> None:
        self.scheme = get_scheme(scheme)
        self.text_field, self.key_field = text_field, key_field
        prepare(Source("warm-up", text="预热词典", size=12), None, self.scheme)  # loads the dictionaries now

    def prepared(self, keys: Sequence[Any], texts: Sequence[Any]) -> list[Prepared | None]:
        out: list[Prepared | None] = []
        for raw_key, text in zip(keys, texts):
            key = _key_of(raw_key)
            if key is None or not isinstance(text, str):
                out.append(None)  # dedup calls it a bad record; write_dataset refuses it
                continue
            out.append(
                prepare(Source(key, text=text, size=len(text.encode("utf-8", "surrogatepass"))), None, self.scheme)
            )
        return out

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        count = len(next(iter(batch.values()))) if batch else 0
        keys: list[Any] = list(batch[self.key_field]) if self.key_field in batch else [None] * count
        texts = list(batch[self.text_field]) if self.text_field in batch else [None] * count
        done = self.prepared([k.item() if hasattr(k, "item") else k for k in keys], texts)
        batch = dict(batch)
        batch[SIMHASH] = [None if p is None or p.fingerprint is None else f"{p.fingerprint:016x}" for p in done]
        batch[DIGEST] = [None if p is None else p.digest for p in done]
        batch[LENGTH] = [None if p is None else p.length for p in done]
        batch[NOT_FINGERPRINTED] = [
            None if p is None or p.skip is None else f"{p.skip.reason}\t{p.skip.detail}" for p in done
        ]
        batch[SIZE] = [None if p is None else p.size for p in done]
        return batch


def fingerprint_dataset(
    ds: Dataset,
    *,
    scheme: Scheme | str = DEFAULT,
    text_field: str = "text",
    key_field: str = "key",
    concurrency: int | None = None,
) -> Dataset:
    """``ds`` with each record's fingerprint added (``simhash``: 16 hex digits, None for a text
    without features or a record without key or text) and what storing needs (``_digest``,
    ``_length``, ``_not_fingerprinted``, ``_size``), in the input order."""
    name = get_scheme(scheme).name
    _fresh_ray_data(_ray())
    out = ds.map_batches(
        FingerprintBatch,
        fn_constructor_args=(name, text_field, key_field),
        batch_size=RECORDS_PER_TASK,
        batch_format="numpy",
        concurrency=(1, concurrency or _cpus()),
    )
    # Each Dataset keeps a copy of the context it was made in: the order is asked of this one
    # (setting the current context would miss a ``ds`` made before, and dedup depends on the order).
    out.context.execution_options.preserve_order = True
    return out


def _materialized(ds: Dataset) -> Dataset:
    """``ds.materialize()``, in ``ds``'s order. Ray Data 2.40 runs ``materialize`` in the current
    context rather than the dataset's, so the order :func:`fingerprint_dataset` asks of its dataset
    was lost there (20,000 records came back with whole blocks swapped, and dedup gave other
    clusters); the current context asks for it too while it runs."""
    from ray.data.dataset import MaterializedDataset

    if isinstance(ds, MaterializedDataset) and ds.context.execution_options.preserve_order:
        return ds  # already read in its order
    with _ordered(ds.context.execution_options.preserve_order):
        out = ds.materialize()
    out.context.execution_options.preserve_order = True  # a materialized dataset is read in its order
    return out


@contextmanager
def _ordered(wanted: bool = True) -> Iterator[None]:
    """The current Ray Data context asks for the input order while this runs (if ``wanted``)."""
    from ray.data import DataContext

    current = DataContext.get_current()
    before = current.execution_options.preserve_order
    current.execution_options.preserve_order = before or wanted
    try:
        yield
    finally:
        current.execution_options.preserve_order = before


def _cpus() -> int:
    return max(1, int(_ray().cluster_resources().get("CPU", 1)))


class _WriteBatch:
    """The ``map_batches`` callable of :func:`write_dataset`: one store connection per worker."""

    def __init__(self, url: str, key_field: str) -> None:
        from .store import Store

        self.store = Store(url)
        self.key_field = key_field

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from .store import NewDocument

        documents = [
            NewDocument(
                str(_key_of(key.item() if hasattr(key, "item") else key)), int(simhash, 16), digest, int(length)
            )
            for key, simhash, digest, length in zip(batch[self.key_field], batch[SIMHASH], batch[DIGEST], batch[LENGTH])
            if simhash is not None
        ]
        # The store's upsert by key: a key stored with the same fingerprint and digest is left alone,
        # so a task Ray retries after a failure (or a second run) writes nothing twice.
        result = self.store.add(documents)
        return {"added": [result.added], "updated": [result.updated], "unchanged": [result.unchanged]}


def write_dataset(
    ds: Dataset,
    url: str,
    *,
    scheme: Scheme | str | None = None,
    text_field: str = "text",
    key_field: str = "key",
    concurrency: int | None = None,
) -> dict[str, int]:
    """Store every record's fingerprint (fingerprinting ``ds`` first unless it went through
    :func:`fingerprint_dataset`) from the workers, in parallel; returns the counts added, updated
    and unchanged. Idempotent: a record whose key is stored with the same text is left alone."""
    from .store import Store

    _fresh_ray_data(_ray())
    with Store(url, scheme=scheme) as store:
        stored = store.init()  # created (or checked) once, before the workers write
    if scheme is not None and get_scheme(scheme) != stored:
        raise InputError(f"the store's scheme is {stored.name}, not {get_scheme(scheme).name}")
    if SIMHASH not in ds.schema().names:
        ds = fingerprint_dataset(ds, scheme=stored, text_field=text_field, key_field=key_field, concurrency=concurrency)
    counts = ds.select_columns([key_field, SIMHASH, DIGEST, LENGTH]).map_batches(
        _WriteBatch,
        fn_constructor_args=(url, key_field),
        batch_size=5000,
        concurrency=(1, concurrency or _cpus()),
    )
    totals = {"added": 0, "updated": 0, "unchanged": 0}
    for row in counts.iter_rows():
        for name in totals:
            totals[name] += int(row[name])
    return totals


class _Precomputed:
    """A stand-in for :class:`ingest.Fingerprinter` in :func:`dedup.dedup_rows`: the fingerprints
    of the rows already read, computed by the workers, handed out in input order."""

    def __init__(self, scheme: Scheme) -> None:
        self._scheme = scheme
        self.ready: dict[str, deque[Prepared]] = {}

    @property
    def scheme(self) -> Scheme:
        return self._scheme

    @scheme.setter
    def scheme(self, value: Scheme) -> None:
        raise InputError(f"the records were fingerprinted with scheme {self._scheme.name}, the store's is {value.name}")

    def submit(self, tasks: Sequence[tuple[Source, bytes | None]]) -> Callable[[Progress | None], list[Prepared]]:
        done = [self.ready[source.key].popleft() for source, _ in tasks]
        return lambda progress: done

    def __enter__(self) -> _Precomputed:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass


def _prepared_of(record: Mapping[str, Any], key: str) -> Prepared:
    if record[NOT_FINGERPRINTED] is not None:
        reason, detail = str(record[NOT_FINGERPRINTED]).split("\t", 1)
        return Prepared(key, int(record[SIZE]), skip=Skip(key, reason, detail))
    return Prepared(
        key,
        int(record[SIZE]),
        fingerprint=int(record[SIMHASH], 16),
        digest=bytes(record[DIGEST]),
        length=int(record[LENGTH]),
    )


def dedup_records(
    rows: Callable[[], Iterator[tuple[str, Mapping[str, Any] | Skip]]],
    fingerprinted: Callable[[], Iterator[Mapping[str, Any]]],
    *,
    store: Store,
    scheme: Scheme,
    key: str = "key",
    **options: Any,
) -> Iterator[tuple[str, Mapping[str, Any] | Skip, Verdict]]:
    """:func:`dedup.dedup_rows` over ``rows``, with fingerprints from ``fingerprinted`` (the same
    records, in the same order, through :func:`fingerprint_dataset`) instead of its own."""
    fingerprinter = _Precomputed(scheme)

    def joined() -> Iterator[tuple[str, Mapping[str, Any] | Skip]]:
        for (where, record), computed in zip(rows(), fingerprinted()):
            if not isinstance(record, Skip) and computed[SIZE] is not None:
                name = str(_key_of(record.get(key)))
                fingerprinter.ready.setdefault(name, deque()).append(_prepared_of(computed, name))
            yield where, record

    return dedup_rows(joined, store=store, key=key, fingerprinter=fingerprinter, **options)


def dedup_dataset(
    ds: Dataset,
    url: str | None = None,
    max_distance: int | None = None,
    *,
    keep: str | KeepPolicy | None = None,
    text_field: str = "text",
    key_field: str = "key",
    batch_size: int = DEFAULT_BATCH_SIZE,
    concurrency: int | None = None,
    join: bool | None = None,
    in_memory: bool = True,
) -> Dataset:
    """Every record of ``ds`` with the ``dedup --annotate`` fields added (``simhash``, ``cluster``,
    ``duplicate_of``, ``distance``, ``not_compared``), deduplicated against the store at ``url``
    (None: the default store) as the ``dedup`` command does: same keep rules (``keep``: ``first``,
    ``longest``, ``shortest``, ``field:NAME[:asc|desc]``; None: the store's policy), clusters and
    verdicts. A record the command would call bad raises :class:`InputError`. Fingerprints are
    made on the workers; the leader-based clustering (input order) is decided on the driver: with
    keep ``first`` into a store holding no documents, in memory, the documents written by the workers
    (given ``url``, by a role owning the store; else by the driver, in one COPY) (a bad record,
    or a store written meanwhile: batch by batch, as otherwise), else batch by batch through the store.
    ``join``: the workers also join the fingerprints on exact-match block keys, for the pairs the
    in-memory decisions run over, or for each batch to read the representatives near its records by
    key (:func:`known_neighbours`); None: up to ``JOIN_MAX_DISTANCE``, into a Citus store that will
    hold more documents than a batch compares in memory (``clusters.IN_MEMORY_REPRESENTATIVES``),
    where it was measured to pay. ``in_memory``: False decides batch by batch always. Same verdicts either way.
    """
    from .store import Store

    _fresh_ray_data(_ray())
    with Store(url) as store:
        scheme = store.init()
        fingerprinted = fingerprint_dataset(
            ds, scheme=scheme, text_field=text_field, key_field=key_field, concurrency=concurrency
        )
        out = _dedup_fingerprinted(
            fingerprinted,
            store,
            scheme,
            max_distance,
            keep=keep,
            text_field=text_field,
            key_field=key_field,
            batch_size=batch_size,
            join=join,
            in_memory=in_memory,
            url=url if isinstance(url, str) else None,
        )
    return out


# Beyond, an exact-match layout of at most 20 tables has keys of 11 bits or fewer (pairs.py): buckets of
# n / 2,048 values or more, quadratic. Up to it, the join is used by default where it was measured to pay
# (docs/scale-out.md): into a Citus store that will hold more documents than a batch compares in memory,
# where each record's search is otherwise a fan-out to every shard (10x faster at 5,000 records with the
# in-memory bound at 0). On one server the search per record is cheap: the join's sort on the workers
# cost what it saved (0.70x-1.00x at 100,000-200,000 records).
JOIN_MAX_DISTANCE = 4


def _dedup_fingerprinted(
    fingerprinted: Dataset,
    store: Store,
    scheme: Scheme,
    max_distance: int | None = None,
    *,
    keep: str | KeepPolicy | None = None,
    text_field: str = "text",
    key_field: str = "key",
    batch_size: int = DEFAULT_BATCH_SIZE,
    join: bool | None = None,
    in_memory: bool = True,
    url: str | None = None,
) -> Dataset:
    """The decisions of :func:`dedup_dataset` over records that went through :func:`fingerprint_dataset`
    with the store's ``scheme``: each record with its annotations, in input order. ``in_memory``:
    with keep ``first`` into a store holding no documents, decide in memory and store in bulk
    (:func:`_decided_in_memory`); False: batch by batch through the store, always. ``url``: the
    store's URL, with which the workers write the decided documents (None: the driver writes them)."""
    policy = KeepPolicy.parse(keep) if keep is not None else store.keep_policy()
    read: list[Mapping[str, Any]] | None = None  # the rows, once read by the in-memory path
    if in_memory and not policy.needs_every_record:
        if batch_size < 1:  # as dedup_rows says it, before anything is done
            raise ValueError(f"batch size must be at least 1, not {batch_size}")
        check_distance(store, max_distance, policy)  # an empty store starts keeping clusters at the distance asked
        if store.is_empty():
            fingerprinted, decided = _decided_in_memory(
                fingerprinted, store, key_field, text_field, batch_size, join, url
            )
            if decided is not None:
                return decided
            read = _rows_of(fingerprinted)  # materialized: read once more, for the batches
    known = None
    if join is not False:
        # What dedup_rows checks first (again there, then at no cost): an empty store starts keeping
        # clusters at the distance asked for; known here, it is the distance of the join.
        check_distance(store, max_distance, policy)
        k, _ = store.cluster_state()
        assert k is not None
        fingerprinted, joined = _uses_join(fingerprinted, store, k, join)
        if joined:
            known = known_neighbours(fingerprinted, store, k)
    if policy.needs_every_record:
        fingerprinted = _materialized(fingerprinted)  # read twice (a materialized dataset: at no cost)

    def computed() -> Iterator[Mapping[str, Any]]:
        return iter(read) if read is not None else fingerprinted.iter_rows()

    def rows() -> Iterator[tuple[str, Mapping[str, Any] | Skip]]:
        for number, row in enumerate(computed(), start=1):
            yield f"record {number}", {name: value for name, value in row.items() if name not in _ADDED}

    out = []
    for _, record, verdict in dedup_records(
        rows,
        computed,
        store=store,
        scheme=scheme,
        key=key_field,
        text=text_field,
        max_distance=max_distance,
        keep=policy,
        batch_size=batch_size,
        known=known,
    ):
        if verdict.problem is not None:
            raise InputError(verdict.problem)
        assert not isinstance(record, Skip)
        out.append({**record, **verdict.annotation()})
    return _ray().data.from_items(out)


def _uses_join(fingerprinted: Dataset, store: Store, k: int, join: bool | None) -> tuple[Dataset, bool]:
    """(``fingerprinted``, materialized if it is to be read twice; whether to join it on the workers):
    asked (``join``), or by default where it was measured to pay (see ``JOIN_MAX_DISTANCE``)."""
    if join is False or not (join or (k <= JOIN_MAX_DISTANCE and store.is_distributed())):
        return fingerprinted, False
    fingerprinted = _materialized(fingerprinted)  # read by the join, then by the decisions
    count = fingerprinted.count()
    large = store.count() + count > clusters.IN_MEMORY_REPRESENTATIVES
    return fingerprinted, bool(join or (large and pairs.exact_layout_is_cheaper(count, k)))


# Columns of what the in-memory decisions need of each record, made on the workers (_checked).
_KEY, _PROBLEM, _FINGERPRINT, _NOT_COMPARED = "_key", "_problem", "_fingerprint", "_not_compared"


def _checked(batch: pyarrow.Table, key_field: str, text_field: str) -> pyarrow.Table:
    """What the in-memory decisions need of each fingerprinted record of ``batch`` (a ``map_batches``
    call, on the workers): the key as ``dedup`` reads it; the problem that makes it a bad record there
    (:func:`dedup.check_record`'s, but for a key repeated in the input, which the driver finds over
    every key; or a fingerprint that failed); its fingerprint, digest and length; and why it is passed
    through without being compared (a text without words). Nothing else of the record leaves the worker."""
    import pyarrow as pa

    count = batch.num_rows

    def column(name: str) -> list[Any]:
        return batch.column(name).to_pylist() if name in batch.column_names else [None] * count

    keys: list[str | None] = []
    problems: list[str | None] = []
    values: list[int | None] = []
    reasons: list[str | None] = []
    # A record as the batches read it holds no column of fingerprint_dataset's (_ADDED).
    record_keys = [None] * count if key_field in _ADDED else column(key_field)
    texts = [None] * count if text_field in _ADDED else column(text_field)
    for key, text, simhash, size, skipped in zip(
        record_keys, texts, column(SIMHASH), column(SIZE), column(NOT_FINGERPRINTED)
    ):
        checked = check_record("record", {key_field: key, text_field: text}, key_field, text_field, set())
        reason = None if skipped is None else str(skipped).split("\t", 1)[0]
        if isinstance(checked, Verdict):
            problem: str | None = checked.problem
        elif size is None:
            problem = "record: not fingerprinted"
        elif reason is not None and reason not in DELIBERATE:  # a record that failed: a bad record
            problem = f"record: not fingerprinted: {skipped}"
        else:
            problem = None
        keys.append(None if isinstance(checked, Verdict) else checked)
        problems.append(problem)
        values.append(None if problem is not None or simhash is None else int(simhash, 16))
        reasons.append(reason if problem is None else None)
    digests = batch.column(DIGEST).cast(pa.binary()) if DIGEST in batch.column_names else pa.nulls(count, pa.binary())
    lengths = batch.column(LENGTH).cast(pa.int64()) if LENGTH in batch.column_names else pa.nulls(count, pa.int64())
    return pa.table(
        {
            _KEY: pa.array(keys, pa.string()),
            _PROBLEM: pa.array(problems, pa.string()),
            _FINGERPRINT: pa.array(values, pa.uint64()),
            DIGEST: digests,
            LENGTH: lengths,
            _NOT_COMPARED: pa.array(reasons, pa.string()),
        }
    )


def _as_python_round_trip(kind: pyarrow.DataType) -> bool:
    """Whether values of Arrow type ``kind`` come back the same from a Dataset made of them as Python
    values (``ray.data.from_items``, what :func:`dedup_dataset` returned before the workers annotated):
    strings, bytes, integers, floats, booleans, nulls, and lists and structs of them. Not dates, times,
    decimals, maps, dictionaries, half floats or Ray's extension types (tensors, pickled objects)."""
    import pyarrow as pa

    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _as_python_round_trip(kind.value_type)
    if pa.types.is_struct(kind):
        return all(_as_python_round_trip(kind.field(index).type) for index in range(kind.num_fields))
    return not isinstance(kind, pa.ExtensionType) and (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_float32(kind)
        or pa.types.is_float64(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_null(kind)
    )


def _annotated(block: Any, decided: pyarrow.Table) -> pyarrow.Table:
    """A block of fingerprinted records with the annotations ``dedup`` adds (a Ray task, on the
    workers): the record's own fields (fingerprint_dataset's left out), then ``simhash``, ``cluster``,
    ``duplicate_of``, ``distance`` and ``not_compared``, each at the place ``{**record, **annotation}``
    gives it. ``decided``: the block's rows of the decisions (cluster, duplicate_of, distance).

    Columns whose values come back the same through Python are kept as they are; a block with another
    (a date, a tensor, ...) is rebuilt row by row from Python values, as ``ray.data.from_items`` builds
    a block, so that every value is what the driver's rows gave before."""
    import pyarrow as pa
    from ray.data._internal.delegating_block_builder import DelegatingBlockBuilder
    from ray.data.block import BlockAccessor

    accessor = BlockAccessor.for_block(block)
    table = accessor.to_arrow()
    count = table.num_rows
    skipped = table.column(NOT_FINGERPRINTED).to_pylist() if NOT_FINGERPRINTED in table.column_names else []
    annotations = {
        "simhash": table.column(SIMHASH).cast(pa.string()) if SIMHASH in table.column_names else pa.nulls(count),
        "cluster": decided.column("cluster"),
        "duplicate_of": decided.column("duplicate_of"),
        "distance": decided.column("distance"),
        "not_compared": pa.array(
            [None if value is None else str(value).split("\t", 1)[0] for value in skipped] or [None] * count,
            pa.string(),
        ),
    }
    kept = [name for name in table.column_names if name not in _ADDED]
    if not isinstance(block, pa.Table) or not all(_as_python_round_trip(table.schema.field(n).type) for n in kept):
        builder: Any = DelegatingBlockBuilder()  # type: ignore[no-untyped-call, unused-ignore]  # Ray's, untyped
        names = list(annotations)
        row: Mapping[str, Any]
        for row, values in zip(
            accessor.iter_rows(public_row_format=True), zip(*(annotations[name].to_pylist() for name in names))
        ):
            builder.add({**{name: row[name] for name in kept}, **dict(zip(names, values))})
        return BlockAccessor.for_block(builder.build()).to_arrow()
    out = table.select(kept)
    for name, values in annotations.items():
        if name in out.column_names:  # a field of the record's own: the annotation's value, in its place
            out = out.set_column(out.column_names.index(name), name, values)
        else:
            out = out.append_column(name, values)
    return out


def _decided_in_memory(
    fingerprinted: Dataset,
    store: Store,
    key_field: str,
    text_field: str,
    batch_size: int,
    join: bool | None,
    url: str | None = None,
) -> tuple[Dataset, Dataset | None]:
    """With keep ``first``, into a store that keeps clusters and holds no documents: every record
    decided in memory, in input order, and the documents and clusters stored, each with the id,
    cluster and arrival that :func:`dedup.dedup_rows` in batches of ``batch_size`` gives it (the
    leaders over the pairs from the workers' join, or found on the driver): written by the workers
    and moved into the store in one transaction (:func:`_stored_from_the_workers`, given ``url``),
    else by the driver in one COPY (:func:`dedup.decided_clusters`).

    The records stay on the workers: ``fingerprinted`` is materialized, the workers check each record
    and send the driver only what the decisions need (:func:`_checked`: keys, fingerprints, digests,
    lengths, problems), as Arrow columns; the driver finds repeated keys, decides and stores, and the
    workers add the annotations to each block of records (:func:`_annotated`), given the block's rows
    of the decisions by position (the materialized blocks, in order, and their row counts).

    Returns (``fingerprinted``, materialized; the annotated records, or None where this path does not
    give ``dedup``'s answers, nothing stored: a bad record, whose fate (an error, after the batches
    before it are stored) is the batches' to tell, or a store written meanwhile).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    k, _ = store.cluster_state()
    assert k is not None
    fingerprinted, joined = _uses_join(fingerprinted, store, k, join)
    fingerprinted = _materialized(fingerprinted)  # read twice: the decisions' columns, then the annotations
    near = near_fingerprints(fingerprinted, k) if joined else None
    columns, blocks = _decision_columns(fingerprinted, key_field, text_field)
    count = columns.num_rows
    keys = columns.column(_KEY).combine_chunks()
    if columns.column(_PROBLEM).null_count != count or pc.count_distinct(keys).as_py() != count:
        return fingerprinted, None  # a bad record, or a key repeated in the input: the batches' to tell
    compared = pc.is_null(columns.column(_NOT_COMPARED)).to_numpy(zero_copy_only=False)
    positions = np.flatnonzero(compared)
    chosen = pa.array(compared)
    document_keys = keys.filter(chosen)
    values = columns.column(_FINGERPRINT).filter(chosen).to_numpy().astype(np.uint64)
    batches = positions // batch_size
    staged: np.ndarray | None | bool = False
    ids: Any
    if url is not None and _stageable(document_keys, columns.column(LENGTH).filter(chosen)):
        leader = clusters.leaders_with_copies(values, k, near)
        staged = _stored_from_the_workers(store, url, blocks, compared, positions, document_keys, leader, batches, k)
    if staged is False:  # the driver writes them (one COPY)
        documents = _documents(
            document_keys, values, columns.column(DIGEST).filter(chosen), columns.column(LENGTH).filter(chosen)
        )
        found = decided_clusters(store, documents, values, batches.tolist(), k, near)
        if found is None:
            return fingerprinted, None  # the store was written meanwhile
        leader, ids = found
    elif staged is None:
        return fingerprinted, None  # the store was written meanwhile
    else:
        ids = staged
    if count == 0:
        return fingerprinted, _ray().data.from_items([])
    # The decisions of every record, by position (None for a record passed through, not compared).
    cluster = np.zeros(count, dtype=np.int64)
    cluster[positions] = np.asarray(ids, dtype=np.int64)[leader]
    distance = np.zeros(count, dtype=np.int64)
    distance[positions] = np.bitwise_count(values ^ values[leader]).astype(np.int64)
    head = np.full(count, -1, dtype=np.int64)  # the position among the documents of each copy's representative
    copies = leader != np.arange(len(leader))
    head[positions[copies]] = leader[copies]
    return fingerprinted, _annotated_dataset(fingerprinted, cluster, distance, ~compared, document_keys, head)


def _decision_columns(
    fingerprinted: Dataset, key_field: str, text_field: str
) -> tuple[pyarrow.Table, list[tuple[Any, int]]]:
    """What the decisions need of every record of a materialized ``fingerprinted``, in input order:
    checked on the workers (:func:`_checked`), read by the driver as Arrow columns; and the checked
    blocks where they are (in Ray's object store: references and row counts, in order), from which
    the workers write the documents."""
    import pyarrow as pa

    checked = fingerprinted.map_batches(
        _checked, fn_args=(key_field, text_field), batch_format="pyarrow", batch_size=TASK_ROWS
    )
    checked.context.execution_options.preserve_order = True
    blocks: list[tuple[Any, int]] = []
    with _ordered():
        for bundle in checked.iter_internal_ref_bundles():
            blocks.extend((block, int(metadata.num_rows)) for block, metadata in bundle.blocks)
    parts = [_arrow_block(part) for part in _ray().get([block for block, _ in blocks])]
    table = pa.concat_tables(parts) if parts else _checked(pa.table({}), key_field, text_field)
    return table, blocks


def _arrow_block(block: Any) -> pyarrow.Table:
    from ray.data.block import BlockAccessor

    return BlockAccessor.for_block(block).to_arrow()


def _stageable(keys: Any, lengths: Any) -> bool:
    """Whether every document can be written from the workers as the driver's COPY writes it (a key of
    at most ``MAX_KEY_BYTES`` bytes without NUL, a length that fits the column); else the driver
    writes them (and its checks name the document that does not fit)."""
    import pyarrow.compute as pc

    from .validation import INT4, MAX_KEY_BYTES

    if not len(keys):
        return False
    if lengths.null_count or pc.any(pc.match_substring(keys, "\x00")).as_py():
        return False
    if pc.max(pc.binary_length(keys)).as_py() > MAX_KEY_BYTES:
        return False
    return bool(pc.min(lengths).as_py() >= 0 and pc.max(lengths).as_py() <= INT4[1])


def _stored_from_the_workers(
    store: Store,
    url: str,
    blocks: list[tuple[Any, int]],
    compared: np.ndarray,
    positions: np.ndarray,
    document_keys: Any,
    leader: np.ndarray,
    batches: np.ndarray,
    k: int,
) -> np.ndarray | None | bool:
    """The decided documents stored from the workers: the driver asks the database for the order in
    which the batches number them (by batch, then key), and makes a staging table; each task writes
    the documents of consecutive checked blocks (their keys, fingerprints, digests and lengths, where
    they are) with their ranks, their leaders' ranks and their arrivals, in one transaction that
    first deletes its block's rows (a task Ray runs again writes nothing twice); then the driver moves
    them into the store in one transaction under the cluster lock. Each document's id (a numpy array);
    None, nothing stored, if the store was written meanwhile; False where this role may not make the
    staging table (the driver writes them then)."""
    ray = _ray()
    rank, leader_rank, arrival, first_batch = decided_ranks(store, document_keys, leader, batches)
    records = len(compared)
    ranks, leaders, arrivals = (np.zeros(records, dtype=np.int64) for _ in range(3))
    ranks[positions], leaders[positions], arrivals[positions] = rank, leader_rank, arrival
    stage = ray.remote(_staged_blocks)
    with store.staging() as name:
        if name is None:
            return False
        expected: dict[int, int] = {}
        pending = []
        group: list[Any] = []
        start = end = 0

        def send() -> None:
            number = len(expected)
            decided = {
                "compared": compared[start:end],
                "rank": ranks[start:end],
                "leader": leaders[start:end],
                "arrival": arrivals[start:end],
            }
            expected[number] = int(np.count_nonzero(compared[start:end]))
            pending.append(stage.remote(url, name, number, ray.put(decided), *group))

        for block, rows in blocks:
            group.append(block)
            end += rows
            if end - start >= TASK_ROWS:
                send()
                group, start = [], end
        if group:
            send()
        if end != records:
            raise RuntimeError(f"the checked records hold {end} rows, the decisions read {records}")
        try:
            ray.get(pending)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, Exception) else exc) from None
        first_id = store.move_staged(name, k, expected, first_batch)
    if first_id is None:
        return None
    return first_id + rank


def decided_ranks(
    store: Store, keys: Any, leader: np.ndarray, batches: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """What the staged rows of decided documents carry (:meth:`Store.move_staged` adds the store's
    base to each): each document's rank (its id less the base: the batches number their documents by
    batch, then by key in the database's collation, which is asked), its leader's rank, its arrival,
    and how many documents the first batch holds (arriving from 1 on, into an empty store; each later
    batch arrives after the ids of those before it, so its arrivals take the base too)."""
    count = len(batches)
    rank = np.empty(count, dtype=np.int64)
    rank[store.decided_order(keys, batches)] = np.arange(1, count + 1, dtype=np.int64)
    first_batch = int(np.count_nonzero(batches == batches[0])) if count else 0
    return rank, rank[leader], np.arange(1, count + 1, dtype=np.int64), first_batch


def _staged_blocks(url: str, name: str, number: int, decided: Mapping[str, np.ndarray], *blocks: Any) -> int:
    """The documents of consecutive checked blocks (:func:`_checked`) into the run's staging table, as
    block ``number`` (a Ray task, on the workers), with their ranks, leaders' ranks and arrivals
    (``decided``: the blocks' rows, by position); how many."""
    import pyarrow as pa

    from .store import Store, writes

    table = pa.concat_tables([_arrow_block(block) for block in blocks])
    chosen = pa.array(decided["compared"])
    mask = decided["compared"]
    payload = writes.staged_payload(
        number,
        table.column(_KEY).filter(chosen),
        table.column(_FINGERPRINT).filter(chosen).to_numpy().astype(np.uint64),
        table.column(DIGEST).filter(chosen),
        table.column(LENGTH).filter(chosen).to_numpy(),
        decided["rank"][mask],
        decided["leader"][mask],
        decided["arrival"][mask],
    )
    with Store(url) as store:
        store.stage_block(name, number, payload)
    return int(np.count_nonzero(mask))


def _documents(keys: Any, values: np.ndarray, digests: Any, lengths: Any) -> list[NewDocument]:
    """The documents to store (what :meth:`Store.add_decided` takes), from the decisions' columns."""
    from .store import NewDocument

    return [
        NewDocument(key, value, digest, length)
        for key, value, digest, length in zip(
            keys.to_pylist(), values.tolist(), digests.to_pylist(), lengths.to_pylist()
        )
    ]


def _annotated_blocks(decided: pyarrow.Table, *blocks: Any) -> Any:
    """:func:`_annotated` over consecutive blocks (a Ray task, on the workers), ``decided`` holding
    the rows of all of them in order: one block out for each block in (a tuple if more than one)."""
    out, start = [], 0
    for block in blocks:
        count = block.num_rows if hasattr(block, "num_rows") else len(block)
        out.append(_annotated(block, decided.slice(start, count)))
        start += count
    return tuple(out) if len(out) > 1 else out[0]


# Rows a task annotates or checks at least (whole blocks): a Ray task costs about 10 ms on the driver and
# the scheduler, more than 500 records' annotations (a block of fingerprint_dataset's).
TASK_ROWS = 20_000


def _annotated_dataset(
    fingerprinted: Dataset,
    cluster: np.ndarray,
    distance: np.ndarray,
    passed: np.ndarray,
    document_keys: Any,
    head: np.ndarray,
) -> Dataset:
    """The records of a materialized ``fingerprinted`` with their annotations, added on the workers
    (:func:`_annotated`, one Ray task for consecutive blocks of ``TASK_ROWS`` rows or more), each task
    given its blocks' rows of the decisions by position (the blocks in order and their row counts):
    ``cluster`` and ``distance`` of each record (None where ``passed``: not compared), and the key of
    its representative, ``head`` (its position among ``document_keys``; -1: none, a representative or
    a record not compared). The blocks out are the blocks in, annotated, in the same order."""
    import pyarrow as pa

    ray = _ray()
    annotate = ray.remote(_annotated_blocks)
    out: list[Any] = []
    group: list[Any] = []
    start = end = 0

    def send() -> None:
        decided = pa.table(
            {
                "cluster": pa.array(cluster[start:end], mask=passed[start:end]),
                "duplicate_of": document_keys.take(pa.array(head[start:end], mask=head[start:end] < 0)),
                "distance": pa.array(distance[start:end], mask=passed[start:end]),
            }
        )
        refs = annotate.options(num_returns=len(group)).remote(ray.put(decided), *group)
        out.extend(refs if len(group) > 1 else [refs])

    for bundle in fingerprinted.iter_internal_ref_bundles():
        for block, metadata in bundle.blocks:
            group.append(block)
            end += int(metadata.num_rows)
            if end - start >= TASK_ROWS:
                send()
                group, start = [], end
    if group:
        send()
    if end != len(cluster):  # the blocks hold the rows the decisions read, in the same order
        raise RuntimeError(f"the materialized records hold {end} rows, the decisions read {len(cluster)}")
    return ray.data.from_arrow_refs(out)


def _rows_of(ds: Dataset) -> list[Mapping[str, Any]]:
    """Every row of ``ds``, in order, as ``iter_rows`` gives them, read a block at a time: a column
    of an Arrow block at once (``to_pylist``: each value ``Scalar.as_py()``, as Ray's ``ArrowRow``
    gives it), several times faster than Ray's row by row. A block of another format, or a column
    of an extension type (Ray's tensors, which ``ArrowRow`` builds otherwise): row by row, by Ray."""
    import pyarrow

    rows: list[Mapping[str, Any]] = []
    for block in ds.iter_batches(batch_size=None, batch_format=None):
        if not isinstance(block, pyarrow.Table) or any(
            isinstance(field.type, pyarrow.ExtensionType) for field in block.schema
        ):
            return list(ds.iter_rows())
        names = block.column_names
        columns = [block.column(name).to_pylist() for name in names]
        rows.extend(dict(zip(names, values)) for values in zip(*columns))
    return rows


_BUCKET, _VALUE = "_bucket", "_value"
_TABLE_SHIFT = 58  # a bucket is (table number << 58) | the table's key, cut to 58 bits


def _table_keys(batch: dict[str, Any], tables: list[list[tuple[int, int]]]) -> dict[str, np.ndarray]:
    """Each distinct fingerprint of the batch once per table, under its bucket: (table, key)."""
    values = np.unique(np.array([int(h, 16) for h in batch[SIMHASH] if h is not None], dtype=np.uint64))
    buckets = []
    for number, table in enumerate(tables):
        key = np.zeros(len(values), dtype=np.uint64)
        bits = 0
        for shift, width in table:
            key = (key << np.uint64(width)) | ((values >> np.uint64(shift)) & np.uint64((1 << width) - 1))
            bits += width
        if bits > _TABLE_SHIFT:  # a shorter key only adds candidates; each is verified
            key >>= np.uint64(bits - _TABLE_SHIFT)
        buckets.append(key | np.uint64(number << _TABLE_SHIFT))
    return {
        _BUCKET: np.concatenate(buckets).view(np.int64) if buckets else np.empty(0, dtype=np.int64),
        _VALUE: np.tile(values, len(tables)).view(np.int64),
    }


def _pairs_in_block(batch: dict[str, np.ndarray], masks: list[int], k: int) -> dict[str, np.ndarray]:
    """The pairs of distinct fingerprints within ``k`` among a sorted block's buckets, each from the
    first table whose blocks it matches exactly (as :func:`pairs.near_pairs` keeps them)."""
    bucket = np.asarray(batch[_BUCKET], dtype=np.int64).view(np.uint64)
    values = np.asarray(batch[_VALUE], dtype=np.int64).view(np.uint64)
    order = np.lexsort((values, bucket))
    bucket, values = bucket[order], values[order]
    fresh = np.ones(len(bucket), dtype=bool)  # one row per (bucket, fingerprint): input batches repeat them
    fresh[1:] = (bucket[1:] != bucket[:-1]) | (values[1:] != values[:-1])
    bucket, values = bucket[fresh], values[fresh]
    table = (bucket >> np.uint64(_TABLE_SHIFT)).astype(np.int64)
    table_masks = np.array(masks, dtype=np.uint64)
    found_a, found_b = [], []
    for left, right in pairs.same_key_candidates(bucket):
        xor = values[left] ^ values[right]
        number = table[left]
        keep = (np.bitwise_count(xor) <= k) & ((xor & table_masks[number]) == 0)
        for earlier, mask in enumerate(table_masks):
            keep &= (number <= earlier) | ((xor & mask) != 0)
        found_a.append(values[left][keep])
        found_b.append(values[right][keep])
    if not found_a:
        return {"a": np.empty(0, dtype=np.int64), "b": np.empty(0, dtype=np.int64)}
    return {"a": np.concatenate(found_a).view(np.int64), "b": np.concatenate(found_b).view(np.int64)}


def near_fingerprints(
    ds: Dataset, k: int, *, tables: list[list[tuple[int, int]]] | None = None
) -> dict[int, list[int]]:
    """For each fingerprint of a fingerprinted ``ds`` (:func:`fingerprint_dataset`), the other
    fingerprints of ``ds`` within ``k`` bits (exact), joined on the workers: each distinct value goes
    out once per exact-match table under its (table, key) bucket, Ray Data sorts the buckets (a
    bucket lands whole in one block, as ``groupby`` relies on), and each block gives its pairs,
    verified on all 64 bits. ``tables``: by default the cheapest exact-match layout for ``ds``'s size."""
    _fresh_ray_data(_ray())
    count = ds.count()
    tables = tables if tables is not None else pairs.exact_tables(count, k)
    if tables is None:
        raise ValueError(f"no exact-match layout of at most 20 tables at distance {k}")
    found: dict[int, list[int]] = {}
    if count == 0:
        return found
    keyed = ds.select_columns([SIMHASH]).map_batches(_table_keys, fn_args=(tables,), batch_format="numpy")
    joined = keyed.sort(_BUCKET).map_batches(
        _pairs_in_block,
        fn_args=([int(pairs.table_mask(table)) for table in tables], k),
        batch_size=None,  # the whole block: every bucket whole
        batch_format="numpy",
    )
    for batch in joined.iter_batches(batch_format="numpy", batch_size=100_000):
        for a, b in zip(batch["a"].view(np.uint64).tolist(), batch["b"].view(np.uint64).tolist()):
            found.setdefault(a, []).append(b)
            found.setdefault(b, []).append(a)
    return found


def known_neighbours(fingerprinted: Dataset, store: Store, k: int, **options: Any) -> KnownNeighbours:
    """What :func:`dedup.dedup_rows` needs to read the representatives near each record by key: the
    run's near fingerprints (:func:`near_fingerprints`, on the workers) and, for a store that holds
    documents already, those stored within ``k`` of each (one batched search, ``near_many``)."""
    near = near_fingerprints(fingerprinted, k, **options)
    before: dict[int, list[str]] = {}
    state = store.store_state()
    if state[0]:
        values = sorted(
            {int(h, 16) for batch in fingerprinted.iter_batches(batch_format="numpy") for h in batch[SIMHASH] if h}
        )
        for start in range(0, len(values), 1000):
            part = values[start : start + 1000]
            for value, matches in zip(part, store.query_many(part, k)):
                if matches:
                    before[value] = [match.key for match in matches]
        if store.store_state() != state:  # written meanwhile: the lists may be incomplete
            return KnownNeighbours(near, before, None)
    return KnownNeighbours(near, before, state)


class _FingerprintActor:
    """A Ray actor holding one :class:`FingerprintBatch` (for the command line's ``--ray``)."""

    def __init__(self, scheme: str) -> None:
        self.batch = FingerprintBatch(scheme)

    def run(self, sources: list[tuple[str, str]]) -> list[Prepared | None]:
        return self.batch.prepared([key for key, _ in sources], [text for _, text in sources])


def _check_reachable(address: str | None) -> None:
    """A head that does not answer is one error now (``ray.init`` would retry for minutes, then exit)."""
    import socket

    if address is None or address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot connect to the Ray cluster at {address}: {exc}") from None


def ray_address_file() -> str:
    """Where ``ray start`` records the address of the cluster it started, which Ray's ``auto``
    reads: ``ray_current_cluster`` in Ray's temporary directory (``RAY_TMPDIR``, else ``TMPDIR``,
    else ``/tmp``, then ``ray``), as Ray finds it."""
    base = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(base, "ray", "ray_current_cluster")


def resolved_address(address: str | None) -> str:
    """The head's address to connect to for ``address`` (``None`` or ``"auto"``: the cluster of
    yours this machine runs). Ray's own ``auto`` reads the address file in a temporary directory
    every user may write (``/tmp/ray``, made 0777 by Ray), and failing that joins any Ray node
    running on the machine, whoever started it: another user's cluster would get every text to
    fingerprint, send back the fingerprints (the verdicts) and data this process unpickles. So
    ``auto`` is ``RAY_ADDRESS`` where set, else the address file, read only if it is a regular
    file of this user's (opened without following a link); else one line (:class:`InputError`)."""
    import stat

    if address is not None and address != "auto":
        return address
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    path = ray_address_file()
    name_it = "start one (ray start --head) or give its head's address: --ray HOST:PORT"
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(f"--ray auto found no Ray cluster started on this machine ({path}): {name_it}") from None
    except OSError as exc:
        raise InputError(f"--ray auto cannot read {path}: {exc.strerror}; {name_it}") from None
    with os.fdopen(descriptor, "rb") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid():
            raise InputError(
                f"--ray auto: {path} was not written by you (owner {_user_name(found.st_uid)}): the cluster it "
                "names may be another user's, whose workers would read your texts and choose the verdicts; "
                f"{name_it}"
            )
        recorded = file.read(4096).decode("utf-8", "replace").strip()
    if not recorded:
        raise InputError(f"--ray auto: {path} names no cluster; {name_it}")
    served_by = _other_users_listening(recorded)
    if served_by:
        raise InputError(
            f"--ray auto: the port of the cluster {path} names ({recorded}) is held by user "
            f"{', '.join(sorted(map(_user_name, served_by)))}, not you (a cluster of yours that stopped left the file, "
            f"and someone else listens there now); {name_it}"
        )
    # Who listens can change between that look and Ray's connection: another user listening in
    # short bursts on the port of a stopped cluster was missed by the look and reached by the
    # connection after it in 80 of 300 tries. So connect, and ask who answered: while a socket
    # of yours answers there, no other user can listen on that address and port.
    _refuse_an_answer_of_another_users(recorded, path, name_it)
    return recorded


def _refuse_an_answer_of_another_users(address: str, path: str, name_it: str) -> None:
    """Connect to ``address``; one line (:class:`InputError`) when nothing answers, or when what
    answered is a socket of another user's on this machine (or one that closed at once, before it
    could be told whose it was). A head on another machine is taken as the file names it."""
    import socket

    host, _, port = address.rpartition(":")
    try:
        connection = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot connect to the Ray cluster at {address} ({path} names it): {exc}") from None
    with connection:
        owner = _owner_of_the_answer(connection)
    if owner is None or owner in (0, os.geteuid()):
        return
    who = "a socket that closed at once" if owner == -1 else f"user {_user_name(owner)}, not you"
    raise InputError(
        f"--ray auto: the port of the cluster {path} names ({address}) was answered by {who} (a cluster "
        f"of yours that stopped left the file, and someone else listens there now); {name_it}"
    )


def _owner_of_the_answer(connection: Any) -> int | None:
    """The user owning the socket of this machine at the other end of ``connection``, from
    /proc/net/tcp and tcp6 (which name each socket's owner); None when the other end is another
    machine (or its owner cannot be read here); -1 when it is this machine but its socket is no
    longer there, or ours is no longer connected (it closed at once)."""
    import ipaddress

    def endpoint(name: tuple[Any, ...]) -> tuple[Any, int]:
        ip = ipaddress.ip_address(name[0].split("%")[0])
        return getattr(ip, "ipv4_mapped", None) or ip, name[1]

    ours, theirs = endpoint(connection.getsockname()), endpoint(connection.getpeername())
    if not (theirs[0].is_loopback or theirs[0] == ours[0] or theirs[0] in _addresses_of_this_machine()):
        # Another machine's. Not told by the source address alone: to a second address of an
        # interface the kernel picks the interface's first as the source, and another user
        # listening there in bursts got 81 of 300 connections past a check that stopped here.
        return None
    from .ownership import tcp_sockets

    sockets = tcp_sockets()
    if not sockets:
        return None  # no /proc/net/tcp here
    owner, connected = -1, False
    for local, remote, state, uid in sockets:
        if (local, remote) == (theirs, ours) and state in ("01", "03"):  # ESTABLISHED, SYN_RECV
            owner = uid
        if (local, remote) == (ours, theirs) and state == "01":
            connected = True
    return owner if connected else -1


def _addresses_of_this_machine() -> set[Any]:
    """Every address of every interface of this machine (its network namespace), IPv4-mapped
    IPv6 ones as IPv4, without zone indexes."""
    import ipaddress

    import psutil

    found: set[Any] = set()
    for addresses in psutil.net_if_addrs().values():
        for each in addresses:
            try:
                ip = ipaddress.ip_address(each.address.split("%")[0])
            except ValueError:
                continue  # a link-layer address
            found.add(getattr(ip, "ipv4_mapped", None) or ip)
    return found


def _other_users_listening(address: str) -> set[int]:
    """The users other than this process's whose sockets listen on this machine at ``address``
    (an IP literal and port, as Ray records its head; anything else: none found), from
    /proc/net/tcp and tcp6, which name each socket's owner."""
    import ipaddress

    from .ownership import tcp_sockets

    host, _, port_text = address.rpartition(":")
    try:
        wanted = ipaddress.ip_address(host.strip("[]"))
        port = int(port_text)
    except ValueError:
        return set()
    wanted = getattr(wanted, "ipv4_mapped", None) or wanted
    return {
        uid
        for (ip, local_port), _, state, uid in tcp_sockets()
        if state == "0A" and local_port == port and (ip.is_unspecified or ip == wanted) and uid != os.geteuid()
    }


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _init_from_the_root_directory(ray: Any, address: str) -> None:
    """``ray.init`` with / as the working directory, then back to the one we were in.

    Ray puts the driver's working directory at the front of every worker's ``sys.path``: run
    from a directory others may write (/tmp, a shared folder), a ``simhash_store`` package or a
    ``numpy`` module another user put there was imported by the workers, as this user, when
    they loaded the actor class (found by the hostile pass as a local user, 2026-11-26). / holds
    no modules and only root may write it."""
    # O_PATH: a working directory one may enter but not list is returned to as well.
    here = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0))
    try:
        os.chdir("/")
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    finally:
        os.fchdir(here)
        os.close(here)


class RayFingerprinter:
    """:class:`ingest.Fingerprinter` on a Ray cluster: each batch split over one actor per CPU,
    each with the scheme loaded once. For :func:`dedup.dedup_files` (``dedup --ray``)."""

    def __init__(self, scheme: Scheme, address: str | None) -> None:
        ray = _ray()
        if not ray.is_initialized():
            address = resolved_address(address)
            _check_reachable(address)
            try:
                _init_from_the_root_directory(ray, address)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise InputError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
        self._scheme = scheme
        self._actors: list[Any] = []

    @property
    def scheme(self) -> Scheme:
        return self._scheme

    @scheme.setter
    def scheme(self, value: Scheme) -> None:
        if value != self._scheme:
            self.close()
        self._scheme = value

    def _pool(self) -> list[Any]:
        if not self._actors:
            ray = _ray()
            actor = ray.remote(num_cpus=1)(_FingerprintActor)
            self._actors = [actor.remote(self._scheme.name) for _ in range(_cpus())]
        return self._actors

    def submit(self, tasks: Sequence[tuple[Source, bytes | None]]) -> Callable[[Progress | None], list[Prepared]]:
        if not tasks:  # every record of the batch stored with the same text: no actor needed
            return lambda progress: []
        actors = self._pool()
        chunk = max(1, -(-len(tasks) // len(actors)))
        pending = [
            actors[n % len(actors)].run.remote([(s.key, s.text) for s, _ in tasks[start : start + chunk]])
            for n, start in enumerate(range(0, len(tasks), chunk))
        ]

        def collect(progress: Progress | None) -> list[Prepared]:
            done = [p for part in _ray().get(pending) for p in part]
            if progress is not None:
                for prepared in done:
                    progress(1, prepared.size)
            return done

        return collect

    def close(self) -> None:
        for actor in self._actors:
            _ray().kill(actor)
        self._actors = []

    def __enter__(self) -> RayFingerprinter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = [
    "FingerprintBatch",
    "RayFingerprinter",
    "dedup_dataset",
    "fingerprint_dataset",
    "known_neighbours",
    "near_fingerprints",
    "write_dataset",
]
