"""The fingerprint core: normalise, segment, weight, hash, sum, sign. Pure: no I/O but dictionaries.

>>> a = fingerprint("中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，制定本法。")
>>> b = fingerprint("中华人民共和国刑法 第一条: 为了惩罚犯罪, 保护人民, 制定本法.")
>>> a == b
True

Text with no features (empty, whitespace or punctuation only) has the fingerprint 0;
:func:`features` tells whether a text has any.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Iterable

import numpy as np

from .errors import SchemeError
from .hashing import HASHES
from .scheme import DEFAULT, WEIGHTED_TOKENIZERS, Scheme, get_scheme
from .seed_format import parse_seed_line

Feature = tuple[str, float]

# ---------------------------------------------------------------- normalisation

_SURROGATES = re.compile("[\ud800-\udfff]")
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\ufeff]")
_WHITESPACE = re.compile(r"\s+")


# Characters of scripts that separate words with spaces (Latin, Greek, Cyrillic, digits, ...):
# word characters that are not CJK. Whitespace survives only between two of them.
_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff"
_SPACED = f"[^\\W_{_CJK}]"
_DROPPED_SPACE = re.compile(f"(?<!{_SPACED}) | (?!{_SPACED})")


def normalize(text: str, kind: str = "nfkc-casefold") -> str:
    """Make equivalent texts equal before segmentation.

    ``nfkc-casefold``: lone surrogates become U+FFFD, invisible controls go, Unicode
    NFKC folds full-width forms into half-width ones, case is folded, and whitespace
    is dropped except for one space between two words of a spaced script, so that
    line reflow of Chinese text changes nothing.
    """
    if kind == "none":
        return text
    if kind == "lower":
        return text.lower()
    text = _SURROGATES.sub("\ufffd", text)
    text = unicodedata.normalize("NFKC", text)
    text = _CONTROLS.sub("", text).casefold()
    text = _WHITESPACE.sub(" ", text).strip()
    return _DROPPED_SPACE.sub("", text)


# ---------------------------------------------------------------- segmentation

_tokenizer_lock = threading.Lock()


@lru_cache(maxsize=8)
def _jieba(user_dict: str | None):
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    with _tokenizer_lock:
        tokenizer = jieba.Tokenizer()
        tokenizer.initialize()
        if user_dict:
            tokenizer.load_userdict(user_dict)
    return tokenizer


@lru_cache(maxsize=1)
def _rjieba():
    try:
        import rjieba
    except ImportError:
        raise SchemeError(
            "the rjieba scheme needs the optional package rjieba: pip install 'simhash-store[fast]'"
        ) from None
    return rjieba


def _segment(text: str, scheme: Scheme) -> list[str]:
    if scheme.tokenizer == "jieba":
        return _jieba(scheme.user_dict).lcut(text, HMM=scheme.hmm)
    if scheme.tokenizer == "rjieba":
        if scheme.user_dict:
            raise SchemeError("rjieba cannot load a user dictionary; use the jieba tokenizer")
        return _rjieba().cut(text, scheme.hmm)
    if scheme.tokenizer == "char-windows":
        return _windows(text, scheme.ngram) if text else []
    if scheme.tokenizer == "pypi-char-windows":
        # The PyPI simhash package slides over its word characters only, joined across the
        # gaps, and gives a text without any the single feature "" (not no feature).
        return _windows("".join(_PYPI_SIMHASH_WORDS.findall(text)), scheme.ngram)
    raise SchemeError(f"tokenizer {scheme.tokenizer!r} does not segment plain text")


_CHARACTER_WINDOW_TOKENIZERS = ("char-windows", "pypi-char-windows")
# The PyPI simhash package's default "letters"; \w already holds all of U+4E00-U+9FCC today.
_PYPI_SIMHASH_WORDS = re.compile(r"[\w\u4e00-\u9fcc]+")


def _windows(text: str, width: int) -> list[str]:
    """Overlapping windows of ``width`` characters; a shorter text is its own single window."""
    return [text[i : i + width] for i in range(max(len(text) - width + 1, 1))]


def _is_content(token: str) -> bool:
    """A token that carries meaning: it holds at least one letter or digit."""
    return token.isalnum() or any(c.isalnum() for c in token)


@lru_cache(maxsize=1)
def _jieba_analyse():
    """jieba's keyword extractor: its IDF table and its stop-word list."""
    import jieba.analyse

    return jieba.analyse.default_tfidf


def _stopwords(scheme: Scheme) -> frozenset[str]:
    base = frozenset(_jieba_analyse().STOP_WORDS) if scheme.stopwords == "jieba" else frozenset()
    return base | frozenset(scheme.extra_stopwords)


