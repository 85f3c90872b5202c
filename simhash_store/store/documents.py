"""The values the store takes and gives back: documents to add, matches, stored rows, pairs, results."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..search import Match  # noqa: F401 - defined there, on the floor the Store and the Lookup (`query`) share


@dataclass(frozen=True)
class NewDocument:
    """A document to store: its key and fingerprint, and optionally what change detection needs."""

    key: str
    fingerprint: int
    digest: bytes | None = None
    length: int | None = None
    # Size and modification time of the file it came from ("size:mtime_ns"): a re-run
    # that finds the same stamp knows the file is unchanged without reading it.
    stamp: str | None = None
    metadata: dict[str, Any] | None = None
    # The seg-v1 fingerprints of its segments (simhash_store.segments.segment_fingerprints), kept
    # by a store with segments on; None: the document has none stored.
    segments: tuple[int, ...] | None = None
    # The value of the keep policy's field (a number or a string; None: missing), see keep.py.
    keep_value: Any = None


@dataclass(frozen=True)
class StoredDocument:
    id: int
    key: str
    fingerprint: int
    digest: bytes | None
    length: int | None
    metadata: dict[str, Any] | None
    added_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    distance: int


@dataclass(frozen=True)
class IdenticalGroup:
    """Two or more stored documents with one fingerprint (distance 0 from each other)."""

    keys: list[str]  # sorted

    @property
    def distance(self) -> int:
        return 0


@dataclass(frozen=True)
class RemoveResult:
    removed: list[str]
    missing: list[str]  # keys given that were not stored


@dataclass(frozen=True)
class SkippedNearDuplicate:
    key: str
    match: Match


@dataclass
class AddResult:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    near_duplicates: list[SkippedNearDuplicate] = field(default_factory=list)
    # In a store that keeps clusters: (key replaced, key replacing) for each representative that a
    # better copy (by the store's keep policy) replaced, in order.
    replaced: list[tuple[str, str]] = field(default_factory=list)

    def merge(self, other: AddResult) -> None:
        self.added += other.added
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.near_duplicates.extend(other.near_duplicates)
        self.replaced.extend(other.replaced)


@dataclass(frozen=True)
class ContainmentMatch:
    """A stored document that shares most of its text with a query text, one inside the other.

    ``inner`` says which lies inside the other: ``"query"`` (the text is inside the stored
    document) or ``"stored"`` (the stored document is inside the text). ``score`` is the share of
    the inner one's segments that have a near segment in the outer one (``matched`` of
    ``segments``), in [0, 1].
    """

    key: str
    score: float
    inner: str
    matched: int
    segments: int


@dataclass(frozen=True)
class ContainmentPair:
    """Two stored documents, ``inner`` mostly inside ``outer``: ``score`` is the share of the inner one's
    segments with a near segment in the outer one (``matched`` of ``segments``)."""

    inner: str
    outer: str
    score: float
    matched: int
    segments: int
