"""Fingerprint arithmetic: distance, similarity and the representations at the edges.

A fingerprint is an unsigned integer of 32, 64 or 128 bits. PostgreSQL keeps the
64-bit ones in a signed ``bigint`` (two's complement) and indexes four 16-bit
blocks, most significant first:

>>> to_signed(2**64 - 1)
-1
>>> blocks(0x0123456789ABCDEF)
(291, 17767, 35243, 52719)
"""

from __future__ import annotations

from functools import cache
from itertools import combinations

from .errors import InvalidFingerprintError
from .validation import validate_distance, validate_fingerprint

BLOCK_BITS = 16
BLOCK_COUNT = 4
_U64 = 1 << 64
_I64_MIN = -(1 << 63)


def hamming(a: int, b: int, bits: int = 64) -> int:
    """Number of bit positions in which two fingerprints differ."""
    return (validate_fingerprint(a, bits) ^ validate_fingerprint(b, bits)).bit_count()


def similarity(a: int, b: int, bits: int = 64) -> float:
    """``1 - hamming(a, b) / bits``: 1.0 for equal fingerprints, 0.0 for complements."""
    return 1.0 - hamming(a, b, bits) / bits


def to_signed(value: int) -> int:
    """The unsigned 64-bit fingerprint as PostgreSQL's signed bigint (two's complement)."""
    value = validate_fingerprint(value, 64)
    return value - _U64 if value >= 1 << 63 else value


def from_signed(value: int) -> int:
    """The unsigned 64-bit fingerprint from a signed bigint."""
    if not isinstance(value, int) or not _I64_MIN <= value < 1 << 63:
        raise InvalidFingerprintError(f"a signed bigint lies in [-2**63, 2**63), not {value!r}")
    return value % _U64


def to_hex(value: int, bits: int = 64) -> str:
    """Fixed-width lower-case hex: 16 digits for 64 bits."""
    return format(validate_fingerprint(value, bits), f"0{bits // 4}x")


def from_hex(text: str, bits: int = 64) -> int:
    """Parse exactly ``bits // 4`` hex digits (an optional ``0x`` prefix is accepted)."""
    digits = text.strip()
    if digits[:2].lower() == "0x":
        digits = digits[2:]
    if len(digits) != bits // 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise InvalidFingerprintError(f"expected {bits // 4} hex digits for a {bits}-bit fingerprint, got {text!r}")
    return int(digits, 16)


def blocks(value: int) -> tuple[int, int, int, int]:
    """The four 16-bit blocks of a 64-bit fingerprint, most significant first."""
    value = validate_fingerprint(value, 64)
    return tuple((value >> shift) & 0xFFFF for shift in (48, 32, 16, 0))  # type: ignore[return-value]


def join_blocks(parts: tuple[int, int, int, int] | list[int]) -> int:
    """Inverse of :func:`blocks`."""
    if len(parts) != BLOCK_COUNT or any(not 0 <= p <= 0xFFFF for p in parts):
        raise InvalidFingerprintError(f"expected four 16-bit blocks, got {parts!r}")
    value = 0
    for part in parts:
        value = (value << BLOCK_BITS) | part
    return value


def block_radius(max_distance: int) -> int:
    """Pigeonhole: within ``max_distance`` bits, some 16-bit block is within this many bits."""
    return validate_distance(max_distance) // BLOCK_COUNT


@cache
def flip_masks(radius: int) -> tuple[int, ...]:
    """All 16-bit masks with at most ``radius`` bits set (1, 17, 137, 697, ... of them)."""
    masks = [0]
    for ones in range(1, min(radius, BLOCK_BITS) + 1):
        for positions in combinations(range(BLOCK_BITS), ones):
            masks.append(sum(1 << p for p in positions))
    return tuple(masks)


def probes(block: int, radius: int) -> list[int]:
    """Every 16-bit value within ``radius`` bits of ``block`` (multi-index hashing)."""
    return [block ^ mask for mask in flip_masks(radius)]
