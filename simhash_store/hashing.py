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

from dataclasses import dataclass
from typing import Callable

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
