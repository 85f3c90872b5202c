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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

from . import distributed
from .bits import from_signed
from .pairs import near_pairs

# Two-integer advisory lock: (project, purpose), the project constant of store.ADVISORY_LOCK_SPACE
# ("SIMH"; purpose 1 is --skip-near-duplicates). The wait is bounded by the pinned lock_timeout.
PROJECT_LOCK_SPACE = 0x53494D48
CLUSTER_LOCK = 2

# Up to this many clusters, a write compares its documents with every representative in
# numpy (1,000 documents against 100,000 representatives: about 0.2 s) instead of a radius
# search per document in SQL.
IN_MEMORY_REPRESENTATIVES = 100_000

_NEAREST_REPRESENTATIVE = """
    SELECT q.ordinality, n.cluster, n.distance, n.id
    FROM pg_catalog.unnest(%(fingerprints)s::bigint[]) WITH ORDINALITY AS q(fingerprint, ordinality)
    CROSS JOIN LATERAL (
        SELECT h.cluster, m.distance, m.id
        FROM simhash.near(q.fingerprint, %(k)s::integer) m
        JOIN simhash.cluster_heads h ON h.representative_id = m.id
        ORDER BY m.distance, m.id LIMIT 1
    ) n
"""

_NEW_HEADS = """
    INSERT INTO simhash.cluster_heads (cluster, representative_id)
    SELECT * FROM ROWS FROM (pg_catalog.unnest(%(clusters)s::bigint[]), pg_catalog.unnest(%(ids)s::bigint[]))
"""

# A batch's documents get their clusters, and the clusters they found their heads, in one statement.
_SET_CLUSTERS_AND_HEADS = """
    WITH heads AS (
        INSERT INTO simhash.cluster_heads (cluster, representative_id)
        SELECT * FROM ROWS FROM (pg_catalog.unnest(%(founded)s::bigint[]), pg_catalog.unnest(%(founders)s::bigint[]))
    )
    UPDATE simhash.documents d SET cluster = u.cluster
    FROM ROWS FROM (pg_catalog.unnest(%(ids)s::bigint[]), pg_catalog.unnest(%(clusters)s::bigint[])) AS u(id, cluster)
    WHERE d.id = u.id
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
_HAND_OVER = """
    WITH vacated AS (
        SELECT h.cluster, (SELECT pg_catalog.min(m.id) FROM simhash.documents m WHERE m.cluster = h.cluster) AS successor
        FROM simhash.documents d
        JOIN simhash.cluster_heads h ON h.representative_id = d.id
        WHERE d.key = ANY(%(keys)s::pg_catalog.text[]) AND d.cluster IS DISTINCT FROM h.cluster
    ), handed AS (
        UPDATE simhash.cluster_heads h SET representative_id = v.successor
        FROM vacated v WHERE h.cluster = v.cluster AND v.successor IS NOT NULL
    )
    DELETE FROM simhash.cluster_heads h USING vacated v WHERE h.cluster = v.cluster AND v.successor IS NULL
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
    return row[0] if row else None


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


def assign(cursor: psycopg.Cursor, keys: Sequence[str], *, distance: int | None = None, moved: bool = True) -> None:
    """Give every document among ``keys`` that has no cluster yet one, in the order of ``keys``
    (the input order: the first of near-duplicates leads). Call it inside the write's transaction.

    ``distance``: the store's cluster distance, when the caller holds the lock (:func:`lock_for_write`).
    ``moved``: documents among ``keys`` may have left their cluster (a re-written text): a cluster
    whose representative left is handed to its oldest remaining member first.
    """
    if not keys:
        return
    if distance is None:
        distance = lock_for_write(cursor)
        if distance is None:  # this store keeps no clusters
            return
    if moved:
        cursor.execute(_HAND_OVER, {"keys": list(keys)})
    rows = cursor.execute(
        "SELECT id, fingerprint, key FROM simhash.documents WHERE key = ANY(%s::pg_catalog.text[]) AND cluster IS NULL",
        (list(keys),),
    ).fetchall()
    if rows:
        cursor.execute(_SET_CLUSTERS_AND_HEADS, place(cursor, keys, rows, distance, moved=moved).parameters())


@dataclass(frozen=True)
class Placement:
    """Where documents go, in input order: their keys, ids and clusters; and the clusters they found."""

    keys: list[str]
    ids: list[int]
    clusters: list[int]
    heads: list[tuple[int, int]]  # (cluster, representative id) of each cluster founded

    def parameters(self) -> dict[str, list]:
        return {
            "keys": self.keys, "ids": self.ids, "clusters": self.clusters,
            "founded": [cluster for cluster, _ in self.heads], "founders": [id_ for _, id_ in self.heads],
        }


