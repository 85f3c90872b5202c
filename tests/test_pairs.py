"""All pairs in memory (simhash_store.pairs): every layout equals brute force. No database."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_store.pairs import _layout, _sorted_order, _unique_pairs, near_clusters, near_groups, near_pairs


def _brute_pairs(values: np.ndarray, max_distance: int) -> list[tuple[int, int, int]]:
    distance = np.bitwise_count(values[:, None] ^ values[None, :])
    left, right = np.nonzero(np.triu(distance <= max_distance, 1))
    return sorted(zip(left.tolist(), right.tolist(), distance[left, right].tolist()))


def _near_duplicate_values(seed: int, count: int, bits_flipped: int) -> np.ndarray:
    """Random values and copies of some of them with a few bits flipped (and some exact copies)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64, size=max(1, count // 4), dtype=np.uint64, endpoint=False)
    values = base[rng.integers(0, len(base), count)]
    for _ in range(bits_flipped):
        bit = rng.integers(0, 64, count).astype(np.uint64)
        values ^= np.where(rng.random(count) < 0.5, np.uint64(1) << bit, np.uint64(0))
    return values


@pytest.mark.parametrize("max_distance", range(0, 13))
def test_every_layout_finds_each_pair_once_as_brute_force(max_distance):
    values = np.unique(_near_duplicate_values(max_distance, 600, 8))
    expected = _brute_pairs(values, max_distance)
    assert expected or max_distance == 0
    # 0: four 16-bit blocks with flip masks; n > max_distance: n blocks of exact-match tables
    # (those of at most 40 tables: more only cost time here).
    layouts = [n for n in range(max_distance + 1, max_distance + 4) if comb(n, n - max_distance) <= 40]
    for layout in [0, *layouts]:
        left, right, distance = _unique_pairs(values, max_distance, layout)
        assert sorted(zip(left.tolist(), right.tolist(), distance.tolist())) == expected, layout


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=0, max_size=80),
    st.integers(min_value=0, max_value=64),
    st.integers(min_value=0, max_value=11),
)
def test_near_pairs_equal_brute_force_for_any_values(raw, flips, max_distance):
    # Some values repeated and some one bit apart, beside arbitrary ones.
    values = np.array(raw + raw[:5] + [v ^ (1 << (flips % 64)) for v in raw[:5]], dtype=np.uint64)
    left, right, distance = near_pairs(values, max_distance)
    assert list(zip(left.tolist(), right.tolist(), distance.tolist())) == sorted(
        _brute_pairs(values, max_distance), key=lambda p: (p[2], p[0], p[1])
    )


