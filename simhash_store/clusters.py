"""Persistent clusters of near-duplicates: leader clustering, kept in the database.

Every stored document belongs to a cluster with a stable id. A new document joins the
cluster of the nearest *representative* within the store's cluster distance (ties: the
oldest); with none that near, it starts a cluster of its own, whose id is its document
id and whose representative it is. Clusters never merge, so no id ever changes as
documents arrive (docs/dedup.md says why, and what happens to chains).

A store keeps clusters once asked to (``store_info.cluster_max_distance`` set by
:func:`recluster`): each document written then costs a radius search. A write into such a
store takes turns with the other writers on an advisory lock (:func:`lock_for_write`) before
its rows go in, so two near-duplicates written at the same time by two processes end in one
cluster; under the lock it numbers its new documents itself (:func:`allocate_ids`), and calls
:func:`assign` after its rows are in. :func:`recluster` redoes a whole store, at its distance
or another. The leader rule itself is :func:`leaders`, pure numpy.

Why ids are numbered under the lock rather than taken from the identity sequence: a cluster's
id is its founder's document id, and sequence values are never rolled back, so a write killed
inside its transaction would push every later id up, and a rerun of ``dedup`` would write other
cluster ids than an uninterrupted run. One more than the largest id stored (or used by a
cluster) depends only on what is committed. The sequence is moved past the ids taken, so
writers that use it (other applications' INSERTs, stores that keep no clusters) never meet them.

>>> import numpy as np
>>> leaders(np.array([0b0, 0b1, 0b111, 0xFFFF], dtype=np.uint64), 2).tolist()  # 0b111 is near 0b1, not 0b0
[0, 0, 2, 3]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

from . import distributed
from . import leaders as leader_search
from .bits import from_signed
from .errors import DatabaseError, InvalidValueError
from .keep import KeepPolicy, Representative, keep_value_text, leaders_keeping, stored_value
from .pairs import TooManyPairs, distinct_pairs

# Two-integer advisory lock: (project, purpose), the project constant of store.ADVISORY_LOCK_SPACE
# ("SIMH"; purpose 1 is --skip-near-duplicates, 3 the staging tables of dedup_dataset: store.writes).
# The wait is bounded by the pinned lock_timeout.
PROJECT_LOCK_SPACE = 0x53494D48
CLUSTER_LOCK = 2

# Up to this many clusters, a write compares its documents with every representative in
# numpy (1,000 documents against 100,000 representatives: about 0.2 s) instead of a radius
# search per document in SQL.
IN_MEMORY_REPRESENTATIVES = 100_000

# Every stored document within k of each fingerprint, then those among them that represent a cluster
# (the caller keeps the nearest that is still one): two statements, since on Citus near reads the
# shards itself and cannot run inside a statement over them. ``method``: near's own choice on one
# server; on Citus, index probes, since near's choice there measures the shards, which Citus refuses
# in a transaction that has written to several shards, as a write has by now. The answers are the
# same either way: only the cost differs.
_NEAR_DOCUMENTS = """
    SELECT q.ordinality, m.id, m.distance
    FROM pg_catalog.unnest(%(fingerprints)s::bigint[]) WITH ORDINALITY AS q(fingerprint, ordinality)
    CROSS JOIN LATERAL simhash.near(q.fingerprint, %(k)s::integer, %(method)s::pg_catalog.text) m
"""
_REPRESENTATIVES_AMONG = f"""
    SELECT d.id, h.cluster, coalesce(d.arrival, d.id), d.length, {keep_value_text("d.keep_value")}, d.key
    FROM simhash.cluster_heads h JOIN simhash.documents d ON d.id = h.representative_id
    WHERE h.representative_id = ANY(%(ids)s::bigint[])
"""

_NEW_HEADS = """
    INSERT INTO simhash.cluster_heads (cluster, representative_id)
    SELECT * FROM ROWS FROM (pg_catalog.unnest(%(clusters)s::bigint[]), pg_catalog.unnest(%(ids)s::bigint[]))
"""

# A batch's documents get their clusters and arrivals, the clusters they found their heads, and
# stored clusters a newcomer now represents their new head, in one statement.
_SET_CLUSTERS_AND_HEADS = """
    WITH heads AS (
        INSERT INTO simhash.cluster_heads (cluster, representative_id)
        SELECT * FROM ROWS FROM (pg_catalog.unnest(%(founded)s::bigint[]), pg_catalog.unnest(%(founders)s::bigint[]))
    ), moved AS (
        UPDATE simhash.cluster_heads h SET representative_id = m.id
        FROM ROWS FROM (pg_catalog.unnest(%(moved)s::bigint[]), pg_catalog.unnest(%(movers)s::bigint[])) AS m(cluster, id)
        WHERE h.cluster = m.cluster
    )
    UPDATE simhash.documents d SET cluster = u.cluster, arrival = u.arrival
    FROM ROWS FROM (pg_catalog.unnest(%(ids)s::bigint[]), pg_catalog.unnest(%(clusters)s::bigint[]),
                    pg_catalog.unnest(%(arrivals)s::bigint[])) AS u(id, cluster, arrival)
    WHERE d.id = u.id
