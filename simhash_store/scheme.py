"""Schemes: every choice that decides a fingerprint, in one immutable, serialisable value.

Fingerprints from different schemes are not comparable, so a scheme is part of the
data format: the store records the one it was created with and refuses others.
Changing how a named scheme computes fingerprints means a new name or version,
never a silent change.

>>> get_scheme("zh-jieba-v1").tokenizer
'jieba'
>>> DEFAULT.name
'multi-v3'
>>> Scheme.from_json(DEFAULT.to_json()) == DEFAULT
True
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import SchemeError
from .hashing import HASHES
from .tokenizers import TOKENIZERS

NORMALIZERS = ("nfkc-casefold", "nfkc-casefold-v2", "nfkc-casefold-v3", "lower", "none")
WEIGHTINGS = ("tf", "log-tf", "binary", "tfidf", "log-tfidf", "given")
STOPWORD_LISTS = ("jieba", "none")


_TYPES: dict[str, tuple[type, ...]] = {
    "version": (int,),
    "bits": (int,),
    "hmm": (bool,),
    "ngram": (int,),
    "top_k": (int, type(None)),
    "drop_punctuation": (bool,),
    "user_dict": (str, type(None)),
    "user_dict_sha256": (str, type(None)),
}
_TYPE_NAMES = {
    (int,): "an integer",
    (bool,): "true or false",
    (int, type(None)): "an integer or null",
    (str, type(None)): "a string or null",
}


@dataclass(frozen=True)
class Scheme:
    """How text becomes a fingerprint.

    ``normalizer``: ``nfkc-casefold`` (see ``fingerprint.normalize``), ``nfkc-casefold-v2``
    (the same, a repeated line counted once, spaces kept between words of spaced scripts),
    ``nfkc-casefold-v3`` (v2, and default-ignorable characters dropped), ``lower`` or ``none``.
    ``tokenizer``: ``jieba`` (precise mode), ``rjieba`` (the Rust port), ``multi-rjieba`` and
    ``multi-jieba`` (CJK words by that segmenter, plus the words and numbers of every other
    script, each weighed by its own table),
    ``weighted`` (whitespace-separated ``token^weight`` items), ``seed-weighted`` (a
    ``token^weight`` line read exactly as the seed C++ program reads it, summed in its
    order), ``char-windows`` (overlapping character windows of width ``ngram``) or
    ``pypi-char-windows`` (the PyPI ``simhash`` package's windows: only its word
    characters, joined, and one window even for a text without any).
    ``weighting``: term frequency (``tf``), sublinear ``log-tf`` (1 + ln tf), ``binary``,
    ``tfidf`` and ``log-tfidf`` with jieba's IDF table, or ``given`` by the input.
    ``top_k`` keeps only the heaviest features (the classic write-ups keep 50).
    ``min_token_length`` drops shorter words (jieba's keyword extractor drops single
    characters). ``known_words_only`` keeps only words that jieba's IDF table (or the
    user dictionary) knows: typos, the pieces jieba's HMM glues out of them, numbers and
    URLs go. ``bigram_weight`` adds each pair of adjacent kept words as one more feature,
    weighted that much relative to a single word (0: words only).
    """

    name: str
    version: int = 1
    bits: int = 64
    normalizer: str = "nfkc-casefold"
    tokenizer: str = "jieba"
    hmm: bool = True
    ngram: int = 1
    weighting: str = "log-tfidf"
    top_k: int | None = None
    stopwords: str = "jieba"
    extra_stopwords: tuple[str, ...] = ()
    drop_punctuation: bool = True
    min_token_length: int = 1
    known_words_only: bool = False
    bigram_weight: float = 0.0
    hash: str = "xxh3_64"
    user_dict: str | None = None
    user_dict_sha256: str | None = field(default=None)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise SchemeError("a scheme needs a non-empty name")
        # The types the code below and the fingerprint rely on: a description read from a store's
        # record (which a member of pg_write_all_data may rewrite) is JSON of any shape, and a float
        # ngram or top_k, or a number as user_dict, ended add and query in a TypeError traceback.
        for attribute, kinds in _TYPES.items():
            value = getattr(self, attribute)
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise SchemeError(f"scheme {self.name!r}: {attribute} must be {_TYPE_NAMES[kinds]}, not {value!r:.40}")
        choices = {
            "normalizer": NORMALIZERS,
            "tokenizer": tuple(TOKENIZERS),
            "weighting": WEIGHTINGS,
            "stopwords": STOPWORD_LISTS,
            "hash": tuple(HASHES),
        }
        for attribute, allowed in choices.items():
            if getattr(self, attribute) not in allowed:
                raise SchemeError(
                    f"scheme {self.name!r}: {attribute} must be one of {', '.join(allowed)}, "
                    f"not {getattr(self, attribute)!r}"
                )
        if HASHES[self.hash].bits != self.bits:
            raise SchemeError(
                f"scheme {self.name!r}: hash {self.hash} gives {HASHES[self.hash].bits} bits, "
                f"but the scheme asks for {self.bits}"
            )
        length = self.min_token_length
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise SchemeError(
                f"scheme {self.name!r}: min_token_length must be an integer of at least 1, not {length!r}"
            )
        if self.ngram < 1:
            raise SchemeError(f"scheme {self.name!r}: ngram must be at least 1, not {self.ngram}")
        tokenizer = TOKENIZERS[self.tokenizer]
        word_tokenizer = tokenizer.words
        if not isinstance(self.known_words_only, bool):
            raise SchemeError(f"scheme {self.name!r}: known_words_only must be true or false")
        if self.known_words_only and not word_tokenizer:
            raise SchemeError(f"scheme {self.name!r}: known_words_only needs a jieba tokenizer")
        if tokenizer.scripts and not (self.known_words_only and self.ngram == 1 and self.top_k is None):
            raise SchemeError(
                f"scheme {self.name!r}: the {self.tokenizer} tokenizer weighs known CJK words and the words "
                "of other scripts by their tables: it needs known_words_only, ngram 1 and no top_k"
            )
        if (
            isinstance(self.bigram_weight, bool)
            or not isinstance(self.bigram_weight, (int, float))
            or not math.isfinite(self.bigram_weight)
            or self.bigram_weight < 0
        ):
            raise SchemeError(
                f"scheme {self.name!r}: bigram_weight must be a finite number of at least 0, not {self.bigram_weight!r}"
            )
        if self.bigram_weight and not (word_tokenizer and self.ngram == 1):
            raise SchemeError(
                f"scheme {self.name!r}: bigram_weight adds pairs of words to single words, "
                "so it needs a jieba tokenizer and ngram 1"
            )
        object.__setattr__(self, "bigram_weight", float(self.bigram_weight))
        if self.top_k is not None and self.top_k < 1:
            raise SchemeError(f"scheme {self.name!r}: top_k must be at least 1 or None")
        if (self.weighting == "given") != tokenizer.weighted_input:
            weighted = [name for name, entry in TOKENIZERS.items() if entry.weighted_input]
            raise SchemeError(
                f"scheme {self.name!r}: weighting 'given' goes with the tokenizers "
                f"{', '.join(weighted)} and only with them"
            )
        if tokenizer.every_feature and (self.stopwords != "none" or self.extra_stopwords or self.drop_punctuation):
            raise SchemeError(
                f"scheme {self.name!r}: the {self.tokenizer} tokenizer keeps every window, as the "
                "package does; it needs stopwords 'none', no extra stop words and drop_punctuation False"
            )
        if self.user_dict is not None and not word_tokenizer:
            raise SchemeError(f"scheme {self.name!r}: a user dictionary needs a jieba tokenizer")
        object.__setattr__(self, "extra_stopwords", tuple(sorted(set(self.extra_stopwords))))

    def with_user_dict(self, path: str | Path, name: str | None = None) -> Scheme:
        """This scheme with a jieba user dictionary; its content digest becomes part of the scheme."""
        from .user_dict import check_words, not_utf8, read_regular

        path = Path(path)
        content = read_regular(path, "give a UTF-8 text file of words, one a line, as jieba reads them")
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            raise not_utf8(str(path)) from None
        check_words(content, str(path))
        digest = hashlib.sha256(content).hexdigest()
        return replace(
            self,
            name=name or f"{self.name}+dict-{digest[:8]}",
            user_dict=str(path.resolve()),
            user_dict_sha256=digest,
        )

    def with_stopwords(self, words: list[str] | tuple[str, ...], name: str | None = None) -> Scheme:
        """This scheme with extra stop words (part of the scheme, so part of its identity)."""
        extra = tuple(sorted(set(self.extra_stopwords) | {w.strip() for w in words if w.strip()}))
        digest = hashlib.sha256("\n".join(extra).encode()).hexdigest()[:8]
        return replace(self, name=name or f"{self.name}+stop-{digest}", extra_stopwords=extra)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["extra_stopwords"] = list(self.extra_stopwords)
        return data

    def to_json(self) -> str:
        """Canonical JSON: equal schemes give equal strings."""
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scheme:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise SchemeError(f"unknown scheme fields: {', '.join(sorted(unknown))}")
        data = dict(data)
        extra = data.get("extra_stopwords", ())
        if not isinstance(extra, (list, tuple)) or not all(isinstance(word, str) for word in extra):
            raise SchemeError("malformed scheme description: extra_stopwords must be a list of strings")
        data["extra_stopwords"] = tuple(extra)
        try:
            return cls(**data)
        except TypeError as exc:
            raise SchemeError(f"malformed scheme description: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> Scheme:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SchemeError(f"scheme description is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise SchemeError("scheme description must be a JSON object")
        return cls.from_dict(data)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


SCHEMES: dict[str, Scheme] = {}


def register_scheme(scheme: Scheme) -> Scheme:
    """Name a scheme so that the CLI and ``fingerprint(text, "name")`` can find it."""
    if scheme.name in SCHEMES and SCHEMES[scheme.name] != scheme:
        raise SchemeError(f"scheme {scheme.name!r} is already registered differently")
    SCHEMES[scheme.name] = scheme
    return scheme


def get_scheme(scheme: Scheme | str) -> Scheme:
    """A ``Scheme`` as given, or the registered scheme of that name."""
    if isinstance(scheme, Scheme):
        return scheme
    try:
        return SCHEMES[scheme]
    except (KeyError, TypeError):
        raise SchemeError(f"unknown scheme {scheme!r}; known schemes: {', '.join(sorted(SCHEMES))}") from None


# The project's schemes. Their definitions are frozen: a change is a new name.
# Chosen on benchmarks/quality.py (docs/quality.md): sublinear TF x IDF over the words
# jieba's IDF table knows, two characters or longer, plus each pair of adjacent words at
# half weight. Typos, boilerplate numbers and URLs barely move it; the pairs keep laws
# on the same subject apart.
ZH_JIEBA_V1 = register_scheme(
    Scheme(
        name="zh-jieba-v1",
        tokenizer="jieba",
        weighting="log-tfidf",
        min_token_length=2,
        known_words_only=True,
        bigram_weight=0.5,
    )
)
ZH_RJIEBA_V1 = register_scheme(replace(ZH_JIEBA_V1, name="zh-rjieba-v1", tokenizer="rjieba"))
# The write-ups' recipe in this pipeline: jieba's extract_tags keeps the 50 words of
# two or more characters with the highest tf * idf and sums those weights.
TFIDF_TOP50 = register_scheme(Scheme(name="classic-tfidf-top50", weighting="tfidf", top_k=50, min_token_length=2))

# Every script counts: CJK words as in zh-jieba-v1 (segmented by rjieba, twenty times
# faster than jieba), the words of alphabetic scripts weighed by the English table shipped
# in simhash_store/data (unlisted words at jieba's median IDF; twice in paragraphs, half
# elsewhere), numbers normalised at a low weight; a repeated line counts once. Chosen on
# benchmarks/crawl_quality.py (docs/quality.md).
MULTI_V2 = register_scheme(
    Scheme(
        name="multi-v2",
        normalizer="nfkc-casefold-v2",
        tokenizer="multi-rjieba",
        weighting="log-tfidf",
        min_token_length=2,
        known_words_only=True,
        bigram_weight=0.5,
    )
)

# multi-v2 with every default-ignorable character dropped as well (soft hyphens, variation
# selectors, tag characters: one between every two characters left a text without a feature).
# A text holding none of them has multi-v2's fingerprint, so multi-v2's measurements hold.
MULTI_V3 = register_scheme(replace(MULTI_V2, name="multi-v3", normalizer="nfkc-casefold-v3"))

# The scheme of new stores (and of fingerprint(), dedup, calibrate and explain when none is
# named). A store records its scheme when created and keeps it: stores made with
# zh-jieba-v1 or multi-v2 go on with theirs.
DEFAULT = MULTI_V3
# At 11 bits zh-jieba-v1 finds 98% of light (0.977-0.982 over held-out draws) and 96% of
# heavy near-duplicates with about 1 false match per million unrelated pairs (docs/quality.md,
# Held-out seeds); multi-v2 is within a point of it on Chinese variants (0.980 / 0.961 against
# 0.983 / 0.970), so it keeps the same k and stores of either scheme answer at the same
# default distance.
DEFAULT_MAX_DISTANCE = 11
WEIGHTED_V1 = register_scheme(
    Scheme(name="weighted-v1", tokenizer="weighted", weighting="given", normalizer="none", stopwords="none")
)

# Compatibility schemes: fingerprints equal to those of other programs, bit for bit.
# The seed C++ program (MurmurHash64A or MurmurHash2, seed 999999937, over token^weight lines).
SEED_MURMUR64 = register_scheme(
    Scheme(
        name="seed-murmur64",
        tokenizer="seed-weighted",
        weighting="given",
        normalizer="none",
        stopwords="none",
        hash="murmurhash64a_seed999999937",
    )
)
SEED_MURMUR32 = register_scheme(
    Scheme(
        name="seed-murmur32",
        bits=32,
        tokenizer="seed-weighted",
        weighting="given",
        normalizer="none",
        stopwords="none",
        hash="murmurhash2_seed999999937",
    )
)
# simhash.Simhash(text).value of the PyPI simhash package 2.1.2: lower-cased, width-4 windows
# over its word characters, window counts as weights, the last 64 bits of MD5.
PYPI_SIMHASH = register_scheme(
    Scheme(
        name="pypi-simhash",
        normalizer="lower",
        tokenizer="pypi-char-windows",
        ngram=4,
        weighting="tf",
        stopwords="none",
        drop_punctuation=False,
        hash="md5_last64",
    )
)