def test_near_groups_and_clusters_agree_with_brute_force_on_duplicated_values():
    values = _near_duplicate_values(7, 900, 3)
    values[::7] = values[0]  # one large group of identical values
    grouped = near_groups(values, 3)
    for g in range(len(grouped.sizes)):
        members = grouped.group(g)
        assert (values[members] == values[members[0]]).all() and list(members) == sorted(members)
    assert sum(grouped.sizes) == len(values) and len(set(values[grouped.members[grouped.starts]])) == len(grouped.sizes)
    between = {(int(a), int(b)) for a, b in zip(grouped.left, grouped.right)}
    distinct = values[grouped.members[grouped.starts]]
    assert between == {(a, b) for a, b, _ in _brute_pairs(distinct, 3)}

    labels = near_clusters(values, 3)
    # Connected components by brute force (union-find).
    parent = list(range(len(values)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b, _ in _brute_pairs(values, 3):
        parent[max(root(a), root(b))] = min(root(a), root(b))
    assert labels.tolist() == [root(i) for i in range(len(values))]


def test_sorted_order_is_a_stable_argsort_also_when_high_bits_tie():
    rng = np.random.default_rng(11)
    values = rng.integers(0, 2**64, size=5000, dtype=np.uint64, endpoint=False)
    for sample in (values, values & np.uint64(0xFFFF), values[rng.integers(0, 50, 5000)], values[:1], values[:0]):
        assert _sorted_order(sample).tolist() == np.argsort(sample, kind="stable").tolist()


def test_layout_moves_to_wider_exact_keys_as_the_store_grows():
    # Four 16-bit blocks suit about 65,000 values; past that exact-match tables with longer keys.
    assert _layout(10_000, 11) == 0
    assert _layout(10_000_000, 3) == 5
    assert all(_layout(count, 3) > 0 for count in (10**6, 10**7, 10**8))


def _skewed_values(seed: int, count: int, kind: str) -> np.ndarray:
    """Distinct values whose bits do not all tell them apart: the top 16 equal, or some held by one
    value in a hundred, or every other bit equal; the rest random, with near copies."""
    rng = np.random.default_rng(seed)
    values = _near_duplicate_values(seed, count, 6)
    if kind == "top equal":
        values = (values & np.uint64(2**48 - 1)) | np.uint64(0xABCD << 48)
    elif kind == "rarely set":
        rare = np.where(rng.random(count) < 0.01, np.uint64(0xFFFF << 40), np.uint64(0))
        values = (values & ~np.uint64(0xFFFF << 40)) | rare
    else:  # every other bit equal: 32 tell them apart, spread over every block
        values &= np.uint64(0x5555_5555_5555_5555)
    return np.unique(values)


@pytest.mark.parametrize("kind", ["top equal", "rarely set", "every other"])
@pytest.mark.parametrize("max_distance", [0, 2, 3, 5, 8, 11])
def test_blocks_of_the_bits_that_tell_values_apart_find_each_pair_once_as_brute_force(kind, max_distance):
    # Fingerprints whose top 16 bits were all equal (24 bits apart on the others) were each a
    # candidate of every other: 80,000 took 22 s. The blocks are now made of the bits that tell
    # them apart, in every layout.
    from simhash_store.pairs import _exact_pairs, _flip_pairs, _informative, _packed

    values = _skewed_values(max_distance, 700, kind)
    expected = _brute_pairs(values, max_distance)
    positions = _informative(values)
    assert positions is not None and len(positions) == {"top equal": 48, "rarely set": 48, "every other": 32}[kind]
    keys, bits = _packed(values, positions), len(positions)
    layouts = [n for n in range(max_distance + 1, min(bits, max_distance + 4)) if comb(n, n - max_distance) <= 40]
    found = [_flip_pairs(values, max_distance, None, keys, bits)]
    found += [_exact_pairs(values, max_distance, layout, None, keys, bits) for layout in layouts]
    found.append(_unique_pairs(values, max_distance))
    for left, right, distance in found:
        assert sorted(zip(left.tolist(), right.tolist(), distance.tolist())) == expected


def _runs_of_equal_bits(seed: int, count: int) -> np.ndarray:
    """Distinct values whose every bit splits them evenly, but whose 16-bit blocks take 16 values
    each: bit i is bit i // 4 of a random 16-bit number (runs of four equal bits)."""
    rng = np.random.default_rng(seed)
    numbers = rng.permutation(1 << 16)[:count].astype(np.uint64)
    values = np.zeros(count, dtype=np.uint64)
    for bit in range(64):
        values |= ((numbers >> np.uint64(bit // 4)) & np.uint64(1)) << np.uint64(bit)
    return values


@pytest.mark.parametrize("max_distance", [3, 8, 11])
def test_bits_that_take_few_values_together_are_dealt_to_blocks_that_tell_values_apart(max_distance):
    # Every block of the bits in their own order held 16 values, so each of 60,000 such values was
    # a candidate of thousands: `dups -k 3` of them took 10.6 s (0.22 s dealt). The bits are now
    # dealt so that each block tells them apart; the pairs are those of the brute force.
    from simhash_store.pairs import search_tables

    values = _runs_of_equal_bits(max_distance, 9000)
    for mask, _ in search_tables(values, max_distance):
        # a 16-bit block held 16 values with the bits in their own order
        assert len(np.unique(values & mask)) >= min(1000, 2 ** int(np.bitwise_count(mask)) // 2)
    assert sorted(zip(*(part.tolist() for part in _unique_pairs(values, max_distance)))) == _brute_pairs(
        values, max_distance
    )
    left, right, distance = near_pairs(values, max_distance)
    assert sorted(zip(left.tolist(), right.tolist(), distance.tolist())) == _brute_pairs(values, max_distance)


def test_the_search_tables_cover_only_the_bits_that_tell_values_apart():
    from simhash_store.pairs import search_tables

    values = _skewed_values(1, 5000, "top equal")
    for max_distance in (3, 11):
        for mask, flips in search_tables(values, max_distance):
            assert int(mask) >> 48 == 0 and all(int(flip) & ~int(mask) == 0 for flip in flips)
    ordinary = np.unique(_near_duplicate_values(1, 5000, 6))
    assert [int(mask) for mask, _ in search_tables(ordinary, 11)] == [0xFFFF << shift for shift in (48, 32, 16, 0)]