"""

# The arrival after which a batch's documents arrive: past every arrival and every id stored
# (documents stored without an arrival arrive at their id).
_LAST_ARRIVAL = """
    SELECT GREATEST((SELECT pg_catalog.max(arrival) FROM simhash.documents), (SELECT pg_catalog.max(id) FROM simhash.documents), 0)
"""

# The largest id a new document must not take: of a stored document, of a cluster or a
# representative (whose document may have been removed, while the cluster lives on), and of a
# removed document (store_info.highest_retired_id: ids are never given twice). And the
# identity sequence moved past the ``count`` ids about to be taken (when this role may).
_HIGHEST_ID = """
    SELECT h.id,
           CASE WHEN pg_catalog.has_sequence_privilege(s.sequence, 'UPDATE')
                THEN pg_catalog.setval(s.sequence, GREATEST(h.id + %(count)s, pg_catalog.nextval(s.sequence))) END
    FROM (SELECT GREATEST((SELECT pg_catalog.max(id) FROM simhash.documents), (SELECT pg_catalog.max(cluster) FROM simhash.cluster_heads),
                          (SELECT pg_catalog.max(representative_id) FROM simhash.cluster_heads),
                          (SELECT highest_retired_id FROM simhash.store_info), 0) AS id) h,
         (SELECT pg_catalog.pg_get_serial_sequence('simhash.documents', 'id')::pg_catalog.regclass AS sequence) s
"""

# Clusters whose representative (among the given keys) left them, re-written with a new
# fingerprint: the oldest remaining member becomes the representative, and a cluster left empty goes.
# Each step is a statement of its own (MATERIALIZED): on Citus, documents is distributed by key,
# and a join of documents to itself by id or cluster, or a subquery correlated by cluster, cannot
# run shard by shard; a step's answer (a few rows) goes to the next as an intermediate result.
_HAND_OVER = """
    WITH vacated AS MATERIALIZED (
        SELECT h.cluster
        FROM simhash.documents d
        JOIN simhash.cluster_heads h ON h.representative_id = d.id
        WHERE d.key = ANY(%(keys)s::pg_catalog.text[]) AND d.cluster IS DISTINCT FROM h.cluster
    ), successors AS MATERIALIZED (
        SELECT m.cluster, pg_catalog.min(m.id) AS successor
        FROM simhash.documents m WHERE m.cluster IN (SELECT cluster FROM vacated) GROUP BY m.cluster
    ), handed AS (
        UPDATE simhash.cluster_heads h SET representative_id = s.successor
        FROM successors s WHERE h.cluster = s.cluster
    )
    DELETE FROM simhash.cluster_heads h
    WHERE h.cluster IN (SELECT cluster FROM vacated) AND h.cluster NOT IN (SELECT cluster FROM successors)
"""


@dataclass(frozen=True)
class Membership:
    """Where a stored document sits: its cluster, the cluster's representative, and its distance to it."""

    key: str
    fingerprint: int
    cluster: int | None
    representative: str | None
    distance: int | None

    @property
    def is_representative(self) -> bool:
        return self.representative == self.key


def lock(cursor: psycopg.Cursor) -> None:
    """Take the cluster lock for the rest of the transaction (one cluster writer at a time)."""
    cursor.execute("SELECT pg_catalog.pg_advisory_xact_lock(%s, %s)", (PROJECT_LOCK_SPACE, CLUSTER_LOCK))


def max_distance(cursor: psycopg.Cursor) -> int | None:
    """The distance at which this store clusters (``store_info.cluster_max_distance``); None: it keeps no clusters."""
    row = cursor.execute("SELECT cluster_max_distance FROM simhash.store_info").fetchone()
    distance = row[0] if row else None
    if distance is not None and not 0 <= distance <= 64:  # the column is any integer; recluster writes 0..64
        raise DatabaseError(
            f"the store records a cluster distance of {distance}, which no recluster writes (0 to 64): a role that "
            "may update simhash.store_info changed it, and clusters would silently be wrong: have the store's "
            "owner run `simhash-store recluster -k K` with the distance it clusters at"
        )
    return distance


def state(cursor: psycopg.Cursor) -> tuple[int | None, bool]:
    """(cluster distance or None, whether some stored document has no cluster)."""
    # SELECT 1: Citus 13.2 cannot plan the empty target list, and dups --clusters asks this on every store.
    unclustered = cursor.execute("SELECT EXISTS (SELECT 1 FROM simhash.documents WHERE cluster IS NULL)").fetchone()[0]
    return max_distance(cursor), unclustered


def lock_for_write(cursor: psycopg.Cursor) -> int | None:
    """In a store that keeps clusters, take the cluster lock for the rest of the transaction and
    return the store's cluster distance; None, and no lock, for a store that keeps none."""
    if max_distance(cursor) is None:
        return None
    lock(cursor)
    return max_distance(cursor)  # again under the lock: a recluster may have changed it meanwhile


