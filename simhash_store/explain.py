"""Why two documents are (or are not) near-duplicates: their features and the bits that differ. Pure: no I/O.

The distance is the number of bits in which the fingerprints differ. Each bit is the
sign of a weighted sum over the document's features; its *margin* is that sum as a
share of the document's total weight. A bit that differs with a small margin in one of
the documents flipped on a detail; a large margin means the documents really differ there. A text without features (no words) cannot be explained:
:class:`~simhash_store.errors.InputError`.

>>> e = explain("保护人民，制定本法。", "保护人民，制定此法。")
>>> e.distance == len(e.bits)
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .bits import hamming, to_hex
from .errors import InputError, InvalidValueError
from .fingerprint import bit_sums, features, fingerprint
from .scheme import DEFAULT, Scheme, get_scheme

_JOINER = "\x1f"  # between the two words of a pair feature


@dataclass(frozen=True)
class SharedFeature:
    feature: str
    weight_a: float
    weight_b: float


@dataclass(frozen=True)
class Feature:
    feature: str
    weight: float


@dataclass(frozen=True)
class BitDifference:
    """Bit ``bit`` (0 = least significant) and its margin in each document, signed: > 0 means set."""

    bit: int
    margin_a: float
    margin_b: float

    @property
    def smaller_margin(self) -> float:
        return min(abs(self.margin_a), abs(self.margin_b))


@dataclass(frozen=True)
class Explanation:
    fingerprint_a: int
    fingerprint_b: int
    distance: int
    shared: list[SharedFeature]  # heaviest first (by the larger of the two weights)
    only_a: list[Feature]
    only_b: list[Feature]
    bits: list[BitDifference]  # smallest margin first

    def to_dict(self) -> dict:
        record = asdict(self)
        record["fingerprint_a"], record["fingerprint_b"] = to_hex(self.fingerprint_a), to_hex(self.fingerprint_b)
        return record


def _readable(name: str) -> str:
    return name.replace(_JOINER, "·")


def explain(text_a: str, text_b: str, scheme: Scheme | str = DEFAULT, top: int = 10) -> Explanation:
    """Distance, the ``top`` heaviest features shared and not shared, and every differing bit with its margins."""
    scheme = get_scheme(scheme)
    if top < 0:
        raise InvalidValueError(f"top must be 0 or more, not {top}")
    weights_a, weights_b = dict(features(text_a, scheme)), dict(features(text_b, scheme))
    # A text without features has the fingerprint 0, as does every other such text: a distance
    # between them (0 bits, "near-duplicates") would say nothing about the texts.
    empty = [name for name, weights in (("A", weights_a), ("B", weights_b)) if not weights]
    if empty:
        which = "A and B have" if len(empty) == 2 else f"{empty[0]} has"
        raise InputError(f"{which} no features (no words that {scheme.name} counts): there is nothing to compare")
    fingerprint_a, fingerprint_b = fingerprint(text_a, scheme), fingerprint(text_b, scheme)
    shared = sorted(
        (SharedFeature(_readable(f), round(weights_a[f], 4), round(weights_b[f], 4)) for f in weights_a.keys() & weights_b.keys()),
        key=lambda s: (-max(s.weight_a, s.weight_b), s.feature),
    )
    only_a = sorted((Feature(_readable(f), round(w, 4)) for f, w in weights_a.items() if f not in weights_b),
                    key=lambda f: (-f.weight, f.feature))
    only_b = sorted((Feature(_readable(f), round(w, 4)) for f, w in weights_b.items() if f not in weights_a),
                    key=lambda f: (-f.weight, f.feature))
    margins_a, margins_b = _margins(weights_a, scheme), _margins(weights_b, scheme)
    differing = fingerprint_a ^ fingerprint_b
    bits = sorted(
        (
            BitDifference(bit, round(float(margins_a[bit]), 6), round(float(margins_b[bit]), 6))
            for bit in range(scheme.bits)
            if differing >> bit & 1
        ),
        key=lambda b: (b.smaller_margin, b.bit),
    )
    return Explanation(
        fingerprint_a, fingerprint_b, hamming(fingerprint_a, fingerprint_b), shared[:top], only_a[:top], only_b[:top], bits
    )


def _margins(weights: dict[str, float], scheme: Scheme) -> np.ndarray:
    """Each bit's sum as a share of the total absolute weight (0 for a text without features)."""
    total = float(sum(abs(w) for w in weights.values()))
    if not total:
        return np.zeros(scheme.bits)
    return bit_sums(weights.items(), scheme) / total


__all__ = ["BitDifference", "Explanation", "Feature", "SharedFeature", "explain"]
