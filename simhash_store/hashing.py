"""Stable feature hashes: the same value in every process, on every machine.

Python's built-in ``hash()`` is salted per process, so it is never used. The default
is XXH3 (xxhash): a well-known, portable, specified non-cryptographic hash that
passes SMHasher, runs at about 120 ns per short token here, and exists in 64- and
128-bit forms. Each function maps the UTF-8 bytes of a feature to an unsigned
integer of the scheme's width.

>>> HASHES["xxh3_64"].function("中国".encode())
9822245771723986127
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import xxhash


@dataclass(frozen=True)
class FeatureHash:
    name: str
    bits: int
    function: Callable[[bytes], int]


HASHES: dict[str, FeatureHash] = {}


def register(name: str, bits: int, function: Callable[[bytes], int]) -> FeatureHash:
    """Add a feature hash under a stable name (names are part of the stored data format)."""
    feature_hash = FeatureHash(name, bits, function)
    HASHES[name] = feature_hash
    return feature_hash


register("xxh3_64", 64, xxhash.xxh3_64_intdigest)
register("xxh3_128", 128, xxhash.xxh3_128_intdigest)
register("xxh32", 32, xxhash.xxh32_intdigest)


# ---------------------------------------------------------------- compatibility hashes
# These reproduce fingerprints made by other programs; they are not for new schemes.

_M32 = 0x5BD1E995
_M64 = 0xC6A4A7935BD1E995
_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1

SEED_PROGRAM_MURMUR_SEED = 999999937
"""The seed used by the C++ SimHash program the ``seed-murmur*`` schemes reproduce."""


def murmurhash2(data: bytes, seed: int) -> int:
    """Austin Appleby's MurmurHash2, 32 bits, reading 4-byte words little-endian (as on x86 and ARM).

    >>> murmurhash2(b"", 0)
    0
    """
    length = len(data)
    h = (seed ^ length) & _MASK32
    whole = length & ~3
    for (k,) in struct.iter_unpack("<I", data[:whole]):
        k = (k * _M32) & _MASK32
        k ^= k >> 24
        k = (k * _M32) & _MASK32
        h = ((h * _M32) & _MASK32) ^ k
    if length & 3:
        # The 1-3 tail bytes are XORed in at shifts 0, 8, 16: their little-endian value.
        h = ((h ^ int.from_bytes(data[whole:], "little")) * _M32) & _MASK32
    h ^= h >> 13
    h = (h * _M32) & _MASK32
    return h ^ (h >> 15)


def murmurhash64a(data: bytes, seed: int) -> int:
    """Austin Appleby's MurmurHash64A (MurmurHash2 for 64-bit machines), 8-byte words little-endian.

    >>> murmurhash64a(b"", 0)
    0
    """
    length = len(data)
    # The C++ multiplies the length as a uint64_t: the product wraps modulo 2**64.
    h = (seed ^ (length * _M64)) & _MASK64
    whole = length & ~7
    for (k,) in struct.iter_unpack("<Q", data[:whole]):
        k = (k * _M64) & _MASK64
        k ^= k >> 47
        k = (k * _M64) & _MASK64
        h = ((h ^ k) * _M64) & _MASK64
    if length & 7:
        h = ((h ^ int.from_bytes(data[whole:], "little")) * _M64) & _MASK64
    h ^= h >> 47
    h = (h * _M64) & _MASK64
    return h ^ (h >> 47)


def md5_last64(data: bytes) -> int:
    """The last 8 bytes of the MD5 digest, big-endian: the feature hash of the PyPI ``simhash`` package."""
    return int.from_bytes(hashlib.md5(data).digest()[-8:], "big")


register("murmurhash64a_seed999999937", 64, partial(murmurhash64a, seed=SEED_PROGRAM_MURMUR_SEED))
register("murmurhash2_seed999999937", 32, partial(murmurhash2, seed=SEED_PROGRAM_MURMUR_SEED))
register("md5_last64", 64, md5_last64)