def allocate_ids(cursor: psycopg.Cursor, count: int) -> int:
    """Under the cluster lock: the id after which ``count`` ids are free for new documents (or
    clusters); they are taken in order from it. Moves the identity sequence past them."""
    return cursor.execute(_HIGHEST_ID, {"count": count}).fetchone()[0]


def keep_policy(cursor: psycopg.Cursor) -> KeepPolicy:
    """The policy by which this store's clusters choose their representatives (``store_info.keep_policy``)."""
    row = cursor.execute("SELECT keep_policy FROM simhash.store_info").fetchone()
    try:
        return KeepPolicy.parse(row[0] if row else None)
    except ValueError:
        raise DatabaseError(
            f"the store records a keep policy of {row[0]!r}, which no recluster writes: a role that may update "
            "simhash.store_info changed it: have the store's owner run `simhash-store recluster --keep POLICY` "
            "with the policy its clusters keep"
        ) from None


def assign(
    cursor: psycopg.Cursor, keys: Sequence[str], *, distance: int | None = None, moved: bool = True
) -> Placement | None:
    """Give every document among ``keys`` that has no cluster yet one, in the order of ``keys``
    (the input order: documents arrive in it). Call it inside the write's transaction.

    ``distance``: the store's cluster distance, when the caller holds the lock (:func:`lock_for_write`).
    ``moved``: documents among ``keys`` may have left their cluster (a re-written text): a cluster
    whose representative left is handed to its oldest remaining member first.
    """
    if not keys:
        return None
    if distance is None:
        distance = lock_for_write(cursor)
        if distance is None:  # this store keeps no clusters
            return None
    if moved:
        cursor.execute(_HAND_OVER, {"keys": list(keys)})
    rows = cursor.execute(
        f"SELECT id, fingerprint, key, length, {keep_value_text('keep_value')} FROM simhash.documents "
        "WHERE key = ANY(%s::pg_catalog.text[]) AND cluster IS NULL",
        (list(keys),),
    ).fetchall()
    if not rows:
        return None
    placement = place(cursor, keys, rows, distance, moved=moved)
    cursor.execute(_SET_CLUSTERS_AND_HEADS, placement.parameters())
    return placement


@dataclass(frozen=True)
class Placement:
    """Where documents go, in input order: their keys, ids, clusters and arrivals; the clusters
    they found (with their final representatives); the stored clusters whose representative one of
    them became; and each replacement, in order: (key replaced, key replacing)."""

    keys: list[str]
    ids: list[int]
    clusters: list[int]
    arrivals: list[int]
    heads: list[tuple[int, int]]  # (cluster, representative id) of each cluster founded
    moved: list[tuple[int, int]]  # (cluster, new representative id) of stored clusters
    replaced: list[tuple[str, str]]

    def parameters(self) -> dict[str, list]:
        return {
            "keys": self.keys,
            "ids": self.ids,
            "clusters": self.clusters,
            "arrivals": self.arrivals,
            "founded": [cluster for cluster, _ in self.heads],
            "founders": [id_ for _, id_ in self.heads],
            "moved": [cluster for cluster, _ in self.moved],
            "movers": [id_ for _, id_ in self.moved],
        }


def place(
    cursor: psycopg.Cursor,
    keys: Sequence[str],
    rows: Sequence[tuple],
    distance: int,
    *,
    moved: bool = False,
    known: KnownNeighbours | None = None,
) -> Placement:
    """The clusters of documents without one, by the leader rule and the store's keep policy, in
    the order of ``keys``; ``rows``: their (id, signed fingerprint, key, length, keep value as JSON text), stored
    or about to be (the caller holds the cluster lock). ``moved``: some of them are stored documents
    re-written with a new fingerprint. ``known``: the stored documents near each of them, found in
    advance; used while its ``state`` is set (the caller checks it, :meth:`KnownNeighbours.check`)."""
    position = {key: i for i, key in enumerate(keys)}
    rows = sorted(rows, key=lambda row: position[row[2]])
    policy = keep_policy(cursor)
    first_arrival = cursor.execute(_LAST_ARRIVAL).fetchone()[0] + 1
    ids = [r[0] for r in rows]
    signed = [r[1] for r in rows]
    values = np.array(signed, dtype=np.int64).view(np.uint64)
    arrivals = list(range(first_arrival, first_arrival + len(rows)))
    ranks = [policy.rank(arrival, r[3], stored_value(r[4])) for arrival, r in zip(arrivals, rows)]
    if known is not None and known.state is not None:
        candidates = _known_candidates(cursor, policy, values, distance, known)
    else:
        candidates = _stored_candidates(cursor, policy, signed, values, distance)
    # A re-written founder whose old cluster lives on cannot found another under its own id.
    taken = _cluster_ids_among(cursor, ids) if moved else set()
    fresh = iter(range(allocate_ids(cursor, len(taken)) + 1, 2**63) if taken else ())

    def new_cluster(id_: int) -> int:
        return next(fresh) if id_ in taken else id_

    batch = [Representative(0, i, arrivals[i], int(values[i]), ranks[i]) for i in range(len(rows))]
    clusters, heads, moved_heads, replaced = _assign_in_order(
        batch, [r[2] for r in rows], ids, candidates, distance, new_cluster
    )
    return Placement([r[2] for r in rows], ids, clusters, arrivals, heads, moved_heads, replaced)


