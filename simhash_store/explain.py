"""Why two documents are (or are not) near-duplicates: features, differing bits, shared text. Pure: no I/O.

The distance is the number of bits in which the fingerprints differ. Each bit is the
sign of a weighted sum over the document's features; its *margin* is that sum as a
share of the document's total weight. A bit that differs with a small margin in one of
the documents flipped on a detail; a large margin means the documents really differ there.

The distance is an estimate of how much text the documents share; the exact figure is
their shingle overlap (:mod:`overlap`), computed beside it, and
:meth:`Explanation.disagreement` says when the two tell different stories.

>>> e = explain("保护人民，制定本法。", "保护人民，制定此法。")
>>> e.distance == len(e.bits)
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .bits import hamming, to_hex
from .errors import InvalidValueError, NoFeaturesError
from .fingerprint import bit_sums, features, fingerprint_if_any, no_features_message
from .overlap import NEAR_DUPLICATE_CONTAINMENT, NEAR_IDENTICAL_JACCARD, Overlap, overlap
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
    overlap: Overlap  # of the texts' shingles: what they really share

    def disagreement(self, max_distance: int) -> str | None:
        """One sentence when the distance and the shingle overlap disagree at ``max_distance``, else None.

        Close fingerprints whose texts share little (Jaccard < 0.2, neither inside the other)
        are likely a false match; far fingerprints of texts with Jaccard >= 0.8 are a
        near-duplicate this k misses, and a text at least 0.8 inside the other is an excerpt,
        which a fingerprint of the whole text does not find.
        """
        o = self.overlap
        if self.distance <= max_distance and o.shares_little:
            return (
                f"the fingerprints are close (within k = {max_distance}) but the texts share little "
                f"(Jaccard {o.jaccard:.2f}): likely a false match"
            )
        if self.distance > max_distance and o.jaccard >= NEAR_IDENTICAL_JACCARD:
            return (
                f"the texts are near-duplicates (Jaccard {o.jaccard:.2f}) but the fingerprints are more than "
                f"k = {max_distance} bits apart: a near-duplicate that this k misses"
            )
        inside, share = ("A", o.containment_a) if o.containment_a >= o.containment_b else ("B", o.containment_b)
        if self.distance > max_distance and share >= NEAR_DUPLICATE_CONTAINMENT:
            return (
                f"{share:.0%} of {inside}'s text is in the other: a fingerprint compares whole texts, "
                "so it does not find one inside another"
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["fingerprint_a"], record["fingerprint_b"] = to_hex(self.fingerprint_a), to_hex(self.fingerprint_b)
        record["overlap"] = self.overlap.to_dict()
        return record


def _readable(name: str) -> str:
    return name.replace(_JOINER, "·")


def explain(text_a: str, text_b: str, scheme: Scheme | str = DEFAULT, top: int = 10) -> Explanation:
    """Distance, the ``top`` heaviest features shared and not shared, every differing bit with its margins,
    and the texts' shingle overlap.

    A text without features has no fingerprint to compare: :class:`NoFeaturesError` names which.
    """
    scheme = get_scheme(scheme)
    if top < 0:
        raise InvalidValueError(f"top must be 0 or more, not {top}")
    fingerprint_a, fingerprint_b = fingerprint_if_any(text_a, scheme), fingerprint_if_any(text_b, scheme)
    if fingerprint_a is None or fingerprint_b is None:
        if fingerprint_a is None and fingerprint_b is None:
            raise NoFeaturesError(no_features_message("the two texts", scheme, both=True))
        which = "the first text (A)" if fingerprint_a is None else "the second text (B)"
        raise NoFeaturesError(no_features_message(which, scheme))
    weights_a, weights_b = dict(features(text_a, scheme)), dict(features(text_b, scheme))
    shared = sorted(
        (
            SharedFeature(_readable(f), round(weights_a[f], 4), round(weights_b[f], 4))
            for f in weights_a.keys() & weights_b.keys()
        ),
        key=lambda s: (-max(s.weight_a, s.weight_b), s.feature),
    )
    only_a = sorted(
        (Feature(_readable(f), round(w, 4)) for f, w in weights_a.items() if f not in weights_b),
        key=lambda f: (-f.weight, f.feature),
    )
    only_b = sorted(
        (Feature(_readable(f), round(w, 4)) for f, w in weights_b.items() if f not in weights_a),
        key=lambda f: (-f.weight, f.feature),
    )
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
        fingerprint_a,
        fingerprint_b,
        hamming(fingerprint_a, fingerprint_b),
        shared[:top],
        only_a[:top],
        only_b[:top],
        bits,
        overlap(text_a, text_b, scheme.normalizer),
    )


def _margins(weights: dict[str, float], scheme: Scheme) -> np.ndarray:
    """Each bit's sum as a share of the total absolute weight (0 for a text without features)."""
    total = float(sum(abs(w) for w in weights.values()))
    if not total:
        return np.zeros(scheme.bits)
    return bit_sums(weights.items(), scheme) / total


__all__ = ["BitDifference", "Explanation", "Feature", "SharedFeature", "explain"]
