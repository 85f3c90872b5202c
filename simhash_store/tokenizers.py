"""Tokenizers: how a scheme turns normalised text, or a caller's weighted items, into features.

Each tokenizer is registered once with what it supports, and the rest of the code asks
those questions instead of testing names:

``segment``
    splits plain text into pieces (words or character windows), in order;
``read``
    instead reads caller-weighted ``token^weight`` items (weighted input);
``words``
    its pieces are words: ``known_words_only``, ``bigram_weight``, user dictionaries
    and word n-grams (``ngram`` > 1) apply; otherwise ``ngram`` is a window width;
``pieces``
    a long text may be cut just after punctuation and segmented piece by piece with the
    same tokens as a whole (jieba treats such characters as boundaries of their own);
``every_feature``
    its features are kept as they come, none dropped (stop words, punctuation);
``in_order_sums``
    sums feature by feature in input order in doubles, as the program it reproduces;
``user_dictionary``
    it can load a jieba user dictionary.

Tokenizer names are part of the stored data format (a scheme names its tokenizer).

>>> TOKENIZERS["jieba"].words, TOKENIZERS["seed-weighted"].in_order_sums
(True, True)
>>> windows("中华人民共和国", 4)
['中华人民', '华人民共', '人民共和', '民共和国']
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

from .errors import SchemeError
from .seed_format import parse_seed_line

if TYPE_CHECKING:
    from .scheme import Scheme

Feature = tuple[str, float]


@dataclass(frozen=True)
class Tokenizer:
    name: str
    segment: Callable[[str, "Scheme"], list[str]] | None = None
    read: Callable[[str], list[Feature]] | None = None
    words: bool = False
    pieces: bool = False
    every_feature: bool = False
    in_order_sums: bool = False
    user_dictionary: bool = False

    @property
    def weighted_input(self) -> bool:
        return self.read is not None

    def __post_init__(self) -> None:
        if (self.segment is None) == (self.read is None):
            raise ValueError(f"tokenizer {self.name!r} needs either segment or read, not both")


TOKENIZERS: dict[str, Tokenizer] = {}


def register_tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    """Add a tokenizer under a stable name (names are part of the stored data format)."""
    if tokenizer.name in TOKENIZERS and TOKENIZERS[tokenizer.name] != tokenizer:
        raise SchemeError(f"tokenizer {tokenizer.name!r} is already registered differently")
    TOKENIZERS[tokenizer.name] = tokenizer
    return tokenizer


def tokenizer_of(scheme: Scheme) -> Tokenizer:
    return TOKENIZERS[scheme.tokenizer]


def segment_text(text: str, scheme: Scheme) -> list[str]:
    """The scheme's pieces of normalised text, in order."""
    tokenizer = tokenizer_of(scheme)
    if tokenizer.segment is None:
        raise SchemeError(f"tokenizer {scheme.tokenizer!r} does not segment plain text")
    if scheme.user_dict and not tokenizer.user_dictionary:
        raise SchemeError(f"{scheme.tokenizer} cannot load a user dictionary; use the jieba tokenizer")
    return tokenizer.segment(text, scheme)


# ---------------------------------------------------------------- word segmenters


def _jieba_cut(text: str, scheme: Scheme) -> list[str]:
    from .dictionaries import jieba_tokenizer

    return jieba_tokenizer(scheme.user_dict).lcut(text, HMM=scheme.hmm)


@lru_cache(maxsize=1)
def _rjieba():
    try:
        import rjieba
    except ImportError:
        raise SchemeError(
            "the rjieba scheme needs the optional package rjieba: pip install 'simhash-store[fast]'"
        ) from None
    return rjieba


def _rjieba_cut(text: str, scheme: Scheme) -> list[str]:
    return _rjieba().cut(text, scheme.hmm)


# ---------------------------------------------------------------- character windows


def windows(text: str, width: int) -> list[str]:
    """Overlapping windows of ``width`` characters; a shorter text is its own single window."""
    return [text[i : i + width] for i in range(max(len(text) - width + 1, 1))]


def _character_windows(text: str, scheme: Scheme) -> list[str]:
    return windows(text, scheme.ngram) if text else []


# The PyPI simhash package's default "letters"; \w already holds all of U+4E00-U+9FCC today.
_PYPI_SIMHASH_WORDS = re.compile(r"[\w\u4e00-\u9fcc]+")


def _pypi_character_windows(text: str, scheme: Scheme) -> list[str]:
    # The package slides over its word characters only, joined across the gaps, and gives
    # a text without any the single feature "" (not no feature).
    return windows("".join(_PYPI_SIMHASH_WORDS.findall(text)), scheme.ngram)


# ---------------------------------------------------------------- weighted input


def parse_weighted(line: str) -> list[Feature]:
    """Parse caller-weighted features in the ``词^权重`` form: ``"中国^2 知乎^1 读者^2"``.

    Items are separated by whitespace; an item without ``^`` has weight 1. A weight
    that is not a number raises :class:`SchemeError`.
    """
    result: list[Feature] = []
    for item in line.split():
        token, caret, weight = item.rpartition("^")
        if not caret:
            result.append((item, 1.0))
            continue
        try:
            value = float(weight)
        except ValueError:
            raise SchemeError(f"weight of {token!r} is not a number: {weight!r}") from None
        if not math.isfinite(value):
            raise SchemeError(f"weight of {token!r} is not finite: {weight!r}")
        result.append((token, value))
    return result


# ---------------------------------------------------------------- the registry (in the order of the docs)

register_tokenizer(Tokenizer("jieba", segment=_jieba_cut, words=True, pieces=True, user_dictionary=True))
register_tokenizer(Tokenizer("rjieba", segment=_rjieba_cut, words=True, pieces=True))
register_tokenizer(Tokenizer("weighted", read=parse_weighted))
register_tokenizer(Tokenizer("char-windows", segment=_character_windows))
# The seed C++ program's reading keeps order and repeats, and sums in doubles in that order.
register_tokenizer(Tokenizer("seed-weighted", read=parse_seed_line, in_order_sums=True))
register_tokenizer(Tokenizer("pypi-char-windows", segment=_pypi_character_windows, every_feature=True))