@dataclass(frozen=True)
class _StoredHead:
    """A stored representative within k of a newcomer."""

    distance: int
    arrival: int
    cluster: int
    id: int
    key: str
    rank: tuple


def _policys_value(policy: KeepPolicy, column: str = "d.keep_value") -> str:
    """SQL for the keep values a scan of every representative (or document) reads: none unless the
    policy ranks by a field (:func:`keep.keep_value_text`)."""
    return keep_value_text(column) if policy.kind == "field" else "NULL::pg_catalog.text"


def _stored_candidates(
    cursor: psycopg.Cursor, policy: KeepPolicy, signed: list[int], values: np.ndarray, k: int
) -> list[list[_StoredHead]]:
    """For each newcomer, every stored representative within ``k``. While the store has at most
    ``IN_MEMORY_REPRESENTATIVES`` clusters they are compared in numpy (one statement reads them
    all: far cheaper than a radius search per document, a few ms each at k = 11); beyond, in SQL."""
    found: list[list[_StoredHead]] = [[] for _ in signed]
    rows = cursor.execute(
        f"SELECT d.id, d.fingerprint, h.cluster, coalesce(d.arrival, d.id), d.length, {_policys_value(policy)}, "
        "d.key FROM simhash.cluster_heads h JOIN simhash.documents d ON d.id = h.representative_id ORDER BY d.id LIMIT %s",
        (IN_MEMORY_REPRESENTATIVES + 1,),
    ).fetchall()
    if len(rows) > IN_MEMORY_REPRESENTATIVES:
        method = "probe" if distributed.is_distributed(cursor) else "auto"
        near = cursor.execute(
            _NEAR_DOCUMENTS, {"fingerprints": signed, "k": k, "method": method}, prepare=True
        ).fetchall()
        heads = {
            row[0]: row[1:] for row in cursor.execute(_REPRESENTATIVES_AMONG, {"ids": sorted({row[1] for row in near})})
        }
        for ordinality, id_, distance in near:
            if id_ in heads:
                cluster, arrival, length, value, key = heads[id_]
                found[ordinality - 1].append(
                    _StoredHead(distance, arrival, cluster, id_, key, policy.rank(arrival, length, stored_value(value)))
                )
        return found
    if not rows or not len(values):
        return found
    representatives = np.array([r[1] for r in rows], dtype=np.int64).view(np.uint64)
    step = max(1, (1 << 22) // len(representatives))  # bounds the distance matrix at 4M cells
    for start in range(0, len(values), step):
        distances = np.bitwise_count(values[start : start + step, None] ^ representatives[None, :])
        for offset, column in zip(*np.nonzero(distances <= k)):
            id_, _, cluster, arrival, length, value, key = rows[int(column)]
            found[start + int(offset)].append(
                _StoredHead(
                    int(distances[offset, column]),
                    arrival,
                    cluster,
                    id_,
                    key,
                    policy.rank(arrival, length, stored_value(value)),
                )
            )
    return found


# What a writer checks, under the cluster lock, to know that nobody else wrote since its last batch:
# any insert raises the largest id (ids are never given twice), any clustering write (a re-written
# text included) the largest arrival, any removal lowers the count.
_STORE_STATE = """
    SELECT pg_catalog.count(*), GREATEST(pg_catalog.max(arrival), pg_catalog.max(id), 0) FROM simhash.documents
"""

# The representatives among the given keys (on Citus: the shards of those keys only).
_REPRESENTATIVES_BY_KEY = f"""
    SELECT d.id, d.fingerprint, h.cluster, coalesce(d.arrival, d.id), d.length, {keep_value_text("d.keep_value")}, d.key
    FROM simhash.documents d JOIN simhash.cluster_heads h ON h.representative_id = d.id
    WHERE d.key = ANY(%(keys)s::pg_catalog.text[])
"""


def store_state(cursor: psycopg.Cursor) -> tuple[int, int]:
    """(documents stored, largest arrival or id): changed by every write of any writer."""
    row = cursor.execute(_STORE_STATE).fetchone()
    assert row is not None  # an aggregate: one row
    return int(row[0]), int(row[1])


class KnownNeighbours:
    """The stored documents near each newcomer, known in advance by a writer that saw every
    fingerprint of its run before storing any (``ray_data.dedup_dataset``, whose workers join the
    run's fingerprints on exact-match block keys): :func:`place` then reads the representatives
    among them by key instead of comparing every representative or searching the store per document.

    ``near``: for each fingerprint of the run, the other fingerprints of the run within the cluster
    distance (both ways). ``before``: for each, the keys of documents stored before the run within it
    (one batched search). ``state``: :func:`store_state` when ``before`` was found. Each batch checks,
    under the cluster lock, that the store is in the state the previous batch left it in; if another
    writer wrote meanwhile, the lists are incomplete and every later batch searches the store as usual.
    The decisions are the same either way: only the cost differs.
    """

    def __init__(
        self, near: Mapping[int, Sequence[int]], before: Mapping[int, Sequence[str]], state: tuple[int, int] | None
    ) -> None:
        self.near, self.before, self.state = near, before, state
        self._stored: dict[int, set[str]] = {}  # fingerprint -> keys of this run's documents that represented a cluster

    def check(self, cursor: psycopg.Cursor) -> None:
        """Under the cluster lock, before a batch: if the store is not as this run's last batch
        left it (another writer wrote), the lists are incomplete from now on, and unused."""
        if self.state is not None and store_state(cursor) != self.state:
            self.state = None

    def record(self, found: Mapping[str, Membership]) -> None:
        """After a batch: its documents that represent their cluster (a superset of the
        representatives is harmless: the store says which still are)."""
        for key, membership in found.items():
            if membership.is_representative:
                self._stored.setdefault(membership.fingerprint, set()).add(key)

    def keys_near(self, value: int) -> set[str]:
        """Keys that may be stored representatives within the distance of ``value``: every one that is."""
        keys = set(self.before.get(value, ()))
        for other in (value, *self.near.get(value, ())):
            keys |= self._stored.get(other, set())
        return keys


def _known_candidates(
    cursor: psycopg.Cursor, policy: KeepPolicy, values: np.ndarray, k: int, known: KnownNeighbours
) -> list[list[_StoredHead]]:
    """:func:`_stored_candidates` from the keys ``known`` gives: the representatives among them, by key."""
    wanted = [sorted(known.keys_near(int(value))) for value in values]
    keys = sorted({key for group in wanted for key in group})
    heads = {row[6]: row for row in cursor.execute(_REPRESENTATIVES_BY_KEY, {"keys": keys})} if keys else {}
    found: list[list[_StoredHead]] = []
    for value, group in zip(values, wanted):
        near = []
        for key in group:
            row = heads.get(key)
            if row is None:
                continue
            distance = int(np.bitwise_count(np.uint64(value) ^ np.int64(row[1]).view(np.uint64)))
            if distance <= k:
                id_, _, cluster, arrival, length, keep_value, _ = row
                near.append(
                    _StoredHead(
                        distance, arrival, cluster, id_, key, policy.rank(arrival, length, stored_value(keep_value))
                    )
                )
        found.append(sorted(near, key=lambda head: head.id))
    return found


def _cluster_ids_among(cursor: psycopg.Cursor, ids: list[int]) -> set[int]:
    rows = cursor.execute("SELECT cluster FROM simhash.cluster_heads WHERE cluster = ANY(%s::bigint[])", (ids,))
    return {row[0] for row in rows}


def _assign_in_order(
    batch: list[Representative],
    keys: list[str],
    ids: list[int],
    stored: list[list[_StoredHead]],
    k: int,
    new_cluster=lambda id_: id_,
) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]], list[tuple[str, str]]]:
    """Each new document's cluster, in arrival order: the nearest representative within ``k`` as it
    is when the document arrives (ties: the earliest arrival), stored or of this batch; a newcomer
    ranked better than its cluster's representative replaces it (:mod:`keep`). Returns (clusters,
    [(cluster, final representative id)] of clusters founded, the same of stored clusters that
    changed representative, [(key replaced, key replacing)] in order)."""
    clusters: list[int] = []
    current: dict[int, tuple[int, int, int, tuple, str]] = {}  # cluster -> (arrival, id, value, rank, key) now
    founded: list[int] = []
    replaced: list[tuple[str, str]] = []
    head_values = np.empty(len(batch), dtype=np.uint64)  # the representatives of this batch, by slot
    head_cluster: list[int] = []
    slot_of: dict[int, int] = {}
    for index, document in enumerate(batch):
        best: tuple[int, int, int] | None = None  # (distance, arrival, cluster)
        head_rank: tuple = ()
        head_key = ""
        for head in stored[index]:
            if head.cluster not in current and (best is None or (head.distance, head.arrival) < best[:2]):
                best, head_rank, head_key = (head.distance, head.arrival, head.cluster), head.rank, head.key
        if head_cluster:
            distances = np.bitwise_count(head_values[: len(head_cluster)] ^ np.uint64(document.value))
            for slot in np.flatnonzero(distances <= k).tolist():
                cluster = head_cluster[slot]
                arrival, _, _, rank, key = current[cluster]
                if best is None or (int(distances[slot]), arrival) < best[:2]:
                    best, head_rank, head_key = (int(distances[slot]), arrival, cluster), rank, key
        id_ = ids[index]
        if best is None:
            cluster = new_cluster(id_)
            founded.append(cluster)
            current[cluster] = (document.arrival, id_, document.value, document.rank, keys[index])
            slot_of[cluster] = len(head_cluster)
            head_values[len(head_cluster)] = document.value
            head_cluster.append(cluster)
            clusters.append(cluster)
            continue
        cluster = best[2]
        clusters.append(cluster)
        if document.rank < head_rank:
            replaced.append((head_key, keys[index]))
            current[cluster] = (document.arrival, id_, document.value, document.rank, keys[index])
            if cluster not in slot_of:
                slot_of[cluster] = len(head_cluster)
                head_cluster.append(cluster)
            head_values[slot_of[cluster]] = document.value
    founded_set = set(founded)
    heads = [(cluster, current[cluster][1]) for cluster in founded]
    moved = [(cluster, entry[1]) for cluster, entry in current.items() if cluster not in founded_set]
    return clusters, heads, moved, replaced


