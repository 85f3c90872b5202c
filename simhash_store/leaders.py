"""Leader clustering of fingerprints in arrival order, exact, without every pair. Pure: no I/O.

Each fingerprint joins the nearest earlier *representative* (leader) within ``k`` bits, ties to
the earliest, else it is a representative itself. The fast way (:func:`clusters.leaders`) finds
every pair within ``k`` first, which is linear for ordinary data but quadratic where many
distinct fingerprints lie within ``k`` of one another (one template, a few words of its own in
each copy): 10,000 of them are 50 million pairs. Only the pairs with a representative matter,
and representatives lie more than ``k`` apart, so :func:`sequential_leaders` searches the
representatives alone, batch by batch in arrival order:

* the representatives so far sit in sorted tables (the pigeonhole layouts of :mod:`pairs`:
  four 16-bit blocks with flip masks, or exact-match tables), kept as levels of doubling size
  so that adding to them costs a sort of each value about log2(n) times in all;
* the newest ones (up to ``_RECENT``) are compared with a batch directly;
* inside a batch, the pairs among its own values are found with :func:`pairs.near_pairs`, and
  only the values with an earlier neighbour in the batch are decided one by one.

Memory grows with the number of fingerprints, never with the pairs among them.

>>> import numpy as np
>>> sequential_leaders(np.array([0b0000, 0b0001, 0b0011, 0xFF << 40], dtype=np.uint64), 1).tolist()
[0, 0, 2, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import pairs as pair_search

_BATCH = 1024  # fingerprints decided at once
_RECENT = 1024  # the newest representatives, compared with each batch directly
_NONE = np.iinfo(np.int64).max
_POSITION_BITS = 40  # a candidate is (distance << 40) | position: the smallest is the nearest, then earliest


@dataclass(frozen=True)
class _Table:
    """One pigeonhole table: which bits make its key, and the keys a query probes (``flips``)."""

    mask: np.uint64  # the bits of the key (a block, or the blocks of an exact-match table)
    flips: np.ndarray  # key ^ flip for each flip: 0 alone for exact-match tables


def _tables(values: np.ndarray, k: int) -> list[_Table]:
    """The tables :mod:`pairs` would search ``values`` by at ``k``: two fingerprints within ``k``
    agree on a table's key up to one of its flips."""
    return [_Table(mask, flips) for mask, flips in pair_search.search_tables(np.unique(values), k)]


@dataclass
class _Level:
    """Representatives in sorted tables: per table, the masked values sorted, and their positions."""

    keys: list[np.ndarray]
    positions: list[np.ndarray]
    size: int

    @classmethod
    def of(cls, values: np.ndarray, positions: np.ndarray, tables: list[_Table]) -> _Level:
        keys, ordered = [], []
        for table in tables:
            masked = values & table.mask
            order = np.argsort(masked, kind="stable")
            keys.append(masked[order])
            ordered.append(positions[order])
        return cls(keys, ordered, len(values))

    def nearest(
        self, query: np.ndarray, values_of: np.ndarray, k: int, tables: list[_Table], alive: np.ndarray | None = None
    ) -> np.ndarray:
        """For each query value, the smallest (distance << 40 | position) of a representative here
        within ``k`` (and ``alive``, where given: a mask by position); ``_NONE`` where there is none."""
        best = np.full(len(query), _NONE, dtype=np.int64)
        for table, keys, positions in zip(tables, self.keys, self.positions):
            probes = ((query & table.mask)[:, None] ^ table.flips[None, :]).ravel()
            low = np.searchsorted(keys, probes, side="left")
            high = np.searchsorted(keys, probes, side="right")
            found = high - low
            if not found.any():
                continue
            asked = np.arange(len(probes)) // len(table.flips)
            for piece in pair_search.bounded_slices(found):  # a bounded number of candidates at once
                asking = np.repeat(asked[piece], found[piece])
                leader = positions[pair_search.expand_ranges(low[piece], found[piece])]
                distance = np.bitwise_count(query[asking] ^ values_of[leader]).astype(np.int64)
                near = distance <= k
                if alive is not None:
                    near &= alive[leader]
                np.minimum.at(best, asking[near], (distance[near] << _POSITION_BITS) | leader[near])
        return best


def max_pairs(count: int) -> int:
    """The pairs within k that a leader pass over ``count`` fingerprints holds at most (about 100
    bytes each while it runs), before it searches the representatives alone instead."""
    return max(1 << 22, 4 * count)