def place(
    cursor: psycopg.Cursor, keys: Sequence[str], rows: Sequence[tuple[int, int, str]], distance: int, *, moved: bool = False
) -> Placement:
    """The clusters of documents without one, by the leader rule, in the order of ``keys``; ``rows``:
    their (id, signed fingerprint, key), stored or about to be (the caller holds the cluster lock).
    ``moved``: some of them are stored documents re-written with a new fingerprint."""
    position = {key: i for i, key in enumerate(keys)}
    rows = sorted(rows, key=lambda row: position[row[2]])
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    signed = [r[1] for r in rows]
    values = np.array(signed, dtype=np.int64).view(np.uint64)
    representatives = _representatives(cursor)
    if representatives is not None:
        nearest = _nearest_in_memory(representatives, values, distance)
    else:
        nearest = {}
        for ordinality, cluster, found, id_ in cursor.execute(
            _NEAREST_REPRESENTATIVE, {"fingerprints": signed, "k": distance}, prepare=True
        ):
            nearest[ordinality - 1] = (found, id_, cluster)
    # A re-written founder whose old cluster lives on cannot found another under its own id.
    taken = _cluster_ids_among(cursor, ids.tolist()) if moved else set()
    fresh = iter(range(allocate_ids(cursor, len(taken)) + 1, 2**63) if taken else ())
    clusters, heads = _assign_in_order(ids, values, nearest, distance, lambda id_: next(fresh) if id_ in taken else id_)
    return Placement([r[2] for r in rows], ids.tolist(), clusters, heads)


def _cluster_ids_among(cursor: psycopg.Cursor, ids: list[int]) -> set[int]:
    rows = cursor.execute("SELECT cluster FROM simhash.cluster_heads WHERE cluster = ANY(%s::bigint[])", (ids,))
    return {row[0] for row in rows}


def _representatives(cursor: psycopg.Cursor) -> list[tuple[int, int, int]] | None:
    """(id, signed fingerprint, cluster) of every representative in id order, if there are at most
    ``IN_MEMORY_REPRESENTATIVES``; else None (the search goes to SQL). One statement either way."""
    rows = cursor.execute(
        "SELECT d.id, d.fingerprint, h.cluster FROM simhash.cluster_heads h "
        "JOIN simhash.documents d ON d.id = h.representative_id ORDER BY d.id LIMIT %s",
        (IN_MEMORY_REPRESENTATIVES + 1,),
    ).fetchall()
    return rows if len(rows) <= IN_MEMORY_REPRESENTATIVES else None