def leaders(values: np.ndarray, k: int, near: Mapping[int, Sequence[int]] | None = None) -> np.ndarray:
    """Leader clustering of fingerprints in the given order: the position of each one's representative.

    Each fingerprint joins the nearest earlier representative within ``k`` bits (ties: the
    earliest), else it is a representative itself. Exact: built on the pairs within ``k`` (a copy
    of a value paired with the first copy of each value near it), or, past about 4 of them a
    fingerprint, on a search of the representatives alone (:mod:`leaders`). ``near``: the pairs of
    distinct values within ``k`` (both ways), found by a caller (a join on Ray's workers); None:
    found here.
    """
    if len(values) == 0:
        return np.arange(0, dtype=np.int64)
    try:
        return leaders_over_pairs(len(values), *_pairs_with_first_copies(values, k, near))
    except TooManyPairs:  # many distinct values near one another: the representatives alone are searched
        return leader_search.sequential_leaders(values, k)


def _pairs_with_first_copies(
    values: np.ndarray, k: int, near: Mapping[int, Sequence[int]] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs within ``k`` that :func:`leaders_over_pairs` needs, without the n² / 2 pairs of n
    identical fingerprints: only a value's first copy can represent (a later copy has it at
    distance 0, or the representative it joined at the same distance, earlier), so each position is
    paired with the first copy of every value within ``k`` of its own (its own value's included)."""
    unique, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    positions = np.arange(len(values), dtype=np.int64)
    copies = positions != first[inverse]
    lefts, rights, distances = [first[inverse[copies]]], [positions[copies]], [np.zeros(int(copies.sum()), np.int64)]
    max_pairs = leader_search.max_pairs(len(values))
    if near is None:
        a, b, distance = distinct_pairs(unique, k, max_pairs)  # between distinct values
    else:
        a, b, distance = _given_pairs(unique, near)
    if len(a):
        order = np.argsort(inverse, kind="stable")  # positions grouped by value
        starts = np.searchsorted(inverse[order], np.arange(len(unique)))
        sizes = np.bincount(inverse, minlength=len(unique))
        if int(copies.sum()) + int(sizes[a].sum()) + int(sizes[b].sum()) > max_pairs:
            raise TooManyPairs(f"more than {max_pairs} pairs")
        for this, other in ((a, b), (b, a)):
            counts = sizes[this]
            pair = np.repeat(np.arange(len(this)), counts)
            within = np.arange(len(pair)) - np.repeat(np.cumsum(counts) - counts, counts)
            lefts.append(order[starts[this][pair] + within])
            rights.append(first[other][pair])
            distances.append(distance[pair])
    return np.concatenate(lefts), np.concatenate(rights), np.concatenate(distances)


def leaders_with_copies(values: np.ndarray, k: int, near: Mapping[int, Sequence[int]] | None = None) -> np.ndarray:
    """:func:`leaders` (the name the decisions in memory have called it by). A later copy of a value
    joins the nearest representative within ``k`` when it arrives, which is not always the one its
    first copy joined: one that arrived in between may be nearer (at k = 2, the fourth of 0, 0b11,
    0b111, 0b11 joins 0b111, as ``dedup`` batch by batch places it)."""
    return leaders(values, k, near)


def _given_pairs(unique: np.ndarray, near: Mapping[int, Sequence[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs (a < b) of positions in sorted distinct ``unique`` that ``near`` names (values
    within k, both ways, as a join found them), with their distances."""
    where = {value: index for index, value in enumerate(unique.tolist())}
    found = [
        (where[a], where[b]) for a, others in near.items() for b in others if a in where and where[a] < where.get(b, -1)
    ]
    left = np.array([a for a, _ in found], dtype=np.int64)
    right = np.array([b for _, b in found], dtype=np.int64)
    return left, right, np.bitwise_count(unique[left] ^ unique[right]).astype(np.int64)


def leaders_over_pairs(n: int, left: np.ndarray, right: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """:func:`leaders` of ``n`` fingerprints given every pair of positions within the distance
    (each pair once, either way round) and their distances: the position of each one's representative."""
    representative = np.arange(n, dtype=np.int64)
    if n == 0 or len(left) == 0:
        return representative
    left, right, distance = (np.asarray(a, dtype=np.int64) for a in (left, right, distance))
    # For each later document, its earlier neighbours, nearest first then earliest.
    low, high = np.minimum(left, right), np.maximum(left, right)
    order = np.lexsort((low, distance, high))
    low, high = low[order], high[order]
    starts = np.searchsorted(high, np.arange(n))
    ends = np.searchsorted(high, np.arange(n), side="right")
    is_leader = np.ones(n, dtype=bool)
    low_list = low.tolist()
    for position in np.flatnonzero(ends > starts).tolist():
        for neighbour in low_list[starts[position] : ends[position]]:
            if is_leader[neighbour]:
                representative[position] = neighbour
                is_leader[position] = False
                break
    return representative


def recluster(connection, k: int, policy: KeepPolicy | str | None = None) -> tuple[int, int]:
    """Cluster every stored document afresh at distance ``k``, in arrival order, by the keep
    ``policy`` (None: the store's), and record both.

    One transaction on the given psycopg connection, under the cluster lock. Returns
    (documents, clusters). A cluster's id is its founder's document id, and documents arrive in
    the order they were stored (input order within a batch), so this gives what a fresh
    ``dedup`` of the same input in one go gives, and keeps the ids of a store clustered as it grew.
    """
    with connection.cursor() as cursor:
        lock(cursor)
        chosen = keep_policy(cursor) if policy is None else KeepPolicy.parse(policy)
        _check_field_values(cursor, chosen)
        rows = cursor.execute(
            f"SELECT id, fingerprint, coalesce(arrival, id), length, {_policys_value(chosen, 'keep_value')} "
            "FROM simhash.documents ORDER BY coalesce(arrival, id), id"
        ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        values = np.array([r[1] for r in rows], dtype=np.int64).view(np.uint64)
        if chosen.kind == "first":
            founder = leaders(values, k)
            head = np.where(founder == np.arange(len(ids)), np.arange(len(ids)), -1)
        else:
            founder, head = leaders_keeping(values, [chosen.rank(r[2], r[3], stored_value(r[4])) for r in rows], k)
        clusters = ids[founder]
        cursor.execute(
            "UPDATE simhash.store_info SET cluster_max_distance = %s, keep_policy = %s",
            (k, None if chosen.kind == "first" else str(chosen)),
        )
        cursor.execute("UPDATE simhash.documents SET arrival = id WHERE arrival IS NULL")
        cursor.execute("DELETE FROM simhash.cluster_heads")
        cursor.execute(
            "UPDATE simhash.documents d SET cluster = u.cluster "
            "FROM ROWS FROM (pg_catalog.unnest(%(ids)s::bigint[]), pg_catalog.unnest(%(clusters)s::bigint[])) AS u(id, cluster) "
            "WHERE d.id = u.id AND d.cluster IS DISTINCT FROM u.cluster",
            {"ids": ids.tolist(), "clusters": clusters.tolist()},
        )
        founders = np.flatnonzero(head >= 0)
        cursor.execute(_NEW_HEADS, {"clusters": ids[founders].tolist(), "ids": ids[head[founders]].tolist()})
    return len(ids), len(founders)


def _check_field_values(cursor: psycopg.Cursor, chosen: KeepPolicy) -> None:
    """Refuse to keep by a field other than the one whose values the documents hold: each document
    keeps one value (``documents.keep_value``), of the field the store was kept by when it was
    stored, so keeping by another field ranked them by the first field's values under the second's
    name, silently."""
    if chosen.kind != "field":
        return
    current = keep_policy(cursor)
    if current.kind == "field" and current.field == chosen.field:
        return
    if not cursor.execute("SELECT EXISTS (SELECT 1 FROM simhash.documents WHERE keep_value IS NOT NULL)").fetchone()[0]:
        return
    if current.kind == "field":
        raise InvalidValueError(
            f"the store's documents hold the values of field {current.field!r} (its clusters keep {current}), "
            f"not of {chosen.field!r}: recluster by field:{current.field}:asc or :desc, longest, shortest or first; "
            f"to keep by {chosen.field!r}, dedup the records into an empty store with --keep {chosen}"
        )
    # Kept by a field once, then by a rule that names none: which field the values are of is not
    # recorded, and documents written since hold none (they would all rank last).
    raise InvalidValueError(
        f"the store's documents hold values of the field its clusters were kept by before they came to keep "
        f"{current}, which the store no longer names (and documents stored since hold none), so keeping by "
        f"{chosen.field!r} could rank them by another field's values: to keep by {chosen.field!r}, dedup the "
        f"records into an empty store with --keep {chosen}"
    )


# The cluster, representative and distance to it of the documents ``{chosen}`` selects; a cluster
# whose representative was removed shows its oldest member. In steps (MATERIALIZED), as _HAND_OVER
# and for the same reason: the same statement on one server and on Citus.
_MEMBERSHIP = """
    WITH chosen AS MATERIALIZED (
        SELECT d.id, d.key, d.fingerprint, d.cluster FROM simhash.documents d WHERE {chosen}
    ), wanted AS MATERIALIZED (
        SELECT DISTINCT cluster FROM chosen WHERE cluster IS NOT NULL
    ), represented AS MATERIALIZED (
        SELECT r.cluster, r.key, r.fingerprint
        FROM wanted w
        JOIN simhash.cluster_heads h ON h.cluster = w.cluster
        JOIN simhash.documents r ON r.id = h.representative_id AND r.cluster = h.cluster
    ), oldest AS MATERIALIZED (
        SELECT o.cluster, pg_catalog.min(o.id) AS id
        FROM simhash.documents o
        WHERE o.cluster IN (SELECT cluster FROM wanted) AND o.cluster NOT IN (SELECT cluster FROM represented)
        GROUP BY o.cluster
    ), firsts AS MATERIALIZED (
        SELECT f.cluster, f.key, f.fingerprint FROM simhash.documents f WHERE f.id IN (SELECT id FROM oldest)
    )
    SELECT c.key, c.fingerprint, c.cluster, coalesce(r.key, f.key),
           simhash.distance(c.fingerprint, coalesce(r.fingerprint, f.fingerprint))
    FROM chosen c
    LEFT JOIN represented r ON r.cluster = c.cluster
    LEFT JOIN firsts f ON f.cluster = c.cluster
"""


def memberships(cursor: psycopg.Cursor, keys: Sequence[str]) -> dict[str, Membership]:
    """The cluster, representative and distance to it of each stored key among ``keys``."""
    rows = cursor.execute(_MEMBERSHIP.format(chosen="d.key = ANY(%s::pg_catalog.text[])"), (list(keys),)).fetchall()
    return {row[0]: _membership(row) for row in rows}


def _membership(row) -> Membership:
    key, value, cluster, representative, distance = row
    return Membership(key, from_signed(value), cluster, representative, distance)


@dataclass(frozen=True)
class Cluster:
    id: int
    representative: str
    members: list[tuple[str, int]]  # (key, distance to the representative), representative first

    @property
    def size(self) -> int:
        return len(self.members)


def stored_clusters(cursor: psycopg.Cursor, min_size: int = 2) -> list[Cluster]:
    """Every stored cluster of at least ``min_size`` documents, largest first, members nearest first."""
    rows = cursor.execute(
        _MEMBERSHIP.format(
            chosen="d.cluster IN (SELECT s.cluster FROM simhash.documents s "
            "WHERE s.cluster IS NOT NULL GROUP BY s.cluster HAVING pg_catalog.count(*) >= %s)"
        )
        + " ORDER BY c.cluster, c.id",
        (min_size,),
    ).fetchall()
    groups: dict[int, list[Membership]] = {}
    for row in rows:
        membership = _membership(row)
        groups.setdefault(membership.cluster, []).append(membership)  # type: ignore[arg-type]
    result = []
    for cluster, members in groups.items():
        representative = members[0].representative or members[0].key
        ordered = sorted(members, key=lambda m: (m.key != representative, m.distance or 0, m.key))
        result.append(Cluster(cluster, representative, [(m.key, m.distance or 0) for m in ordered]))
    return sorted(result, key=lambda c: (-c.size, c.id))


def computed_clusters(ids: np.ndarray, values: np.ndarray, keys_of, k: int, min_size: int = 2) -> list[Cluster]:
    """The clusters :func:`recluster` would store at ``k``, computed without storing them
    (``keys_of``: ids -> {id: key})."""
    order = np.argsort(ids, kind="stable")
    ids, values = ids[order], values[order]
    representative = leaders(values, k)
    sizes = np.bincount(representative, minlength=len(ids))
    members = np.flatnonzero(sizes[representative] >= min_size)
    keys = keys_of(ids[members])
    groups: dict[int, list[tuple[str, int]]] = {}
    for position in members.tolist():
        leader = int(representative[position])
        distance = int(np.bitwise_count(values[position] ^ values[leader]))
        groups.setdefault(leader, []).append((keys[int(ids[position])], distance))
    result = []
    for leader, group in groups.items():
        lead_key = keys[int(ids[leader])]
        ordered = sorted(group, key=lambda m: (m[0] != lead_key, m[1], m[0]))
        result.append(Cluster(int(ids[leader]), lead_key, ordered))
    return sorted(result, key=lambda c: (-c.size, c.id))


def sample_keys(cursor: psycopg.Cursor, count: int, seed: str) -> list[str]:
    """Up to ``count`` stored keys in an order fixed by the seed (one pass over the keys)."""
    rows = cursor.execute(
        "SELECT key FROM simhash.documents ORDER BY pg_catalog.md5(%s || key), key LIMIT %s", (seed, count)
    ).fetchall()
    return [row[0] for row in rows]


__all__ = [
    "Cluster",
    "KnownNeighbours",
    "Membership",
    "Placement",
    "allocate_ids",
    "assign",
    "leaders",
    "leaders_over_pairs",
    "lock_for_write",
    "memberships",
    "keep_policy",
    "place",
    "recluster",
    "store_state",
    "stored_clusters",
]
