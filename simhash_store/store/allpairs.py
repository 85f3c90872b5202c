"""All-pairs over the stored documents, from one snapshot: every fingerprint read into numpy a
million rows at a time (packed into bytea by the server), the near pairs found in memory
(:mod:`simhash_store.pairs`), keys looked up after.

Raw psycopg: binary results straight into numpy buffers, which SQLAlchemy cannot do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import psycopg

from ..pairs import near_clusters, near_groups, near_pairs
from .documents import IdenticalGroup, Pair

KeysOf = Callable[[psycopg.Connection, np.ndarray], dict[int, str]]


_READ_ROWS = 1_000_000  # rows a statement: two bytea of 8 MB each, far below the 1 GB limit of a value

# A million rows in id order, aggregated in the server into two bytea of big-endian int64s. A COPY
# sends one message a row, and psycopg reads each through Python: about 10 us a row on an idle
# machine and several times that under load, far more than the numpy search after it.
_READ_CHUNK = (
    "SELECT string_agg(int8send(id), ''::bytea), string_agg(int8send(fingerprint), ''::bytea), max(id), count(*) "
    "FROM (SELECT id, fingerprint FROM simhash.documents WHERE id {} %s ORDER BY id LIMIT %s) AS chunk"
)


def all_fingerprints(raw: psycopg.Connection) -> tuple[np.ndarray, np.ndarray]:
    """Every (id, fingerprint), a million rows a statement (keyset on the primary key), into numpy.

    Run inside one snapshot (the caller's REPEATABLE READ transaction), the chunks are one consistent read.
    """
    ids: list[np.ndarray] = []
    values: list[np.ndarray] = []
    after, comparison = -(2**63), ">="
    with raw.cursor(binary=True) as cursor:
        while True:
            cursor.execute(_READ_CHUNK.format(comparison), (after, _READ_ROWS))
            row = cursor.fetchone()
            if row is None or not row[3]:
                break
            ids.append(np.frombuffer(row[0], dtype=">i8").astype(np.int64))
            values.append(np.frombuffer(row[1], dtype=">i8").astype(np.int64).view(np.uint64))
            after, comparison = row[2], ">"
            if row[3] < _READ_ROWS:
                break
    if not ids:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)
    return np.concatenate(ids), np.concatenate(values)


def keys_of(raw: psycopg.Connection, ids: np.ndarray) -> dict[int, str]:
    """The keys of stored ids, in the snapshot's own (raw) transaction, 50,000 ids a statement."""
    keys: dict[int, str] = {}
    with raw.cursor() as cursor:
        for start in range(0, len(ids), 50_000):
            # An array literal: psycopg adapts a list of Python ints one by one, ten times slower.
            chunk = "{" + ",".join(map(str, np.asarray(ids[start : start + 50_000]).tolist())) + "}"
            cursor.execute("SELECT id, key FROM simhash.documents WHERE id = ANY(%s::bigint[])", (chunk,))
            keys.update(cursor.fetchall())
    return keys


def near_duplicates(
    raw: psycopg.Connection, max_distance: int, keys_of: KeysOf = keys_of
) -> Iterator[IdenticalGroup | Pair]:
    """Groups of identical fingerprints, then pairs of groups within ``max_distance`` (see Store.near_duplicates).

    The search and the key lookups run now, in the caller's snapshot; the groups and pairs come out of
    the returned iterator, a chunk of pairs at a time, ordered in numpy by their keys' ranks: a pair costs
    a few dozen bytes until it is taken, not a Python object (16.7 million pairs took 4.2 GB as a list).
    """
    ids, values = all_fingerprints(raw)
    grouped = near_groups(values, max_distance)
    group_of = np.empty(len(ids), dtype=np.int64)
    group_of[grouped.members] = np.repeat(np.arange(len(grouped.sizes)), grouped.sizes)
    wanted = np.zeros(len(grouped.sizes), dtype=bool)
    wanted[grouped.sizes > 1] = True
    wanted[grouped.left] = wanted[grouped.right] = True
    keys = keys_of(raw, ids[wanted[group_of]])
    names: dict[int, list[str]] = {}
    for position in np.flatnonzero(wanted[group_of]).tolist():
        names.setdefault(int(group_of[position]), []).append(keys[int(ids[position])])
    for members in names.values():
        members.sort()
    groups = sorted((IdenticalGroup(members) for members in names.values() if len(members) > 1), key=lambda g: g.keys)
    # Each side of a pair stands for its group's first key: rank the groups by that key.
    named = sorted(names, key=lambda group: names[group][0])
    rank = np.zeros(len(grouped.sizes), dtype=np.int64)
    rank[np.asarray(named, dtype=np.int64)] = np.arange(len(named), dtype=np.int64)
    firsts = [names[group][0] for group in named]
    return _in_order(groups, firsts, rank[grouped.left], rank[grouped.right], grouped.distance)


_PAIRS_A_CHUNK = 65_536


def _in_order(
    groups: list[IdenticalGroup], firsts: list[str], left: np.ndarray, right: np.ndarray, distance: np.ndarray
) -> Iterator[IdenticalGroup | Pair]:
    """The groups, then the pairs (given as ranks into ``firsts``) nearest first, then by their keys."""
    yield from groups
    low, high = np.minimum(left, right), np.maximum(left, right)
    del left, right
    order = np.lexsort((high, low, distance))
    for start in range(0, len(order), _PAIRS_A_CHUNK):
        chunk = order[start : start + _PAIRS_A_CHUNK]
        for a, b, d in zip(low[chunk].tolist(), high[chunk].tolist(), distance[chunk].tolist()):
            yield Pair(firsts[a], firsts[b], d)


def pairs(raw: psycopg.Connection, max_distance: int, keys_of: KeysOf = keys_of) -> list[Pair]:
    """Every pair within ``max_distance``, nearest first."""
    ids, values = all_fingerprints(raw)
    left, right, distance = near_pairs(values, max_distance)
    keys = keys_of(raw, np.unique(np.concatenate([ids[left], ids[right]])))
    return [
        Pair(min(keys[int(ids[i])], keys[int(ids[j])]), max(keys[int(ids[i])], keys[int(ids[j])]), int(d))
        for i, j, d in zip(left.tolist(), right.tolist(), distance.tolist())
    ]


def clusters(raw: psycopg.Connection, max_distance: int, keys_of: KeysOf = keys_of) -> list[list[str]]:
    """Connected groups of two or more documents, largest first."""
    ids, values = all_fingerprints(raw)
    labels = near_clusters(values, max_distance)
    sizes = np.bincount(labels, minlength=len(labels))
    members = np.flatnonzero(sizes[labels] > 1)
    keys = keys_of(raw, ids[members])
    groups: dict[int, list[str]] = {}
    for position in members.tolist():
        groups.setdefault(int(labels[position]), []).append(keys[int(ids[position])])
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
