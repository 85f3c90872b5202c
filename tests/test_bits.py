"""Fingerprint arithmetic: distances, the signed form PostgreSQL stores, blocks and hex. No database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simhash_store import InvalidFingerprintError
from simhash_store.bits import (
    block_radius,
    blocks,
    from_hex,
    from_signed,
    hamming,
    join_blocks,
    probes,
    similarity,
    to_hex,
    to_signed,
)

WIDTHS = [32, 64, 128]


def fingerprints(bits: int):
    return st.integers(min_value=0, max_value=2**bits - 1)


@pytest.mark.parametrize("bits", WIDTHS)
@given(data=st.data())
def test_distance_is_a_metric_in_range(bits, data):
    a, b, c = (data.draw(fingerprints(bits)) for _ in range(3))
    assert hamming(a, a, bits) == 0
    assert hamming(a, b, bits) == hamming(b, a, bits)
    assert 0 <= hamming(a, b, bits) <= bits
    assert (hamming(a, b, bits) == 0) == (a == b)
    assert hamming(a, c, bits) <= hamming(a, b, bits) + hamming(b, c, bits)


@pytest.mark.parametrize("bits", WIDTHS)
@given(data=st.data())
def test_similarity_runs_from_complement_to_identity(bits, data):
    a, b = data.draw(fingerprints(bits)), data.draw(fingerprints(bits))
    complement = a ^ (2**bits - 1)
    assert similarity(a, a, bits) == 1.0
    assert similarity(a, complement, bits) == 0.0
    assert 0.0 <= similarity(a, b, bits) <= 1.0
    assert similarity(a, b, bits) == similarity(b, a, bits)
    assert similarity(a, b, bits) == 1 - hamming(a, b, bits) / bits


@pytest.mark.parametrize("bits", WIDTHS)
def test_values_outside_the_width_are_refused(bits):
    for wrong in (-1, 2**bits, True, 1.0, "0"):
        with pytest.raises(InvalidFingerprintError):
            hamming(wrong, 0, bits)


@pytest.mark.parametrize(
    ("unsigned", "signed"),
    [(0, 0), (2**63 - 1, 2**63 - 1), (2**63, -(2**63)), (2**64 - 1, -1)],
)
def test_twos_complement_at_the_edges(unsigned, signed):
    assert to_signed(unsigned) == signed
    assert from_signed(signed) == unsigned


@given(fingerprints(64))
def test_signed_round_trip_keeps_every_fingerprint_and_the_bigint_range(value):
    signed = to_signed(value)
    assert -(2**63) <= signed < 2**63
    assert from_signed(signed) == value


def test_signed_conversion_refuses_what_a_bigint_cannot_hold():
    for wrong in (2**64, -1):
        with pytest.raises(InvalidFingerprintError):
            to_signed(wrong)
    for wrong in (2**63, -(2**63) - 1):
        with pytest.raises(InvalidFingerprintError):
            from_signed(wrong)


def test_blocks_are_the_four_16_bit_parts_most_significant_first():
    assert blocks(0x0123456789ABCDEF) == (0x0123, 0x4567, 0x89AB, 0xCDEF)
    assert blocks(0) == (0, 0, 0, 0)
    assert blocks(2**64 - 1) == (0xFFFF,) * 4


@given(fingerprints(64))
def test_join_blocks_undoes_blocks(value):
    assert join_blocks(blocks(value)) == value


@given(fingerprints(64), st.sets(st.integers(min_value=0, max_value=63), max_size=15), st.data())
def test_pigeonhole_some_block_is_within_the_probe_radius(a, flipped, data):
    """What the store's index relies on: a fingerprint within max_distance has some block
    within block_radius bits of the query's, so probing those block values finds it."""
    b = a ^ sum(1 << position for position in flipped)
    max_distance = data.draw(st.integers(min_value=len(flipped), max_value=15))
    radius = block_radius(max_distance)
    assert any(y in probes(x, radius) for x, y in zip(blocks(a), blocks(b)))


def test_probe_counts_grow_as_documented():
    assert [len(probes(0, radius)) for radius in range(4)] == [1, 17, 137, 697]


@pytest.mark.parametrize("bits", WIDTHS)
@given(data=st.data())
def test_hex_round_trip_has_fixed_width(bits, data):
    value = data.draw(fingerprints(bits))
    text = to_hex(value, bits)
    assert len(text) == bits // 4
    assert from_hex(text, bits) == value
    assert from_hex("0x" + text.upper(), bits) == value


def test_hex_of_the_wrong_length_or_alphabet_is_refused():
    for wrong in ("123", "g" * 16, "1" * 17, ""):
        with pytest.raises(InvalidFingerprintError):
            from_hex(wrong)