def segment(text: str, scheme: Scheme | str = DEFAULT) -> list[str]:
    """Normalise and segment a text, keeping every piece: the expensive step of a fingerprint.

    It depends only on the scheme's normalizer, tokenizer, ``hmm`` and user dictionary,
    so schemes that share those can share one segmentation (see :func:`fingerprint_segmented`).
    """
    scheme = get_scheme(scheme)
    if scheme.tokenizer in WEIGHTED_TOKENIZERS:
        raise SchemeError("a weighted scheme reads token^weight items; it does not segment text")
    return _segment(normalize(text, scheme.normalizer), scheme)


def tokens(text: str, scheme: Scheme | str = DEFAULT) -> list[str]:
    """The scheme's tokens of a text, in order, after normalisation and filtering."""
    scheme = get_scheme(scheme)
    if scheme.tokenizer in WEIGHTED_TOKENIZERS:
        return [token for token, _ in _given_features(text, scheme)]
    return _select(segment(text, scheme), scheme)


def _select(segmented: list[str], scheme: Scheme) -> list[str]:
    """The features of a segmentation before weighting: filtered tokens, or n-grams of them."""
    if scheme.tokenizer == "pypi-char-windows":
        # The package's windows are its features as they come, the empty window included.
        return segmented
    stop = _stopwords(scheme)
    drop_punctuation = scheme.drop_punctuation
    min_length = scheme.min_token_length
    kept = [
        t
        for t in segmented
        if len(t) >= min_length
        and t not in stop
        and (_is_content(t) if drop_punctuation else not t.isspace())
    ]
    if scheme.ngram > 1 and scheme.tokenizer not in _CHARACTER_WINDOW_TOKENIZERS:
        n = scheme.ngram
        kept = ["\x1f".join(kept[i : i + n]) for i in range(max(len(kept) - n + 1, 1))] if kept else []
    return kept


# ---------------------------------------------------------------- weighting


_LOG_TF = [0.0] + [1.0 + math.log(c) for c in range(1, 256)]


def _log_tf(count: int) -> float:
    """Sublinear term frequency, 1 + ln(count), from a table for the usual small counts."""
    return _LOG_TF[count] if count < 256 else 1.0 + math.log(count)


def _idf_function(scheme: Scheme):
    """IDF of a feature from jieba's table (its median for unknown words; the mean over an n-gram)."""
    extractor = _jieba_analyse()
    table, median = extractor.idf_freq, extractor.median_idf
    if scheme.ngram == 1 or scheme.tokenizer in _CHARACTER_WINDOW_TOKENIZERS:
        return lambda token, get=table.get: get(token, median)
    return lambda token: sum(table.get(p, median) for p in token.split("\x1f")) / scheme.ngram


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


def features(text: str, scheme: Scheme | str = DEFAULT) -> list[Feature]:
    """The weighted features a scheme extracts from a text (heaviest first when ``top_k`` is set)."""
    scheme = get_scheme(scheme)
    if scheme.tokenizer in WEIGHTED_TOKENIZERS:
        return _given_features(text, scheme)
    return _weigh(tokens(text, scheme), scheme)


def _given_features(line: str, scheme: Scheme) -> list[Feature]:
    """The items of a caller-weighted line; the seed program's reading keeps order and repeats."""
    return parse_seed_line(line) if scheme.tokenizer == "seed-weighted" else parse_weighted(line)


def _weigh(selected: list[str], scheme: Scheme) -> list[Feature]:
    counts = Counter(selected)
    weighting = scheme.weighting
    if weighting == "tf":
        weighted = [(t, float(c)) for t, c in counts.items()]
    elif weighting == "binary":
        weighted = [(t, 1.0) for t in counts]
    elif weighting == "log-tf":
        weighted = [(t, _log_tf(c)) for t, c in counts.items()]
    elif weighting == "tfidf":
        idf = _idf_function(scheme)
        weighted = [(t, c * idf(t)) for t, c in counts.items()]
    elif weighting == "log-tfidf":
        idf = _idf_function(scheme)
        weighted = [(t, _log_tf(c) * idf(t)) for t, c in counts.items()]
    else:  # pragma: no cover - Scheme validates the weighting
        raise SchemeError(f"weighting {weighting!r} needs weighted input")
    if scheme.top_k is not None and len(weighted) > scheme.top_k:
        weighted.sort(key=lambda item: (-item[1], item[0]))
        weighted = weighted[: scheme.top_k]
    return weighted


# ---------------------------------------------------------------- hashing and summing


