"""All near-duplicate pairs among many 64-bit fingerprints, exactly, with numpy. Pure: no I/O.

Two layouts of the same pigeonhole, chosen by an estimated cost (:func:`_layout`):

* **four 16-bit blocks** (the index's own): two fingerprints within ``k`` bits have a block
  within ``k // 4`` bits. Per block, fingerprints are sorted by its value; equal blocks are
  pairs inside runs of the sorted order, blocks that differ by a flip mask are found by looking
  up the run of ``block ^ mask``. A bucket holds n / 65,536 values, so the candidates grow with
  n²: right for small stores and large k.
* **exact-match tables**: cut into m > k blocks, two fingerprints within ``k`` bits are equal
  on at least m - k of them; each such subset of blocks is one table whose key (about
  64 (m - k) / m bits, near log2(n)) is sorted with the position packed beside it in one
  uint64. Candidates stay a few per value: linear in n, for k up to about 5.

In both, a pair is kept only from the first block or table that finds it, so nothing is
reported twice, and every candidate is verified on all 64 bits. Blocks are made of the bits that
tell the values apart (:func:`_informative`): a bit nearly all of them share would only make one
bucket of a block, and a pair within ``k`` differs in at most ``k`` of the other bits too; where
a block of them would still crowd the values (bits that take few values together), they are dealt
to the blocks so that each tells the values apart (:func:`_block_positions`). Identical fingerprints are
grouped first, so a heavily duplicated corpus does not blow up the candidate lists.

>>> import numpy as np
>>> left, right, distance = near_pairs(np.array([0b1011, 0b1001, 0xFFFF << 40], dtype=np.uint64), 3)
>>> list(zip(left.tolist(), right.tolist(), distance.tolist()))
[(0, 1, 1)]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from .bits import flip_masks


class TooManyPairs(Exception):
    """More pairs within the distance than the caller's ``max_pairs``: raised before they are all
    held, for a caller that has a way without every pair (:mod:`leaders`). Never leaves the library."""


def _counted(found: list[np.ndarray], max_pairs: int | None, total: int) -> int:
    """``total`` with the newest found pairs added; :class:`TooManyPairs` past ``max_pairs``."""
    total += len(found[-1])
    if max_pairs is not None and total > max_pairs:
        raise TooManyPairs(f"more than {max_pairs} pairs")
    return total


_CHUNK = 1 << 21  # candidate pairs handled at once: bounds memory at a few hundred MB


def _block(values: np.ndarray, shift: int, width: int = 16) -> np.ndarray:
    keys: np.ndarray = ((values >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.uint16)
    return keys


# A bit whose less common value fewer than this share of the values hold tells few of them apart:
# a block of such bits is one bucket (fingerprints whose top 16 bits are all equal, 24 bits apart
# on the others, were each a candidate of every other). Blocks are made of the other bits only:
# a pair within k differs in at most k of them too, so the pigeonhole holds over them alone.
_FEW = 1 / 64
_SAMPLE = 1 << 18  # values the share of each bit is counted over


def _informative(values: np.ndarray) -> list[int] | None:
    """The bit positions (most significant first) that tell the values apart; None when all 64 do.
    Counted over a sample: which bits make the blocks changes the work, never the pairs."""
    sample = values[:: max(1, len(values) // _SAMPLE)]
    if len(sample) < 64:
        return None
    ones = np.array([np.count_nonzero(sample & np.uint64(1 << bit)) for bit in range(64)])
    telling = np.minimum(ones, len(sample) - ones) >= len(sample) * _FEW
    if telling.all():
        return None
    return [bit for bit in range(63, -1, -1) if telling[bit]]


# Blocks of the bits in their own order are kept unless, on a sample, one of them puts more than
# this many times the pairs of values in one bucket that random values would (and more than a few
# per value): then the bits are dealt to the blocks so that each block tells the sample apart.
_CROWDED = 4.0
_ORDER_SAMPLE = 1 << 12
_ORDER_FROM = 1 << 13  # fewer values than this cost little however crowded (33M candidates at most)


def _collisions(groups: np.ndarray) -> int:
    """Pairs of sample values that share a bucket, given each one's bucket number."""
    sizes = np.bincount(groups).astype(np.int64)
    return int((sizes * (sizes - 1) // 2).sum())


def _bucket_numbers(columns: np.ndarray, chosen: list[int]) -> np.ndarray:
    """Each sample row's bucket under the key of the ``chosen`` columns of its bits, numbered from 0."""
    key = np.zeros(len(columns), dtype=np.uint64)
    for column in chosen:
        key = (key << np.uint64(1)) | columns[:, column].astype(np.uint64)
    numbers: np.ndarray = np.unique(key, return_inverse=True)[1].ravel()
    return numbers


def _dealt(columns: np.ndarray, widths: list[int]) -> list[int]:
    """Columns dealt to blocks of ``widths``, greedily and in turns (so that no block is left only
    what the others did not want): each block takes, while it has room, the column that leaves
    the fewest pairs of sample rows in one of its buckets. The blocks' columns, block after block."""
    remaining = list(range(columns.shape[1]))
    taken: list[list[int]] = [[] for _ in widths]
    groups = [np.zeros(len(columns), dtype=np.int64) for _ in widths]
    while remaining:
        for block, width in enumerate(widths):
            if len(taken[block]) == width or not remaining:
                continue
            size = int(groups[block].max()) + 1
            totals = np.bincount(groups[block], minlength=size).astype(np.float64)
            best, best_pairs = 0, np.inf
            for slot, column in enumerate(remaining):
                ones = np.bincount(groups[block], weights=columns[:, column], minlength=size)
                pairs = float((ones * ones + (totals - ones) * (totals - ones)).sum())
                if pairs < best_pairs:
                    best, best_pairs = slot, pairs
            column = remaining.pop(best)
            taken[block].append(column)
            groups[block] = np.unique(groups[block] * 2 + columns[:, column], return_inverse=True)[1].ravel()
    return [column for block in taken for column in block]


def _block_positions(values: np.ndarray, max_distance: int) -> list[int] | None:
    """The bit positions the blocks of :func:`_unique_pairs` and :func:`search_tables` are cut from,
    in order (the first block takes the first ones); None for all 64 in their own order.

    The bits that tell the values apart (:func:`_informative`), in their own order, unless a block
    of them crowds the values of a sample into few buckets (bits that each split the values but
    take few values together: a block of four runs of four equal bits holds 16 values): then they
    are dealt to the blocks so that each block tells the sample apart (:func:`_dealt`). Any order
    of any subset of the bits a pair within k differs in at most k of keeps the search exact;
    the order changes the work, never the pairs."""
    positions = _informative(values)
    if len(values) < _ORDER_FROM or positions == []:
        return positions
    ordered = positions or list(range(63, -1, -1))
    bits = len(ordered)
    layout = _layout(len(values), max_distance, bits)
    widths = [width for _, width in _block_spans(-(-bits // 16) if layout == 0 else layout, bits)]
    sample = values[:: max(1, len(values) // _ORDER_SAMPLE)]
    columns = ((sample[:, None] >> np.array(ordered, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(np.int64)

    def crowding(order: list[int]) -> list[int]:  # pairs of the sample in one bucket, per block
        starts = np.cumsum([0, *widths]).tolist()
        return [_collisions(_bucket_numbers(columns, order[a:b])) for a, b in zip(starts, starts[1:])]

    count = len(sample)
    own = crowding(list(range(bits)))
    if all(found <= _CROWDED * count * (count - 1) / 2 / 2.0**width + count for found, width in zip(own, widths)):
        return positions
    dealt = _dealt(columns, widths)
    if 2 * sum(crowding(dealt)) >= sum(own):  # near copies crowd every order alike: keep the bits' own
        return positions
    return [ordered[column] for column in dealt]


def _packed(values: np.ndarray, positions: list[int]) -> np.ndarray:
    """The bits of ``values`` at ``positions`` side by side in the low bits, the first the most significant."""
    packed = np.zeros(len(values), dtype=np.uint64)
    one = np.uint64(1)
    for position in positions:
        packed <<= one
        packed |= (values >> np.uint64(position)) & one
    return packed


def _flips(radius: int, width: int) -> list[int]:
    """The flip masks of a block ``width`` bits wide (up to 16) with at most ``radius`` bits set."""
    return [mask for mask in flip_masks(radius) if mask < 1 << width]


def expand_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenate the ranges [start, start + count) without a Python loop."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def bounded_slices(counts: np.ndarray) -> list[slice]:
    """Slices of sources whose candidate counts add up to about ``_CHUNK`` each."""
    total = np.cumsum(counts)
    if len(total) == 0:
        return []
    cuts = np.searchsorted(total, np.arange(_CHUNK, int(total[-1]), _CHUNK), "right")
    edges = [0, *sorted(set(int(c) for c in cuts)), len(counts)]
    return [slice(lo, hi) for lo, hi in zip(edges, edges[1:]) if hi > lo]


def _same_key_candidates(sorted_keys: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pairs (p, p + offset) of sorted positions with equal keys, one offset at a time.

    Runs of equal keys are contiguous once sorted, so every pair inside a run is some
    p and p + offset; positions whose run ends before p + offset drop out as offset grows.
    """
    alive = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    offset = 1
    while len(alive):
        yield alive, alive + offset
        offset += 1
        alive = alive[alive + offset < len(sorted_keys)]
        alive = alive[sorted_keys[alive + offset] == sorted_keys[alive]]


def _flipped_key_candidates(
    sorted_keys: np.ndarray, starts: np.ndarray, counts: np.ndarray, mask: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pairs of sorted positions whose keys differ by ``mask``, from the side with the smaller key.

    ``starts`` and ``counts`` locate each key's run in ``sorted_keys``: a lookup, not a search.
    """
    sources = np.flatnonzero((sorted_keys ^ np.uint16(mask)) > sorted_keys)
    targets = sorted_keys[sources] ^ np.uint16(mask)
    lo, found = starts[targets], counts[targets]
    for piece in bounded_slices(found):
        yield np.repeat(sources[piece], found[piece]), expand_ranges(lo[piece], found[piece])


def _flip_pairs(
    values: np.ndarray,
    max_distance: int,
    max_pairs: int | None = None,
    keys: np.ndarray | None = None,
    width: int = 64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (a < b) of distinct values within ``max_distance``: blocks of 16 bits (four, over the
    64 bits of ``values``; over the ``width`` low bits of ``keys`` where given, as many as they
    fill), flip masks. Candidates are verified on ``values``."""
    keys = values if keys is None else keys
    spans = _block_spans(-(-width // 16), width)
    radius = max_distance // len(spans)
    total = 0
    limit = np.uint8(max_distance)
    found_left, found_right, found_distance = [], [], []
    for block_number, (shift, bits) in enumerate(spans):
        block_keys = _block(keys, shift, bits)
        order = np.argsort(block_keys, kind="stable")  # a radix sort for 16-bit keys
        sorted_keys, sorted_values, sorted_packed = block_keys[order], values[order], keys[order]
        candidates = [_same_key_candidates(sorted_keys)]
        if radius:
            counts = np.bincount(sorted_keys, minlength=1 << bits)
            starts = np.cumsum(counts) - counts
            candidates += [_flipped_key_candidates(sorted_keys, starts, counts, m) for m in _flips(radius, bits)[1:]]
        for source in candidates:
            for left, right in source:
                distance = np.bitwise_count(sorted_values[left] ^ sorted_values[right])
                keep = np.flatnonzero(distance <= limit)
                left, right, distance = left[keep], right[keep], distance[keep]
                apart = sorted_packed[left] ^ sorted_packed[right]
                new = np.ones(len(keep), dtype=bool)
                for earlier, earlier_bits in spans[:block_number]:
                    # Found by an earlier block already: drop it here.
                    mask = np.uint64((1 << earlier_bits) - 1)
                    new &= np.bitwise_count((apart >> np.uint64(earlier)) & mask) > radius
                left, right = order[left[new]], order[right[new]]
                found_left.append(np.minimum(left, right))
                found_right.append(np.maximum(left, right))
                found_distance.append(distance[new].astype(np.int64))
                total = _counted(found_distance, max_pairs, total)
    return _joined(found_left, found_right, found_distance)


def _joined(
    lefts: list[np.ndarray], rights: list[np.ndarray], distances: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not lefts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(lefts), np.concatenate(rights), np.concatenate(distances)


def _block_spans(count: int, bits: int = 64) -> list[tuple[int, int]]:
    """``count`` blocks of ``bits`` bits as (shift, width), widths as even as possible, most significant first."""
    widths = [bits // count + (1 if i < bits % count else 0) for i in range(count)]
    spans, top = [], bits
    for width in widths:
        top -= width
        spans.append((top, width))
    return spans


def _exact_tables(max_distance: int, block_count: int, bits: int = 64) -> list[list[tuple[int, int]]]:
    """Pigeonhole on ``block_count`` blocks (of ``bits`` bits): a pair within ``max_distance`` bits is
    equal on at least ``block_count - max_distance`` of them, so every such subset of blocks is one table."""
    spans = _block_spans(block_count, bits)
    return [[spans[i] for i in chosen] for chosen in combinations(range(block_count), block_count - max_distance)]


def _table_mask(table: list[tuple[int, int]]) -> np.uint64:
    mask: np.uint64 = np.uint64(sum(((1 << width) - 1) << shift for shift, width in table))
    return mask


def _exact_pairs(
    values: np.ndarray,
    max_distance: int,
    block_count: int,
    max_pairs: int | None = None,
    keys: np.ndarray | None = None,
    width: int = 64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (a < b) of distinct values within ``max_distance``, each found once, by exact-match tables
    (over the 64 bits of ``values``, or the ``width`` low bits of ``keys`` where given).

    Per table, the chosen blocks' bits are packed into one key (cut to the bits left beside the
    position) and sorted with the position as one uint64: pairs are the runs of equal keys. A pair
    is kept by the first table whose blocks it matches exactly, so nothing is reported twice.
    Candidates are verified on ``values``.
    """
    keys = values if keys is None else keys
    limit = np.uint8(max_distance)
    count = len(values)
    position_bits = max(1, (count - 1).bit_length())
    positions = np.arange(count, dtype=np.uint64)
    tables = _exact_tables(max_distance, block_count, width)
    masks = [_table_mask(table) for table in tables]
    found_left, found_right, found_distance = [], [], []
    total = 0
    for number, table in enumerate(tables):
        key = np.zeros(count, dtype=np.uint64)
        key_bits = 0
        for shift, bits in table:
            key <<= np.uint64(bits)
            key |= (keys >> np.uint64(shift)) & np.uint64((1 << bits) - 1)
            key_bits += bits
        if key_bits > 64 - position_bits:  # a shorter key only adds candidates; all are verified
            key >>= np.uint64(key_bits - (64 - position_bits))
        key <<= np.uint64(position_bits)
        key |= positions
        key.sort()
        order = (key & np.uint64((1 << position_bits) - 1)).astype(np.int64)
        key >>= np.uint64(position_bits)
        for left, right in _same_key_candidates(key):
            left, right = order[left], order[right]
            distance = np.bitwise_count(values[left] ^ values[right])
            apart = keys[left] ^ keys[right]
            new = (distance <= limit) & ((apart & masks[number]) == 0)
            for earlier in masks[:number]:
                new &= (apart & earlier) != 0
            keep = np.flatnonzero(new)
            left, right = left[keep], right[keep]
            found_left.append(np.minimum(left, right))
            found_right.append(np.maximum(left, right))
            found_distance.append(distance[keep].astype(np.int64))
            total = _counted(found_distance, max_pairs, total)
    return _joined(found_left, found_right, found_distance)


def _exact_cost(count: int, max_distance: int, block_count: int, bits: int = 64) -> float:
    """Estimated seconds of :func:`_exact_pairs` on random values: a sort per table, and candidates."""
    tables = comb(block_count, block_count - max_distance)
    key_bits = min(bits * (block_count - max_distance) / block_count, 64 - max(1, (count - 1).bit_length()))
    return tables * (count * 70e-9 + count * count / 2 ** (key_bits + 1) * 40e-9)


def _flip_cost(count: int, max_distance: int, bits: int = 64) -> float:
    """Estimated seconds of :func:`_flip_pairs` on random values: probes and candidates."""
    spans = _block_spans(-(-bits // 16), bits)
    width = spans[-1][1]
    probes = len(_flips(max_distance // len(spans), width))
    return len(spans) * (count * 150e-9 + probes * (count * 20e-9 + count * count / 2.0 ** (width + 1) * 40e-9))


def _layout(count: int, max_distance: int, bits: int = 64) -> int:
    """The cheaper layout: 0 for 16-bit blocks with flips, else the number of exact-match blocks.

    Four 16-bit blocks suit about 65,000 values per block value; past that their candidates grow
    with the square of the count, while exact-match tables with keys near log2(count) bits stay
    linear (at most 20 tables are considered).
    """
    best, cost = _cheapest_exact(count, max_distance, bits)
    return best if best is not None and cost < _flip_cost(count, max_distance, bits) else 0


def exact_tables(count: int, max_distance: int) -> list[list[tuple[int, int]]] | None:
    """The tables (each a list of (shift, width) blocks) of the cheapest exact-match layout for
    ``count`` values at ``max_distance`` (at most 20 tables), or None when none has so few. Two
    values within the distance are equal on every block of at least one table."""
    best, _ = _cheapest_exact(count, max_distance)
    return None if best is None else _exact_tables(max_distance, best)


def _cheapest_exact(count: int, max_distance: int, bits: int = 64) -> tuple[int | None, float]:
    """The number of blocks of the cheapest exact-match layout of at most 20 tables, and its
    cost; (None, inf) when no layout has so few tables."""
    best, best_cost = None, float("inf")
    for block_count in range(max_distance + 1, bits):
        if comb(block_count, block_count - max_distance) > 20:
            break
        cost = _exact_cost(count, max_distance, block_count, bits)
        if cost < best_cost:
            best, best_cost = block_count, cost
    return best, best_cost


def exact_layout_is_cheaper(count: int, max_distance: int) -> bool:
    """Whether :func:`near_pairs` would use exact-match tables for ``count`` values: the tables'
    keys are long enough at this size for few candidates per value (linear), as four 16-bit
    blocks are not."""
    return _layout(count, max_distance) != 0


def search_tables(values: np.ndarray, max_distance: int) -> list[tuple[np.uint64, np.ndarray]]:
    """The tables :func:`near_pairs` would search ``values`` by at ``max_distance``, in the values'
    own bits: for each, the bits of its key and the flips a query's key is probed with (0 alone for
    exact-match tables). Two values within the distance have keys equal up to one of the flips."""
    positions = _block_positions(values, max_distance) or list(range(63, -1, -1))
    bits = len(positions)

    def deposit(packed: int) -> int:  # bit i of the packed key is the fingerprint's bit positions[bits - 1 - i]
        return sum(1 << positions[bits - 1 - i] for i in range(bits) if packed >> i & 1)

    layout = _layout(len(values), max_distance, bits)
    if layout == 0:
        spans = _block_spans(-(-bits // 16), bits)
        radius = max_distance // len(spans)
        return [
            (
                np.uint64(deposit(((1 << width) - 1) << shift)),
                np.array([deposit(flip << shift) for flip in _flips(radius, width)], dtype=np.uint64),
            )
            for shift, width in spans
        ]
    zero = np.zeros(1, dtype=np.uint64)
    return [(np.uint64(deposit(int(_table_mask(table)))), zero) for table in _exact_tables(max_distance, layout, bits)]


def table_mask(table: list[tuple[int, int]]) -> np.uint64:
    """The bits a table's blocks cover."""
    return _table_mask(table)


def same_key_candidates(sorted_keys: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every pair of positions holding equal keys in sorted ``sorted_keys``, as (p, p + offset) arrays."""
    return _same_key_candidates(sorted_keys)


def _unique_pairs(
    values: np.ndarray, max_distance: int, layout: int | None = None, max_pairs: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (a < b) of distinct values within ``max_distance``, each found once.

    ``layout`` (chosen by cost when None): 0 for four 16-bit blocks with flip masks, else the
    number of blocks of exact-match tables. ``max_pairs``: :class:`TooManyPairs` past that many.
    Chosen by cost, the blocks are made of the bits that tell the values apart, dealt to the blocks
    so that each tells them apart (:func:`_block_positions`).
    """
    if layout is not None:
        if layout == 0:
            return _flip_pairs(values, max_distance, max_pairs)
        return _exact_pairs(values, max_distance, layout, max_pairs)
    positions = _block_positions(values, max_distance)
    if not positions:  # every bit tells them apart (or, in the sample, none does): all 64
        keys, bits = values, 64
    else:
        keys, bits = _packed(values, positions), len(positions)
    layout = _layout(len(values), max_distance, bits)
    if layout == 0:
        return _flip_pairs(values, max_distance, max_pairs, keys, bits)
    return _exact_pairs(values, max_distance, layout, max_pairs, keys, bits)


def distinct_pairs(
    values: np.ndarray, max_distance: int, max_pairs: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (a < b) of positions of distinct ``values`` within ``max_distance``, each once, in no
    particular order. ``max_pairs``: :class:`TooManyPairs` as soon as more are found."""
    return _unique_pairs(np.ascontiguousarray(values, dtype=np.uint64), max_distance, max_pairs=max_pairs)


def _sorted_order(fingerprints: np.ndarray) -> np.ndarray:
    """A stable argsort of uint64 values, by sorting (high bits, position) packed in one uint64.

    numpy sorts plain uint64 several times faster than it argsorts them; only the values whose
    high bits tie with another's are argsorted again, on their own.
    """
    count = len(fingerprints)
    position_bits = max(1, (count - 1).bit_length())
    low = np.uint64((1 << position_bits) - 1)
    packed = (fingerprints >> np.uint64(position_bits)) << np.uint64(position_bits)
    packed |= np.arange(count, dtype=np.uint64)
    packed.sort()
    order = (packed & low).astype(np.int64)
    packed >>= np.uint64(position_bits)
    tied = np.zeros(count, dtype=bool)
    same = packed[1:] == packed[:-1]
    tied[1:] |= same
    tied[:-1] |= same
    slots = np.flatnonzero(tied)
    if len(slots):
        members = order[slots]
        order[slots] = members[np.argsort(fingerprints[members], kind="stable")]
    result: np.ndarray = order
    return result


def _groups(fingerprints: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct values, and for each the positions holding it (as order[start:start+size])."""
    order = _sorted_order(fingerprints)
    ordered = fingerprints[order]
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, len(ordered)))
    return ordered[starts], order, starts, sizes


@dataclass(frozen=True)
class NearGroups:
    """Near-duplicates among positions, without materialising the pairs inside identical groups.

    Group ``g`` holds the positions ``members[starts[g] : starts[g] + sizes[g]]`` (ascending), all
    with one fingerprint; ``left``, ``right`` and ``distance`` are the pairs of distinct groups
    within the distance, ordered by distance, then left, then right group.
    """

    members: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    left: np.ndarray
    right: np.ndarray
    distance: np.ndarray

    def group(self, g: int) -> np.ndarray:
        return self.members[self.starts[g] : self.starts[g] + self.sizes[g]]


def near_groups(fingerprints: np.ndarray, max_distance: int, max_pairs: int | None = None) -> NearGroups:
    """Identical fingerprints as groups, and pairs of groups within ``max_distance`` bits (exact).

    Memory grows with the number of positions and of distinct near pairs, never with the
    square of a group: 100,000 copies of one fingerprint are one group, not 5e9 pairs.
    ``max_pairs``: :class:`TooManyPairs` past that many pairs of groups.
    """
    fingerprints = np.ascontiguousarray(fingerprints, dtype=np.uint64)
    values, order, starts, sizes = _groups(fingerprints)
    a, b, distance = _unique_pairs(values, max_distance, max_pairs=max_pairs)
    ranking = np.lexsort((b, a, distance))
    return NearGroups(order, starts, sizes, a[ranking], b[ranking], distance[ranking])


def near_pairs(
    fingerprints: np.ndarray, max_distance: int, max_pairs: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of positions ``(i, j)``, ``i < j``, whose fingerprints differ in at most ``max_distance`` bits.

    Returns three arrays (left positions, right positions, distances), ordered by
    distance, then left, then right. Materialises every pair, so n identical
    fingerprints cost n² / 2 of them: :func:`near_groups` does not. ``max_pairs``:
    :class:`TooManyPairs`, before they are made, where there are more.
    """
    grouped = near_groups(fingerprints, max_distance, max_pairs)
    order, starts, sizes = grouped.members, grouped.starts, grouped.sizes
    a, b, distance = grouped.left, grouped.right, grouped.distance
    if max_pairs is not None:
        count = int((sizes * (sizes - 1) // 2).sum()) + int((sizes[a] * sizes[b]).sum())
        if count > max_pairs:
            raise TooManyPairs(f"more than {max_pairs} pairs")

    # Pairs inside a group of identical fingerprints (distance 0).
    lefts, rights, distances = [], [], []
    for size in np.unique(sizes[sizes > 1]):
        group_starts = starts[sizes == size]
        i, j = np.triu_indices(int(size), 1)
        lefts.append(order[(group_starts[:, None] + i[None, :]).ravel()])
        rights.append(order[(group_starts[:, None] + j[None, :]).ravel()])
        distances.append(np.zeros(lefts[-1].shape, dtype=np.int64))

    # Pairs between groups: every member of one with every member of the other.
    pair_counts = sizes[a] * sizes[b]
    if len(a):
        pair_index = np.repeat(np.arange(len(a)), pair_counts)
        within = expand_ranges(np.zeros(len(a), dtype=np.int64), pair_counts)
        size_b = sizes[b][pair_index]
        lefts.append(order[starts[a][pair_index] + within // size_b])
        rights.append(order[starts[b][pair_index] + within % size_b])
        distances.append(distance[pair_index])

    if not lefts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    left, right, dist = np.concatenate(lefts), np.concatenate(rights), np.concatenate(distances)
    swap = left > right
    left[swap], right[swap] = right[swap], left[swap].copy()
    ranking = np.lexsort((right, left, dist))
    return left[ranking], right[ranking], dist[ranking]


def near_clusters(fingerprints: np.ndarray, max_distance: int) -> np.ndarray:
    """A cluster label per position: connected groups under "within ``max_distance`` bits".

    Labels are the smallest position in each cluster, so singletons label themselves.
    """
    fingerprints = np.ascontiguousarray(fingerprints, dtype=np.uint64)
    values, order, _, sizes = _groups(fingerprints)
    inverse = np.empty(len(fingerprints), dtype=np.int64)
    inverse[order] = np.repeat(np.arange(len(values)), sizes)
    a, b, _ = _unique_pairs(values, max_distance)
    labels = np.arange(len(values), dtype=np.int64)
    # Min-label propagation with pointer jumping: converges in a few rounds.
    while len(a):
        smaller = np.minimum(labels[a], labels[b])
        before = labels.copy()
        np.minimum.at(labels, a, smaller)
        np.minimum.at(labels, b, smaller)
        labels = labels[labels]
        if np.array_equal(labels, before):
            break
    # Relabel each cluster by the smallest original position in it.
    positions = np.arange(len(fingerprints), dtype=np.int64)
    cluster_of_position = labels[inverse]
    first_position = np.full(len(values), len(fingerprints), dtype=np.int64)
    np.minimum.at(first_position, cluster_of_position, positions)
    return first_position[cluster_of_position]
