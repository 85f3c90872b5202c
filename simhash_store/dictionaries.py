"""jieba's dictionary, its IDF table and the vocabularies built from them, cached on disk.

Building these takes a second or more (jieba's prefix dictionary alone is half a million
entries), which is most of a one-file command. Each is kept in the per-user cache (see
:mod:`cache`) under a key holding everything it is built from: the jieba version, the
digest of the file read, and the scheme's choices. So a new dictionary, a new jieba or
another scheme never meets an old entry, and every entry holds exactly what building
would give. jieba's own cache in the shared temporary directory is not used: any user
could write it first, and its content would decide everyone's segmentation.

>>> table, median = idf_table()
>>> round(median, 2)
11.95
"""

from __future__ import annotations

import io
import threading
from functools import lru_cache
from itertools import repeat

import numpy as np
import xxhash

from . import cache
from .hashing import HASHES
from .user_dict import checked_user_dictionary, not_utf8

_lock = threading.Lock()


def _jieba_module():
    import logging
    import sys

    if "jieba" not in sys.modules and "pkg_resources" not in sys.modules:
        # jieba imports pkg_resources (a tenth of a second or more, the slowest part of its
        # import) only to open its own data files, and opens the very same files with open()
        # when pkg_resources cannot be imported: make it so, for that one import.
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]
        try:
            import jieba
        finally:
            if sys.modules.get("pkg_resources", 0) is None:
                del sys.modules["pkg_resources"]
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def _digest(content: bytes) -> str:
    """A digest that tells one dictionary file from another (XXH3-128: the files are 5 to 6 MB,
    read on every start, and SHA-256 would take ten times longer)."""
    return xxhash.xxh3_128_hexdigest(content)


@lru_cache(maxsize=8)
def jieba_tokenizer(user_dict: str | None = None, user_dict_sha256: str | None = None):
    """A jieba Tokenizer on jieba's default dictionary, plus ``user_dict`` (a path) if given,
    whose SHA-256 must be ``user_dict_sha256`` (see :mod:`user_dict`).

    Its prefix dictionary comes from the cache, else from jieba's own builder (and then
    goes into the cache); either way it is exactly what ``Tokenizer.initialize`` builds.
    """
    jieba = _jieba_module()
    # Read and checked before anything is built: jieba gets these bytes, not the path.
    user_words = checked_user_dictionary(user_dict, user_dict_sha256) if user_dict else None
    with _lock:
        tokenizer = jieba.Tokenizer()
        with tokenizer.get_dict_file() as dictionary:
            key = {"jieba": jieba.__version__, "dictionary_xxh3_128": _digest(dictionary.read())}
        tokenizer.FREQ, tokenizer.total = _prefix_dictionary(tokenizer, key)
        tokenizer.initialized = True
        if user_words is not None:
            try:
                tokenizer.load_userdict(io.BytesIO(user_words))
            except ValueError:  # jieba's "dictionary file ... must be utf-8" (a UnicodeDecodeError)
                raise not_utf8(user_dict or "") from None
    return tokenizer


_INTEGER, _REAL = np.dtype(np.int64), np.dtype(np.float64)


def _prefix_dictionary(tokenizer, key: dict) -> tuple[dict[str, int], int]:
    stored = cache.load_word_table("jieba-prefix-dictionary", key, {"frequencies": _INTEGER}, {"total": _INTEGER})
    if stored is not None:
        words, arrays = stored
        return dict(zip(words, arrays["frequencies"].tolist())), int(arrays["total"][0])
    frequencies, total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
    cache.store_word_table(
        "jieba-prefix-dictionary",
        key,
        list(frequencies),
        {
            "frequencies": np.fromiter(frequencies.values(), dtype=_INTEGER, count=len(frequencies)),
            "total": np.array([total], dtype=_INTEGER),
        },
    )
    return frequencies, total


def _idf_file() -> bytes:
    from importlib.resources import files

    _jieba_module()
    return (files("jieba") / "analyse" / "idf.txt").read_bytes()


@lru_cache(maxsize=1)
def _idf_key() -> dict:
    return {"jieba": _jieba_module().__version__, "idf_xxh3_128": _digest(_idf_file())}


