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
    it can load a jieba user dictionary;
``scripts``
    its pieces, in text order, are the segmenter's pieces of the text between the
    words of alphabetic scripts (Latin, Cyrillic, Greek, ...) and those words and
    numbers themselves (see :func:`script_words`), each weighed by its own table.

Tokenizer names are part of the stored data format (a scheme names its tokenizer).

>>> TOKENIZERS["jieba"].words, TOKENIZERS["seed-weighted"].in_order_sums
(True, True)
>>> windows("中华人民共和国", 4)
['中华人民', '华人民共', '人民共和', '民共和国']
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .errors import SchemeError
from .seed_format import parse_seed_line

if TYPE_CHECKING:
    from .scheme import Scheme

Feature = tuple[str, float]


@dataclass(frozen=True)
class Tokenizer:
    name: str
    segment: Callable[[str, Scheme], list[str]] | None = None
    read: Callable[[str], list[Feature]] | None = None
    words: bool = False
    pieces: bool = False
    every_feature: bool = False
    in_order_sums: bool = False
    user_dictionary: bool = False
    scripts: bool = False

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

    words: list[str] = jieba_tokenizer(scheme.user_dict, scheme.user_dict_sha256).lcut(text, HMM=scheme.hmm)
    return words


@lru_cache(maxsize=1)
def _rjieba() -> Any:  # the rjieba module (it ships no type information)
    try:
        import rjieba
    except ImportError:
        raise SchemeError(
            "this scheme segments with rjieba, a dependency of simhash-store that is not installed: pip install rjieba==0.2.2"
        ) from None
    return rjieba


def check_available(scheme: Scheme) -> None:
    """Raise :class:`SchemeError` now, once, if the scheme's segmenter cannot be imported
    (rather than for every document a batch then fingerprints). It is found, not imported:
    importing rjieba loads its dictionary, which a run that fingerprints nothing (a rerun)
    need not pay for."""
    if tokenizer_of(scheme).name in ("rjieba", "multi-rjieba"):
        if "rjieba" in sys.modules:
            if sys.modules["rjieba"] is None:  # marked as not importable
                _rjieba()
            return
        if importlib.util.find_spec("rjieba") is None:
            _rjieba()


def _rjieba_cut(text: str, scheme: Scheme) -> list[str]:
    words: list[str] = _rjieba().cut(text, scheme.hmm)
    return words


# ---------------------------------------------------------------- every script

# CJK ideographs (the characters jieba's dictionary is made of), the ranges of the
# normaliser's spaced-script test, and the word characters of every other script.
_IDEOGRAPHS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff"
_HAS_IDEOGRAPH = re.compile(f"[{_IDEOGRAPHS}]")
_LETTER_OR_DIGIT = f"[^\\W_{_CJK}]"
# A word of a spaced script: letters and digits, with inner apostrophes, dots and commas
# ("don't", "u.s", "1,000.5"), as people write them.
_SCRIPT_WORD = re.compile(f"({_LETTER_OR_DIGIT}+(?:['.,]{_LETTER_OR_DIGIT}+)*)")
_NUMBER = re.compile(r"[\d.,]+")


def is_script_word(piece: str) -> bool:
    """A piece of a ``scripts`` tokenizer that is a word of an alphabetic script or a number
    (not a CJK word, punctuation or space): it starts with a letter or digit below the CJK blocks."""
    first = piece[0]
    return first < "\u2e80" and first.isalnum()


def _normal_word(word: str) -> str:
    if word[0].isdigit() and _NUMBER.fullmatch(word):
        return word.replace(",", "").lstrip("0") or "0"
    return word


def _normal_words(words: list[str]) -> list[str]:
    # Most words start with a letter: no call for them.
    return [_normal_word(word) if word[0].isdigit() else word for word in words]


def script_words(text: str) -> list[str]:
    """The words of alphabetic scripts and the numbers of normalised text, in order.

    Numbers are normalised: no thousands separators, no leading zeros
    (``"1,000"`` and ``"01000"`` are ``"1000"``).

    >>> script_words("the café's 1,000 дней, 007 ways 中文 ok")
    ['the', "café's", '1000', 'дней', '7', 'ways', 'ok']
    """
    return _normal_words(_SCRIPT_WORD.findall(_apostrophes(text)))


def _apostrophes(text: str) -> str:
    return text.replace("\u2019", "'") if "\u2019" in text else text  # the typographic one of "don’t"


def _scripts_cut(cut: Callable[[str, Scheme], list[str]]) -> Callable[[str, Scheme], list[str]]:
    """A ``scripts`` segmenter: the words of alphabetic scripts, and ``cut`` for the text
    between them that holds ideographs, in text order."""

    def segment(text: str, scheme: Scheme) -> list[str]:
        text = _apostrophes(text)
        if not _HAS_IDEOGRAPH.search(text):
            return _normal_words(_SCRIPT_WORD.findall(text))
        parts = _SCRIPT_WORD.split(text)  # text between words, word, text between words, ...
        if len(parts) == 1:
            return cut(text, scheme)
        pieces: list[str] = []
        for i, part in enumerate(parts):
            if i % 2:
                pieces.append(_normal_word(part))
            elif part and _HAS_IDEOGRAPH.search(part):
                pieces += cut(part, scheme)
        return pieces

    return segment


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
# Every script: CJK through jieba's dictionary, the other scripts' words and numbers as they are.
register_tokenizer(Tokenizer("multi-rjieba", segment=_scripts_cut(_rjieba_cut), words=True, pieces=True, scripts=True))
register_tokenizer(
    Tokenizer(
        "multi-jieba", segment=_scripts_cut(_jieba_cut), words=True, pieces=True, scripts=True, user_dictionary=True
    )
)
register_tokenizer(Tokenizer("weighted", read=parse_weighted))
register_tokenizer(Tokenizer("char-windows", segment=_character_windows))
# The seed C++ program's reading keeps order and repeats, and sums in doubles in that order.
register_tokenizer(Tokenizer("seed-weighted", read=parse_seed_line, in_order_sums=True))
register_tokenizer(Tokenizer("pypi-char-windows", segment=_pypi_character_windows, every_feature=True))