def sequential_leaders(values: np.ndarray, k: int, *, batch: int = _BATCH, recent: int = _RECENT) -> np.ndarray:
    """:func:`clusters.leaders` of ``values`` (distinct or not, in arrival order) at ``k``: the
    position of each one's representative, found without every pair within ``k`` (see the module).
    ``batch``: fingerprints decided at once; ``recent``: representatives compared directly."""
    values = np.ascontiguousarray(values, dtype=np.uint64)
    n = len(values)
    lead = np.arange(n, dtype=np.int64)
    if n == 0:
        return lead
    tables = _tables(values, k)
    levels: list[_Level] = []
    newest: list[int] = []  # positions of representatives not yet in a level
    size = batch
    for start in range(0, n, size):
        batch_values = values[start : start + size]
        best = np.full(len(batch_values), _NONE, dtype=np.int64)
        for level in levels:
            best = np.minimum(best, level.nearest(batch_values, values, k, tables))
        if newest:
            at = np.array(newest, dtype=np.int64)
            distance = np.bitwise_count(batch_values[:, None] ^ values[at][None, :]).astype(np.int64)
            code = np.where(distance <= k, (distance << _POSITION_BITS) | at[None, :], _NONE)
            best = np.minimum(best, code.min(axis=1))
        # Pairs inside the batch: a value with no earlier neighbour here is decided by the levels alone.
        left, right, distance = pair_search.near_pairs(batch_values, k)
        founded = best == _NONE
        if len(left):
            order = np.lexsort((left, distance, right))  # each value's earlier neighbours, nearest then earliest
            earlier, later, apart = left[order].tolist(), right[order], distance[order].tolist()
            starts = np.searchsorted(later, np.arange(len(batch_values))).tolist()
            ends = np.searchsorted(later, np.arange(len(batch_values)), side="right").tolist()
            best_list = best.tolist()
            for index in np.flatnonzero(np.array(ends) > np.array(starts)).tolist():
                chosen = best_list[index]
                for slot in range(starts[index], ends[index]):
                    neighbour = earlier[slot]
                    if founded[neighbour]:
                        chosen = min(chosen, (apart[slot] << _POSITION_BITS) | (start + neighbour))
                        break  # the nearest, earliest representative in the batch
                best_list[index] = chosen
                founded[index] = chosen == _NONE
            best = np.array(best_list, dtype=np.int64)
        here = start + np.arange(len(batch_values))
        lead[start : start + len(batch_values)] = np.where(founded, here, best & ((1 << _POSITION_BITS) - 1))
        newest.extend(here[founded].tolist())
        if len(newest) >= recent:
            levels = _merged(levels, np.array(newest, dtype=np.int64), values, tables)
            newest = []
    return lead


def sequential_leaders_keeping(
    values: np.ndarray, ranks: Sequence[Any], k: int, *, recent: int = _RECENT
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`keep.leaders_keeping` without every pair within ``k``: the same (cluster, head).

    A document joins the nearest current representative within ``k`` (ties: the one that
    arrived first), else founds a cluster; one ranked better (``ranks``, smaller first) than the
    representative it joined replaces it. Representatives no longer lie more than ``k`` apart
    and change as better copies arrive, so each document is decided on its own, against the
    representatives alive at its arrival: in the levels (the replaced ones masked out, and left
    out when levels merge) and among the newest. Slower than the pairs on ordinary data (a few
    hundred microseconds a document), so only for where the pairs would not fit in memory.
    """
    values = np.ascontiguousarray(values, dtype=np.uint64)
    n = len(values)
    cluster = np.arange(n, dtype=np.int64)
    head = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return cluster, head
    tables = _tables(values, k)
    levels: list[_Level] = []
    newest: list[int] = []
    alive = np.zeros(n, dtype=bool)
    heading = np.full(n, -1, dtype=np.int64)  # for a current representative: the founder of its cluster
    for position in range(n):
        query = values[position : position + 1]
        best = _NONE
        for level in levels:
            best = min(best, int(level.nearest(query, values, k, tables, alive)[0]))
        if newest:
            at = np.array(newest, dtype=np.int64)
            at = at[alive[at]]
            distance = np.bitwise_count(values[at] ^ query[0]).astype(np.int64)
            near = distance <= k
            if near.any():
                best = min(best, int(((distance[near] << _POSITION_BITS) | at[near]).min()))
        if best == _NONE:
            heading[position] = head[position] = position
        else:
            joined = best & ((1 << _POSITION_BITS) - 1)
            founder = int(heading[joined])
            cluster[position] = founder
            if not ranks[position] < ranks[joined]:
                continue
            alive[joined] = False
            heading[joined] = -1
            heading[position] = founder
            head[founder] = position
        alive[position] = True
        newest.append(position)
        if len(newest) >= recent:
            kept = np.array(newest, dtype=np.int64)
            levels = _merged(levels, kept[alive[kept]], values, tables, alive)
            newest = []
    return cluster, head


def _merged(
    levels: list[_Level],
    positions: np.ndarray,
    values: np.ndarray,
    tables: list[_Table],
    alive: np.ndarray | None = None,
) -> list[_Level]:
    """``levels`` with the representatives at ``positions`` added: a new level, merged with the
    levels no larger than it (a binary counter), so each representative is sorted again about
    log2(n / _RECENT) times. ``alive``: representatives replaced since are left out."""
    while levels and levels[-1].size <= len(positions):
        merged = _level_positions(levels.pop())
        if alive is not None:
            merged = merged[alive[merged]]
        positions = np.concatenate([merged, positions])
    return [*levels, _Level.of(values[positions], positions, tables)]


def _level_positions(level: _Level) -> np.ndarray:
    return np.sort(level.positions[0])