def fingerprint_features(weighted: Iterable[Feature] | Iterable[str], scheme: Scheme | str = DEFAULT) -> int:
    """SimHash of caller-supplied features: ``(token, weight)`` pairs or bare tokens (weight 1).

    Repeated tokens add their weights. Each feature is hashed to ``scheme.bits`` bits
    with the scheme's hash; bit i of the result is set where the weights of features
    with bit i set outweigh the others.

    >>> fingerprint_features([("中国", 2.0), ("知乎", 1.0), ("读者", 2.0)]) == fingerprint("中国^2 知乎^1 读者^2", "weighted-v1")
    True
    """
    scheme = get_scheme(scheme)
    if scheme.tokenizer in _IN_ORDER_TOKENIZERS:
        pairs = [(item, 1.0) if isinstance(item, str) else (item[0], float(item[1])) for item in weighted]
        return _simhash_in_order([t for t, _ in pairs], [w for _, w in pairs], scheme)
    totals: dict[str, float] = {}
    for item in weighted:
        token, weight = (item, 1.0) if isinstance(item, str) else item
        totals[token] = totals.get(token, 0.0) + float(weight)
    return _simhash(list(totals), list(totals.values()), scheme)


def _simhash(unique_tokens: list[str], weights: list[float], scheme: Scheme) -> int:
    """The weighted bit sums of distinct tokens, vectorised: one matrix product, no loop over bits."""
    if not unique_tokens:
        return 0
    bits = _hash_bits(unique_tokens, scheme)
    weight_vector = np.array(weights, dtype=np.float64)
    signed_sums = 2.0 * (weight_vector @ bits) - weight_vector.sum()
    return _pack(signed_sums > 0)


def _hash_bits(feature_tokens: list[str], scheme: Scheme) -> np.ndarray:
    """One row of 0/1 per feature: bit i of the feature's hash in column i."""
    hash_function = HASHES[scheme.hash].function
    nbytes = scheme.bits // 8
    hashed = b"".join(
        [hash_function(token.encode("utf-8", "surrogatepass")).to_bytes(nbytes, "little") for token in feature_tokens]
    )
    return np.unpackbits(
        np.frombuffer(hashed, dtype=np.uint8).reshape(len(feature_tokens), nbytes), axis=1, bitorder="little"
    )


def _pack(set_bits: np.ndarray) -> int:
    """The integer whose bit i is ``set_bits[i]``."""
    return int.from_bytes(np.packbits(set_bits, bitorder="little").tobytes(), "little")


# Schemes that reproduce a program summing in floating point, feature after feature, must
# add in that order: rounding makes the sums order-dependent, and near zero the order can
# flip a bit (1e16 + 1 - 1e16 is 0 in doubles, 1 exactly). So no merging of repeated
# tokens and no matrix product, whose order BLAS chooses.
_IN_ORDER_TOKENIZERS = ("seed-weighted",)


def _simhash_in_order(feature_tokens: list[str], weights: list[float], scheme: Scheme) -> int:
    """The bit sums in input order, per bit exactly as ``bits[i] += w`` / ``bits[i] -= w`` in doubles."""
    if not feature_tokens:
        return 0
    bits = _hash_bits(feature_tokens, scheme).astype(bool)
    weight_column = np.array(weights, dtype=np.float64)[:, None]
    # Subtracting w and adding -w round identically in IEEE 754.
    signed_rows = np.where(bits, weight_column, -weight_column)
    sums = np.zeros(scheme.bits, dtype=np.float64)
    # inf, nan and overflow are valid weights and sums in the program too: no warnings.
    with np.errstate(over="ignore", invalid="ignore"):
        for row in signed_rows:  # elementwise adds, one feature at a time
            sums += row
    return _pack(sums > 0)


def fingerprint(text: str, scheme: Scheme | str = DEFAULT) -> int:
    """The unsigned SimHash of a document under a scheme (64 bits unless the scheme says otherwise).

    >>> fingerprint("") == 0
    True
    """
    scheme = get_scheme(scheme)
    if scheme.tokenizer in WEIGHTED_TOKENIZERS:
        return fingerprint_features(_given_features(text, scheme), scheme)
    return fingerprint_segmented(segment(text, scheme), scheme)


def fingerprint_segmented(segmented: list[str], scheme: Scheme | str = DEFAULT) -> int:
    """The fingerprint of a text from its :func:`segment` output under the same scheme.

    >>> fingerprint_segmented(segment("保护人民，制定本法。")) == fingerprint("保护人民，制定本法。")
    True
    """
    scheme = get_scheme(scheme)
    weighted = _weigh(_select(segmented, scheme), scheme)
    return _simhash([t for t, _ in weighted], [w for _, w in weighted], scheme)
