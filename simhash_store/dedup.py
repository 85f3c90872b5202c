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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from .corpus import DELIBERATE, Skip, Source
from .errors import InvalidKeyError, SimhashStoreError

if TYPE_CHECKING:
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
    """

    key: str | None
    kept: bool
    simhash: int | None = None
    cluster: int | None = None
    duplicate_of: str | None = None
    distance: int | None = None
    problem: str | None = None

    def annotation(self) -> dict[str, Any]:
        """The fields ``--annotate`` adds to a record."""
        return {
            "simhash": None if self.simhash is None else f"{self.simhash:016x}",
            "cluster": self.cluster,
            "duplicate_of": self.duplicate_of,
            "distance": self.distance,
        }


KEEPS = ("first", "longest")


def dedup(
    records: Iterable[Mapping[str, Any]],
    *,
    store: "Store | str | None" = None,
    key: str = "key",
    text: str = "text",
    max_distance: int | None = None,
    keep: str = "first",
    batch_size: int = DEFAULT_BATCH_SIZE,
    jobs: int | None = None,
) -> Iterator[tuple[Mapping[str, Any], Verdict]]:
    """``(record, verdict)`` for each record, in order; records are dicts (or any mapping).

    ``store``: a :class:`Store`, a URL, or None for the default store. ``max_distance``:
    None for the store's cluster distance (11 unless ``recluster`` chose another); another
    value is accepted by an empty store only. ``keep="longest"``: the longest record of
    each cluster is kept, so verdicts come after all records are stored (a one-shot
    iterator is held in memory for that). A bad record (no key, no text, a key repeated)
    gets a verdict with ``problem`` set and the rest go on.
    """
    if keep == "longest" and not isinstance(records, Sequence):
        records = list(records)

    def rows() -> Iterator[tuple[str, Mapping[str, Any]]]:
        return ((f"record {number}", record) for number, record in enumerate(records, start=1))

    for _, record, verdict in dedup_rows(
        rows, store=store, key=key, text=text, max_distance=max_distance, keep=keep, batch_size=batch_size, jobs=jobs
    ):
        yield record, verdict


Rows = Iterable[tuple[str, "Mapping[str, Any] | Skip"]]


def dedup_rows(
    rows: Callable[[], Rows],
    *,
    store: "Store | str | None" = None,
    key: str = "key",
    text: str = "text",
    max_distance: int | None = None,
    keep: str = "first",
    batch_size: int = DEFAULT_BATCH_SIZE,
    jobs: int | None = None,
    fingerprinter=None,
) -> Iterator[tuple[str, Mapping[str, Any] | Skip, Verdict]]:
    """:func:`dedup` over ``(where, record or Skip)`` rows as the file readers give them.

    ``rows`` is called once, and once more with ``keep="longest"``: every record is stored
    first, then each gets the verdict of the final clusters.
    """
    from .ingest import Fingerprinter, _batches
    from .store import Store

    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    if keep not in KEEPS:
        raise ValueError(f"keep must be first or longest, not {keep!r}")
    opened = store if isinstance(store, Store) else Store(store)
    try:
        scheme = opened.init()
        _check_distance(opened, max_distance)
        seen: set[str] = set()
        if fingerprinter is not None:
            fingerprinter.scheme = scheme
        with fingerprinter or Fingerprinter(scheme, jobs) as fingerprinter:
            # While the workers fingerprint one batch, the one before is stored and resolved.
            outcomes: list = []
            pending = None
            for batch in _batches(rows(), batch_size):
                started = _start_batch(batch, key, text, seen, fingerprinter)
                if pending is not None:
                    yield from _finish_batch(opened, *pending, keep, outcomes)
                pending = (batch, started)
            if pending is not None:
                yield from _finish_batch(opened, *pending, keep, outcomes)
        if keep == "first":
            return
        # Second pass: the clusters are final, every record's verdict is read from them.
        for start, batch in zip(range(0, len(outcomes), batch_size), _batches(rows(), batch_size)):
            yield from zip(*zip(*batch), _resolve(opened, outcomes[start : start + batch_size]))
    finally:
        if opened is not store:
            opened.close()


def _check_distance(store: "Store", max_distance: int | None) -> None:
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


def _start_batch(batch, key_field: str, text_field: str, seen: set[str], fingerprinter):
    """Validate one batch and start fingerprinting its records: (outcomes so far, sources, collect)."""
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
        sources.append((position, Source(key, text=text, size=len(text.encode("utf-8", "surrogatepass")))))
    return outcomes, sources, fingerprinter.submit([(source, None) for _, source in sources])


def _finish_batch(store: "Store", batch, started, keep: str, kept_outcomes: list):
    """Store a batch whose fingerprints are coming; with keep first, yield its verdicts at once
    (with keep longest, keep its outcomes for the second pass)."""
    outcomes, sources, collect = started
    outcomes = _store_batch(store, batch, outcomes, sources, collect(None), keep)
    if keep == "first":
        yield from zip(*zip(*batch), _resolve(store, outcomes))
    else:
        kept_outcomes.extend(outcomes)


def _store_batch(store: "Store", batch, outcomes, sources, prepared, keep: str) -> list[Verdict | _Stored]:
    """Store the fingerprinted records of one batch; a final verdict for records that cannot be stored."""
    from .store import NewDocument

    fingerprinted: dict[str, Any] = {}
    for (position, source), item in zip(sources, prepared):
        where = batch[position][0]
        if item.skip is not None:
            # Empty or wordless text cannot be compared: passed through as kept, not stored.
            deliberate = item.skip.reason in DELIBERATE
            detail = f" ({item.skip.detail})" if item.skip.detail else ""
            outcomes[position] = Verdict(
                source.key, deliberate, problem=None if deliberate else f"{where}: {item.skip.reason}{detail}"
            )
            continue
        outcomes[position] = _Stored(source.key, item.fingerprint, where)
        fingerprinted[source.key] = item
    if fingerprinted:
        stored = store.versions(list(fingerprinted))
        new = [
            NewDocument(k, item.fingerprint, item.digest, item.length)
            for k, item in fingerprinted.items()
            if k not in stored
        ]
        if new:
            store.add_batch(new)
        if keep == "longest":
            # Promoting is a second transaction: a run killed between the two left its stored records
            # unpromoted, so a rerun promotes those stored with the same text too (a no-op otherwise).
            same = [k for k, item in fingerprinted.items() if k not in stored or stored[k][0] == item.digest]
            if same:
                store.prefer_longest(same)
    return outcomes  # type: ignore[return-value]


def _resolve(store: "Store", outcomes: list[Verdict | _Stored]) -> list[Verdict]:
    """Each stored record's verdict from its cluster: kept if it is the representative."""
    keys = [o.key for o in outcomes if isinstance(o, _Stored)]
    memberships = store.memberships(keys) if keys else {}
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