def _nearest_in_memory(
    rows: list[tuple[int, int, int]], values: np.ndarray, k: int
) -> dict[int, tuple[int, int, int]]:
    """The nearest representative within ``k`` of each value (ties: the lowest id), compared with
    every representative (``rows``, in id order) in numpy: for a store with few clusters, far
    cheaper than a radius search per document (a few ms each at k = 11), with the same answers."""
    nearest: dict[int, tuple[int, int, int]] = {}
    if not rows:
        return nearest
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    representatives = np.array([r[1] for r in rows], dtype=np.int64).view(np.uint64)
    step = max(1, (1 << 22) // len(representatives))  # bounds the distance matrix at 4M cells
    for start in range(0, len(values), step):
        distances = np.bitwise_count(values[start : start + step, None] ^ representatives[None, :])
        best = np.argmin(distances, axis=1)  # the first minimum: the lowest id among the nearest
        for offset, column in enumerate(best.tolist()):
            distance = int(distances[offset, column])
            if distance <= k:
                nearest[start + offset] = (distance, int(ids[column]), rows[column][2])
    return nearest


def _assign_in_order(
    ids: np.ndarray, values: np.ndarray, stored: dict[int, tuple[int, int, int]], k: int, new_cluster=lambda id_: id_
) -> tuple[list[int], list[tuple[int, int]]]:
    """Each new document's cluster, given its nearest stored representative (distance, id, cluster)
    if any; representatives founded earlier in the same batch count too. A founder's cluster id is
    ``new_cluster(its id)``. Returns (clusters, [(cluster, representative id) of each founded])."""
    clusters: list[int] = []
    founders: list[tuple[int, int]] = []
    founder_values = np.empty(len(ids), dtype=np.uint64)
    for id_, value in zip(ids.tolist(), values):
        best = stored.get(len(clusters))
        if founders:
            distances = np.bitwise_count(founder_values[: len(founders)] ^ value)
            nearest = int(np.argmin(distances))
            cluster, founder = founders[nearest]
            candidate = (int(distances[nearest]), founder, cluster)
            if candidate[0] <= k and (best is None or candidate[:2] < best[:2]):
                best = candidate
        if best is None:
            founder_values[len(founders)] = value
            founders.append((new_cluster(id_), id_))
            clusters.append(founders[-1][0])
        else:
            clusters.append(best[2])
    return clusters, founders


def leaders(values: np.ndarray, k: int) -> np.ndarray:
    """Leader clustering of fingerprints in the given order: the position of each one's representative.

    Each fingerprint joins the nearest earlier representative within ``k`` bits (ties: the
    earliest), else it is a representative itself. Exact: built on all pairs within ``k``.
    """
    n = len(values)
    representative = np.arange(n, dtype=np.int64)
    if n == 0:
        return representative
    left, right, distance = near_pairs(values, k)
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


def recluster(connection, k: int) -> tuple[int, int]:
    """Cluster every stored document afresh at distance ``k``, in id order, and record ``k``.

    One transaction on the given psycopg connection, under the cluster lock. Returns
    (documents, clusters). A cluster's id is its representative's document id, so
    reclustering at the same distance keeps the ids of a store clustered as it grew.
    """
    with connection.cursor() as cursor:
        if distributed.is_distributed(cursor):
            # Citus cannot run the membership reads (documents joined to itself by id and cluster).
            raise distributed.NotDistributableError(
                "this store is distributed over a Citus cluster, which does not keep persistent clusters yet; "
                "`dups --clusters` computes them instead"
            )
        lock(cursor)
        rows = cursor.execute("SELECT id, fingerprint FROM simhash.documents ORDER BY id").fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        values = np.array([r[1] for r in rows], dtype=np.int64).view(np.uint64)
        representative = leaders(values, k)
        clusters = ids[representative]
        cursor.execute("UPDATE simhash.store_info SET cluster_max_distance = %s", (k,))
        cursor.execute("DELETE FROM simhash.cluster_heads")
        cursor.execute(
            "UPDATE simhash.documents d SET cluster = u.cluster "
            "FROM ROWS FROM (pg_catalog.unnest(%(ids)s::bigint[]), pg_catalog.unnest(%(clusters)s::bigint[])) AS u(id, cluster) "
            "WHERE d.id = u.id AND d.cluster IS DISTINCT FROM u.cluster",
            {"ids": ids.tolist(), "clusters": clusters.tolist()},
        )
        founders = ids[representative == np.arange(len(ids))].tolist()
        cursor.execute(_NEW_HEADS, {"clusters": founders, "ids": founders})
    return len(ids), len(founders)


_MEMBERSHIP = """
    SELECT d.key, d.fingerprint, d.cluster, coalesce(r.key, f.key),
           simhash.distance(d.fingerprint, coalesce(r.fingerprint, f.fingerprint))
    FROM simhash.documents d
    LEFT JOIN simhash.cluster_heads h ON h.cluster = d.cluster
    LEFT JOIN simhash.documents r ON r.id = h.representative_id AND r.cluster = d.cluster
    LEFT JOIN LATERAL (
        SELECT o.key, o.fingerprint FROM simhash.documents o
        WHERE r.id IS NULL AND o.cluster = d.cluster ORDER BY o.id LIMIT 1
    ) f ON true
"""


def memberships(cursor: psycopg.Cursor, keys: Sequence[str]) -> dict[str, Membership]:
    """The cluster, representative and distance to it of each stored key among ``keys``."""
    rows = cursor.execute(_MEMBERSHIP + " WHERE d.key = ANY(%s::pg_catalog.text[])", (list(keys),)).fetchall()
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
        _MEMBERSHIP + " WHERE d.cluster IN (SELECT c.cluster FROM simhash.documents c "
        "WHERE c.cluster IS NOT NULL GROUP BY c.cluster HAVING count(*) >= %s) ORDER BY d.cluster, d.id",
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


_PREFER_LONGEST = """
    WITH given AS (
        SELECT d.cluster, d.id, coalesce(d.length, 0) AS length, u.position
        FROM pg_catalog.unnest(%(keys)s::pg_catalog.text[]) WITH ORDINALITY AS u(key, position)
        JOIN simhash.documents d ON d.key = u.key
        WHERE d.cluster IS NOT NULL
    ), longest AS (
        SELECT DISTINCT ON (cluster) cluster, id, length FROM given ORDER BY cluster, length DESC, position
    )
    UPDATE simhash.cluster_heads h SET representative_id = l.id
    FROM longest l
    WHERE h.cluster = l.cluster AND h.representative_id <> l.id
      AND l.length > coalesce((SELECT r.length FROM simhash.documents r WHERE r.id = h.representative_id), -1)
"""


def prefer_longest(cursor: psycopg.Cursor, keys: Sequence[str], *, locked: bool = False) -> int:
    """Make each given document the representative of its cluster if it is longer than the
    representative (the first of equally long ones wins); returns how many clusters changed.
    Their other members keep their cluster: they are within ``k`` of the old representative,
    so within ``2k`` of the new one. ``locked``: the caller holds the cluster lock."""
    if not locked:
        lock(cursor)
    cursor.execute(_PREFER_LONGEST, {"keys": list(keys)})
    return cursor.rowcount


def sample_keys(cursor: psycopg.Cursor, count: int, seed: str) -> list[str]:
    """Up to ``count`` stored keys in an order fixed by the seed (one pass over the keys)."""
    rows = cursor.execute(
        "SELECT key FROM simhash.documents ORDER BY pg_catalog.md5(%s || key), key LIMIT %s", (seed, count)
    ).fetchall()
    return [row[0] for row in rows]


__all__ = [
    "Cluster", "Membership", "Placement", "allocate_ids", "assign", "leaders", "lock_for_write", "memberships",
    "place", "recluster", "stored_clusters",
]