@lru_cache(maxsize=1)
def idf_table() -> tuple[dict[str, float], float]:
    """jieba's IDF table (jieba/analyse/idf.txt) and its median, exactly as jieba.analyse reads them."""
    key = _idf_key()
    stored = cache.load_word_table("jieba-idf", key, {"idf": _REAL}, {"median": _REAL})
    if stored is not None:
        words, arrays = stored
        return dict(zip(words, arrays["idf"].tolist())), float(arrays["median"][0])
    content = _idf_file().decode("utf-8")
    words_and_values = content.split()  # "word idf" per line; no word holds whitespace
    table = dict(zip(words_and_values[0::2], map(float, words_and_values[1::2])))
    median = sorted(table.values())[len(table) // 2]
    cache.store_word_table(
        "jieba-idf",
        key,
        list(table),
        {"idf": np.fromiter(table.values(), dtype=_REAL, count=len(table)), "median": np.array([median], dtype=_REAL)},
    )
    return table, median


def is_content(token: str) -> bool:
    """A token that carries meaning: it holds at least one letter or digit."""
    return token.isalnum() or any(c.isalnum() for c in token)


class Vocabulary:
    """The words a ``known_words_only`` scheme keeps, numbered from 0; a word's number
    indexes its IDF and its feature hash."""

    hashed = True  # it gives every word's hash

    def __init__(self, words: list[str], idf: np.ndarray, hashes: dict[tuple[str, int], np.ndarray]) -> None:
        self.words = words
        self.number = dict(zip(words, range(len(words))))
        self.idf = idf
        self._hashes = hashes
        self._lock = threading.Lock()

    def __contains__(self, word: str) -> bool:
        return word in self.number

    def numbers(self, part: list[str]) -> np.ndarray:
        """The numbers of the pieces it keeps, in order."""
        sequence = np.fromiter(map(self.number.get, part, repeat(-1)), dtype=np.int64, count=len(part))
        return sequence[sequence >= 0]

    def idf_of(self, numbers: np.ndarray) -> np.ndarray:
        return self.idf[numbers]

    def names_of(self, numbers: np.ndarray) -> list[str]:
        return list(map(self.words.__getitem__, numbers.tolist()))

    def hashes_of(self, numbers: np.ndarray, hash_name: str, nbytes: int) -> np.ndarray:
        return self.hashes(hash_name, nbytes)[numbers]

    def hashes(self, hash_name: str, nbytes: int) -> np.ndarray:
        """Every word's hash under ``hash_name``, by number, as little-endian integers of ``nbytes``."""
        key = (hash_name, nbytes)
        if key not in self._hashes:
            with self._lock:
                if key not in self._hashes:
                    self._hashes[key] = _hash_all(self.words, hash_name, nbytes)
        return self._hashes[key]


def _hash_dtype(nbytes: int) -> np.dtype:
    return np.dtype(f"<u{nbytes}")


def _hash_all(words: list[str], hash_name: str, nbytes: int) -> np.ndarray:
    function = HASHES[hash_name].function
    return np.fromiter(map(function, map(str.encode, words)), dtype=_hash_dtype(nbytes), count=len(words))


@lru_cache(maxsize=8)
def known_vocabulary(
    user_dict: str | None,
    user_dict_sha256: str | None,
    stop: frozenset[str],
    min_length: int,
    drop_punctuation: bool,
    hash_name: str,
    nbytes: int,
) -> Vocabulary:
    """The words of jieba's IDF table and of the user dictionary that pass the scheme's filters.

    A word of the user dictionary that the table lacks gets the median IDF, as any unknown
    word would. With a hash of 4 or 8 bytes, every word's hash comes with it. The user
    dictionary is read only if its SHA-256 is the scheme's ``user_dict_sha256`` (see
    :mod:`user_dict`); the disk cache keys on the bytes read.
    """
    user_words = checked_user_dictionary(user_dict, user_dict_sha256) if user_dict else b""
    with_hashes = nbytes in (4, 8)  # the hash widths a vocabulary carries (see the docstring)
    key = {
        "built_by": 1,  # raise when what is built from the same sources changes
        **_idf_key(),
        "user_dict_xxh3_128": _digest(user_words) if user_dict else None,
        "stop_words": sorted(stop),
        "min_length": min_length,
        "drop_punctuation": drop_punctuation,
        "hash": hash_name if with_hashes else None,
    }
    stored = cache.load_word_table(
        "vocabulary", key, {"idf": _REAL} | ({"hashes": _hash_dtype(nbytes)} if with_hashes else {})
    )
    if stored is not None:
        words, arrays = stored
        return Vocabulary(words, arrays["idf"], {(hash_name, nbytes): arrays["hashes"]} if with_hashes else {})
    table, median = idf_table()
    known = dict(table)
    try:
        user_text = user_words.decode("utf-8")
    except UnicodeDecodeError:
        raise not_utf8(user_dict or "") from None
    for line in io.StringIO(user_text, newline=None):  # lines as a text file gives them
        if line.strip():
            known.setdefault(line.split()[0], median)
    kept = {
        word: idf
        for word, idf in known.items()
        if len(word) >= min_length
        and word not in stop
        and (is_content(word) if drop_punctuation else not word.isspace())
    }
    words = list(kept)
    idf = np.fromiter(kept.values(), dtype=_REAL, count=len(words))
    arrays = {"idf": idf} | ({"hashes": _hash_all(words, hash_name, nbytes)} if with_hashes else {})
    cache.store_word_table("vocabulary", key, words, arrays)
    return Vocabulary(words, idf, {(hash_name, nbytes): arrays["hashes"]} if with_hashes else {})


# ---------------------------------------------------------------- words of alphabetic scripts

ENGLISH_TABLE = "en-wordfreq-idf-v1.txt"


@lru_cache(maxsize=1)
def english_weights() -> dict[str, float]:
    """The English word weights shipped with the package (-ln of the word's frequency; see
    benchmarks/make_english_idf.py): an IDF on the scale of jieba's table."""
    from importlib.resources import files

    content = (files(__package__) / "data" / ENGLISH_TABLE).read_text(encoding="utf-8")
    weights = {}
    for line in content.splitlines():
        if line and not line.startswith("#"):
            word, weight = line.split("\t")
            weights[word] = float(weight)
    return weights


@lru_cache(maxsize=8)
def english_vocabulary(stop: frozenset[str], min_length: int, hash_name: str, nbytes: int) -> Vocabulary:
    """The words of the English table that pass the scheme's filters, with their weights and hashes."""
    kept = {word: weight for word, weight in english_weights().items() if len(word) >= min_length and word not in stop}
    words = list(kept)
    idf = np.fromiter(kept.values(), dtype=_REAL, count=len(words))
    hashes = {(hash_name, nbytes): _hash_all(words, hash_name, nbytes)} if nbytes in (4, 8) else {}
    return Vocabulary(words, idf, hashes)
