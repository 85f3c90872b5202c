"""The fingerprint core: normalise, segment, weight, hash, sum, sign. Pure: no I/O but dictionaries.

>>> a = fingerprint("中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，制定本法。")
>>> b = fingerprint("中华人民共和国刑法 第一条: 为了惩罚犯罪, 保护人民, 制定本法.")
>>> a == b
True

Text with no features (empty, whitespace or punctuation only, or no words the scheme
reads) has no fingerprint: :func:`fingerprint` raises :class:`NoFeaturesError` for it and
:func:`fingerprint_if_any` returns None.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat

import numpy as np

from .dictionaries import Vocabulary, english_vocabulary, is_content, known_vocabulary
from .dictionaries import idf_table as _idf_table  # noqa: F401  (tests check it against jieba.analyse)
from .errors import NoFeaturesError, SchemeError
from .hashing import HASHES
from .scheme import DEFAULT, Scheme, get_scheme
from .tokenizers import Feature, is_script_word, parse_weighted, segment_text, tokenizer_of  # noqa: F401  (Feature, parse_weighted: public here too)

# ---------------------------------------------------------------- normalisation

_SURROGATES = re.compile("[\ud800-\udfff]")
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\ufeff]")
_WHITESPACE = re.compile(r"\s+")
# Unicode's default-ignorable code points (DerivedCoreProperties.txt, Default_Ignorable_Code_Point):
# drawn as nothing, so one between every two characters (a soft hyphen, a variation selector, a
# tag character) left a text that reads the same without a single feature.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]"
)


# Characters of scripts that separate words with spaces (Latin, Greek, Cyrillic, digits, ...):
# word characters that are not CJK. Whitespace survives only between two of them.
_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff"
_SPACED = f"[^\\W_{_CJK}]"
# A space not between two such characters; it starts with the space so that the regex
# engine jumps from space to space instead of testing the lookarounds at every character.
_DROPPED_SPACE = re.compile(f" (?:(?<!{_SPACED} )|(?!{_SPACED}))")
_SPACE_NEAR_CJK = re.compile(f" (?:(?<=[{_CJK}] )|(?=[{_CJK}]))")

# The characters that keep most Chinese text from being NFKC-normal already, with their NFKC
# forms: full-width punctuation and spaces, and the ellipsis.
_COMMON_COMPATIBILITY_FORMS = [(c, unicodedata.normalize("NFKC", c)) for c in "，：；（）！？\u3000…\xa0"]


def _nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, about five times faster on Chinese text.

    Replacing a character by its compatibility decomposition leaves the NFKC form of the
    whole unchanged, so the common ones go first by plain replacement; full NFKC then runs
    only if anything else is left to fold.
    """
    for form, folded in _COMMON_COMPATIBILITY_FORMS:
        if form in text:
            text = text.replace(form, folded)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def _unique_lines(text: str) -> str:
    """Each distinct line once, where it first comes: a title repeated at the top, a header
    or footer pasted twice, counts as much as once. Whitespace-only lines go."""
    if "\n" not in text and "\r" not in text:
        return text
    lines = dict.fromkeys(line.strip() for line in text.splitlines())
    lines.pop("", None)
    return "\n".join(lines)


def normalize(text: str, kind: str = "nfkc-casefold") -> str:
    """Make equivalent texts equal before segmentation.

    ``nfkc-casefold``: lone surrogates become U+FFFD, invisible controls go, Unicode
    NFKC folds full-width forms into half-width ones, case is folded, and whitespace
    is dropped except for one space between two words of a spaced script, so that
    line reflow of Chinese text changes nothing.
    ``nfkc-casefold-v2``: the same, but a line that comes again (after stripping, and
    after the steps before) is kept only where it first comes, and whitespace is dropped
    only next to a CJK character: "users' café, 1,000" keeps its word boundaries.
    ``nfkc-casefold-v3``: ``nfkc-casefold-v2``, and every default-ignorable character goes too
    (soft hyphens, variation selectors, tag characters, directional isolates): a text that
    holds none is normalised exactly as by ``nfkc-casefold-v2``.
    """
    if kind == "none":
        return text
    if kind == "lower":
        return text.lower()
    text = _SURROGATES.sub("\ufffd", text)
    text = _nfkc(text)
    text = _CONTROLS.sub("", text).casefold()
    if kind == "nfkc-casefold-v3":
        text = _IGNORABLE.sub("", text)
    if kind in ("nfkc-casefold-v2", "nfkc-casefold-v3"):
        text = _WHITESPACE.sub(" ", _unique_lines(text)).strip()
        return _SPACE_NEAR_CJK.sub("", text)
    text = _WHITESPACE.sub(" ", text).strip()
    return _DROPPED_SPACE.sub("", text)


# ---------------------------------------------------------------- segmenting (the tokenizers are in tokenizers.py) and keeping words


# jieba's keyword-extraction stop words (jieba 0.42.1, jieba.analyse.tfidf.KeywordExtractor.STOP_WORDS),
# written out because importing jieba.analyse parses its whole IDF table a second time;
# a test checks that they are still jieba's.
JIEBA_STOP_WORDS = frozenset(
    "an and are as at be by can for from has have if in is it not of on one or that the then this to we which "
    "with you all".split()
)


def _stopwords(scheme: Scheme) -> frozenset[str]:
    return _stopword_set(scheme.stopwords, scheme.extra_stopwords)


@lru_cache(maxsize=16)
def _stopword_set(stopwords: str, extra_stopwords: tuple[str, ...]) -> frozenset[str]:
    base = JIEBA_STOP_WORDS if stopwords == "jieba" else frozenset()
    return base | frozenset(extra_stopwords)


# Texts longer than this (in characters, after normalisation) are segmented piece by piece,
# each cut just after a punctuation mark. jieba (and rjieba) treat every character outside
# their word class as a boundary of its own, so the tokens are exactly those of the whole
# text; only counts are carried from piece to piece, so a 200 MB file needs no list of
# 60 million tokens. A piece without any such mark in its last 64K characters is cut there
# anyway: a text of that shape is no prose.
PIECE_CHARACTERS = 1 << 20
_PIECE_SLACK = 1 << 16
# Not a comma between digits: "1,000" is one number to the scripts tokenizers.
_PIECE_BOUNDARY = re.compile("[。,;:!?、](?!\\d)")


def _segment_in_pieces(normalized: str, scheme: Scheme) -> Iterable[list[str]]:
    if len(normalized) <= PIECE_CHARACTERS or not tokenizer_of(scheme).pieces:
        yield segment_text(normalized, scheme)
        return
    start = 0
    while start < len(normalized):
        end = start + PIECE_CHARACTERS
        if end < len(normalized):
            boundary = _PIECE_BOUNDARY.search(normalized, end - _PIECE_SLACK, end)
            if boundary is not None:
                # the last boundary in the window, so pieces stay close to the nominal size
                last = boundary
                for last in _PIECE_BOUNDARY.finditer(normalized, boundary.start(), end):  # noqa: B007 (keeps the last match)
                    pass
                end = last.end()
        yield segment_text(normalized[start:end], scheme)
        start = end


def segment(text: str, scheme: Scheme | str = DEFAULT) -> list[str]:
    """Normalise and segment a text, keeping every piece: the expensive step of a fingerprint.

    It depends only on the scheme's normalizer, tokenizer, ``hmm`` and user dictionary,
    so schemes that share those can share one segmentation (see :func:`fingerprint_segmented`).
    """
    scheme = get_scheme(scheme)
    if tokenizer_of(scheme).weighted_input:
        raise SchemeError("a weighted scheme reads token^weight items; it does not segment text")
    return segment_text(normalize(text, scheme.normalizer), scheme)


def tokens(text: str, scheme: Scheme | str = DEFAULT) -> list[str]:
    """The scheme's tokens of a text, in order, after normalisation and filtering."""
    scheme = get_scheme(scheme)
    if tokenizer_of(scheme).weighted_input:
        return [token for token, _ in _given_features(text, scheme)]
    return _select(segment(text, scheme), scheme)


def _select(segmented: list[str], scheme: Scheme) -> list[str]:
    """The features of a segmentation before weighting, in order: the kept words (or word
    n-grams), then, with ``bigram_weight``, the pairs of adjacent kept words."""
    tokenizer = tokenizer_of(scheme)
    if tokenizer.every_feature:
        # e.g. the PyPI package's windows, the empty window included.
        return segmented
    kept = _words(segmented, scheme)
    if scheme.ngram > 1 and tokenizer.words:
        n = scheme.ngram
        return [_GRAM_JOINER.join(kept[i : i + n]) for i in range(max(len(kept) - n + 1, 1))] if kept else []
    if scheme.bigram_weight:
        return kept + [f"{first}{_GRAM_JOINER}{second}" for first, second in zip(kept, kept[1:])]
    return kept


def _words(segmented: list[str], scheme: Scheme) -> list[str]:
    """The pieces of a segmentation that the scheme keeps as words, in order."""
    if tokenizer_of(scheme).scripts:
        every_script = _ScriptWords(scheme)
        return every_script.names_of(every_script.numbers(segmented))
    vocabulary = _vocabulary(scheme)
    return list(filter(vocabulary.__contains__ if vocabulary is not None else _keeps(scheme), segmented))


def _keeps(scheme: Scheme):
    """The test a piece passes to count as a word (without ``known_words_only``)."""
    stop = _stopwords(scheme)
    min_length = scheme.min_token_length
    if scheme.drop_punctuation:
        return lambda t: len(t) >= min_length and t not in stop and is_content(t)
    return lambda t: len(t) >= min_length and t not in stop and not t.isspace()


# Joins the words of an n-gram feature. It is a control character, which the normaliser
# removes and jieba never puts inside a word, so no single word contains it.
_GRAM_JOINER = "\x1f"
_GRAM_JOINER_BYTES = _GRAM_JOINER.encode()


def _vocabulary(scheme: Scheme) -> Vocabulary | None:
    """For ``known_words_only`` schemes: every word they keep, numbered; else None."""
    if not scheme.known_words_only:
        return None
    return known_vocabulary(
        scheme.user_dict,
        scheme.user_dict_sha256,
        _stopwords(scheme),
        scheme.min_token_length,
        scheme.drop_punctuation,
        scheme.hash,
        scheme.bits // 8,
    )


# What words of alphabetic scripts weigh when the English table lacks them: numbers less
# than a common word (they are many and fragile: dates, times, view counts in page
# headers, and a typo next to a digit makes another number), other words as jieba weighs
# a word its table lacks (its median IDF): names and terms count, a typo no more than a word.
NUMBER_IDF = 2.0
UNLISTED_WORD_IDF = 12.0
# An English word stands for about three times the characters of a Chinese one (6 with
# its space, against 1.7). Words met in a run of at least LONG_RUN words of alphabetic
# scripts (a paragraph) weigh twice their IDF, so that English paragraphs that are 30% of
# a Chinese article move it by about 24 bits when replaced (11 at 1x); the others (a
# name, a URL, a "Copyright" line of a Chinese page) half their IDF, so that page headers,
# footers and typos move Chinese text about as little as under zh-jieba-v1, which ignored
# them (benchmarks/crawl_quality.py). In a text of one script only the share of numbers and
# of short runs changes.
PARAGRAPH_WORD_SCALE = 2.0
OTHER_WORD_SCALE = 0.5
LONG_RUN = 8


@lru_cache(maxsize=4)
def _both_vocabularies(cjk: Vocabulary, listed: Vocabulary) -> dict[str, int]:
    """The numbers of the CJK words, then of the English table's words, in one dict (one lookup per piece).
    No word is in both: every CJK word holds an ideograph, no English one does."""
    both = dict(cjk.number)
    start = len(cjk.words)
    both.update((word, start + i) for i, word in enumerate(listed.words))
    return both


class _ScriptWords:
    """For ``scripts`` tokenizers: the known CJK words, the English table's words, then the
    other words and numbers of one text, numbered in that order (so one text's numbers
    index one IDF and one hash each)."""

    hashed = True

    def __init__(self, scheme: Scheme) -> None:
        self.cjk = _vocabulary(scheme)
        self.stop = _stopwords(scheme)
        self.min_length = scheme.min_token_length
        self.listed = english_vocabulary(self.stop, self.min_length, scheme.hash, scheme.bits // 8)
        self.known = _both_vocabularies(self.cjk, self.listed)
        self.listed_start = len(self.cjk.words)
        self.other_start = self.listed_start + len(self.listed.words)
        self.number: dict[str, int] = {}
        self.others: list[str] = []
        self.in_paragraphs: list[np.ndarray] = []  # numbers of words met in long runs
        self.carried_run = 0  # length of the run the last part ended in
        self.carried_words: list[np.ndarray] = []

    def names_of(self, numbers: np.ndarray) -> list[str]:
        if not len(numbers) or numbers.max() < self.listed_start:  # Chinese text: the common case
            return self.cjk.names_of(numbers)
        names = np.empty(len(numbers), dtype=object)
        for (start, words), inside in zip(
            ((0, self.cjk.words), (self.listed_start, self.listed.words), (self.other_start, self.others)),
            self._split(numbers),
        ):
            names[inside] = list(map(words.__getitem__, (numbers[inside] - start).tolist()))
        return names.tolist()

    def numbers(self, part: list[str]) -> np.ndarray:
        sequence = np.fromiter(map(self.known.get, part, repeat(-1)), dtype=np.int64, count=len(part))
        script = sequence >= self.listed_start  # the words of alphabetic scripts, kept or not
        number, others, stop, min_length = self.number, self.others, self.stop, self.min_length
        for i in np.flatnonzero(sequence < 0).tolist():
            word = part[i]
            if not is_script_word(word):
                continue
            script[i] = True
            if len(word) < min_length or word in stop:
                continue
            if word not in number:
                number[word] = self.other_start + len(others)
                others.append(word)
            sequence[i] = number[word]
        if script.any():
            self._find_runs(sequence, script)
        elif self.carried_run:
            self.carried_run, self.carried_words = 0, []
        return sequence[sequence >= 0]

    def _find_runs(self, sequence: np.ndarray, script: np.ndarray) -> None:
        """Note the words in runs of at least LONG_RUN words of alphabetic scripts (a
        paragraph, not a name or a URL in Chinese text); a run may go on in the next part."""
        edges = np.flatnonzero(np.diff(np.concatenate(([False], script, [False])).astype(np.int8)))
        starts, ends = edges[0::2], edges[1::2]
        lengths = ends - starts
        carried = self.carried_run if starts[0] == 0 else 0
        lengths[0] += carried
        for run in np.flatnonzero(lengths >= LONG_RUN).tolist():
            words = sequence[starts[run] : ends[run]]
            self.in_paragraphs.append(words[words >= 0])
        if carried and lengths[0] >= LONG_RUN:
            self.in_paragraphs += self.carried_words
        if ends[-1] == len(script):  # the last run reaches the end of the part
            words = sequence[starts[-1] : ends[-1]]
            spans_part = len(starts) == 1 and carried
            self.carried_run = int(lengths[-1])
            self.carried_words = (self.carried_words if spans_part else []) + [words[words >= 0]]
        else:
            self.carried_run, self.carried_words = 0, []

    def idf_of(self, numbers: np.ndarray) -> np.ndarray:
        idf = np.empty(len(numbers))
        cjk, listed, other = self._split(numbers)
        idf[cjk] = self.cjk.idf[numbers[cjk]]
        idf[listed] = self.listed.idf[numbers[listed] - self.listed_start]
        others = self.others
        idf[other] = [
            NUMBER_IDF if others[i][0].isdigit() else UNLISTED_WORD_IDF
            for i in (numbers[other] - self.other_start).tolist()
        ]
        words = ~cjk
        words[other] = np.array(
            [not others[i][0].isdigit() for i in (numbers[other] - self.other_start).tolist()], dtype=bool
        )
        in_paragraphs = (
            np.isin(numbers, np.concatenate(self.in_paragraphs)) if self.in_paragraphs else np.zeros(len(numbers), bool)
        )
        idf[words & in_paragraphs] *= PARAGRAPH_WORD_SCALE
        idf[words & ~in_paragraphs] *= OTHER_WORD_SCALE
        return idf

    def hashes_of(self, numbers: np.ndarray, hash_name: str, nbytes: int) -> np.ndarray:
        hashes = np.empty(len(numbers), dtype=f"<u{nbytes}")
        cjk, listed, other = self._split(numbers)
        hashes[cjk] = self.cjk.hashes(hash_name, nbytes)[numbers[cjk]]
        hashes[listed] = self.listed.hashes(hash_name, nbytes)[numbers[listed] - self.listed_start]
        function = HASHES[hash_name].function
        words = self.others
        hashes[other] = [function(words[i].encode()) for i in (numbers[other] - self.other_start).tolist()]
        return hashes

    def _split(self, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cjk = numbers < self.listed_start
        other = numbers >= self.other_start
        return cjk, ~(cjk | other), other


class _SeenWords:
    """For schemes without a fixed vocabulary: the kept words of one text, numbered as they come."""

    hashed = False

    def __init__(self, scheme: Scheme) -> None:
        self.keep = _keeps(scheme)
        self.idf = _idf_function(scheme)
        self.number: dict[str, int] = {}
        self.words: list[str] = []

    def numbers(self, part: list[str]) -> np.ndarray:
        number = self.number
        for word in filter(self.keep, dict.fromkeys(part)):
            if word not in number:
                number[word] = len(self.words)
                self.words.append(word)
        sequence = np.fromiter(map(number.get, part, repeat(-1)), dtype=np.int64, count=len(part))
        return sequence[sequence >= 0]

    def names_of(self, numbers: np.ndarray) -> list[str]:
        return list(map(self.words.__getitem__, numbers.tolist()))

    def idf_of(self, numbers: np.ndarray) -> np.ndarray:
        words = self.words
        return np.fromiter((self.idf(words[i]) for i in numbers.tolist()), dtype=np.float64, count=len(numbers))


# ---------------------------------------------------------------- weighting


_LOG_TF = [0.0] + [1.0 + math.log(c) for c in range(1, 256)]
_LOG_TF_ARRAY = np.array(_LOG_TF)


def _log_tf(count: int) -> float:
    """Sublinear term frequency, 1 + ln(count), from a table for the usual small counts."""
    return _LOG_TF[count] if count < 256 else 1.0 + math.log(count)


def _tf_weights(counts: np.ndarray, weighting: str) -> np.ndarray:
    """The term-frequency factor of each feature's weight, from its count."""
    if weighting in ("tf", "tfidf"):
        return counts.astype(np.float64)
    if weighting == "binary":
        return np.ones(len(counts))
    # log-tf and log-tfidf: the table, and math.log (not numpy's, which may round differently) beyond it.
    weights = _LOG_TF_ARRAY[np.minimum(counts, 255)]
    large = np.flatnonzero(counts >= 256)
    for i in large.tolist():
        weights[i] = _log_tf(int(counts[i]))
    return weights


def _idf_function(scheme: Scheme):
    """IDF of a feature from jieba's table (its median for unknown words; the mean over an n-gram)."""
    table, median = _idf_table()
    get = table.get
    if not tokenizer_of(scheme).words or scheme.ngram == 1:
        return lambda token: get(token, median)

    def mean_idf(token: str) -> float:
        words = token.split(_GRAM_JOINER)
        return sum(get(word, median) for word in words) / len(words)

    return mean_idf


def features(text: str, scheme: Scheme | str = DEFAULT) -> list[Feature]:
    """The weighted features a scheme extracts from a text (heaviest first when ``top_k`` is set)."""
    scheme = get_scheme(scheme)
    if tokenizer_of(scheme).weighted_input:
        return _given_features(text, scheme)
    weighted = _weighted(_segment_in_pieces(normalize(text, scheme.normalizer), scheme), scheme, in_order=True)
    return list(zip(weighted.names(), weighted.weights.tolist()))


def _given_features(line: str, scheme: Scheme) -> list[Feature]:
    """The items of a caller-weighted line, as the scheme's tokenizer reads them."""
    return tokenizer_of(scheme).read(line)


@dataclass
class _Features:
    """Distinct features and their weights: the words, then pairs of them by position."""

    words: list[str]
    weights: np.ndarray  # the words', then the pairs'
    firsts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    seconds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hashes: np.ndarray | None = None  # every feature's hash, when already known

    def names(self) -> list[str]:
        words = self.words
        pairs = zip(self.firsts.tolist(), self.seconds.tolist())
        return words + [f"{words[a]}{_GRAM_JOINER}{words[b]}" for a, b in pairs]

    def encoded(self) -> list[bytes]:
        """UTF-8 of each feature's name; a pair's joins its words' bytes, with no string built."""
        words = _encode(self.words)
        if not len(self.firsts):
            return words
        with_joiner = [word + _GRAM_JOINER_BYTES for word in words]
        firsts = map(with_joiner.__getitem__, self.firsts.tolist())
        seconds = map(words.__getitem__, self.seconds.tolist())
        return words + list(map(bytes.__add__, firsts, seconds))


def _weighted(segmented: Iterable[list[str]], scheme: Scheme, in_order: bool = False) -> _Features:
    """The distinct features of a segmentation and their weights, ready to hash and sum.

    ``segmented`` comes in pieces (see :func:`_segment_in_pieces`); only counts are kept
    between pieces, so memory stays bounded by the vocabulary, not the length of the text.
    Features come words first, then (with ``bigram_weight``) pairs of adjacent words;
    with ``in_order`` each in order of first occurrence. Order changes no fingerprint:
    the sums are exact (see :func:`_whole_units`).
    """
    tokenizer = tokenizer_of(scheme)
    if tokenizer.words and scheme.ngram == 1:
        vocabulary = _ScriptWords(scheme) if tokenizer.scripts else _vocabulary(scheme) or _SeenWords(scheme)
        return _heaviest(_weighted_numbered(segmented, scheme, vocabulary, in_order), scheme)
    return _weighted_features(_select([t for part in segmented for t in part], scheme), scheme)


# A pair of words as one number: first word's number * _PAIR_SPAN + second word's number.
_PAIR_SPAN = 1 << 31


def _weighted_numbered(
    segmented: Iterable[list[str]], scheme: Scheme, vocabulary: Vocabulary | _SeenWords, in_order: bool
) -> _Features:
    """:func:`_weighted` for word features, on word numbers in numpy.

    Every kept piece becomes its number in the vocabulary, which gives its IDF and (for
    a fixed vocabulary) its hash without a lookup by string; words and pairs are counted
    by sorting numbers.
    """
    words = _Counts(in_order)
    pairs = _Counts(in_order)
    last = np.zeros(0, dtype=np.int64)  # the last kept word of the piece before, which pairs with the next
    offset = 0  # of the piece in the sequence of kept words, for the order of first occurrence
    for part in segmented:
        sequence = vocabulary.numbers(part)
        words.add(sequence, offset)
        if scheme.bigram_weight:
            joined = np.concatenate([last, sequence])
            pairs.add(joined[:-1] * _PAIR_SPAN + joined[1:], offset - len(last))
            last = joined[-1:]
        offset += len(sequence)
    word_numbers, word_counts = words.result()
    idf = vocabulary.idf_of(word_numbers)
    weights = _tf_weights(word_counts, scheme.weighting)
    with_idf = scheme.weighting in ("tfidf", "log-tfidf")
    if with_idf:
        weights = weights * idf
    names = vocabulary.names_of(word_numbers)
    nbytes = scheme.bits // 8
    hashes = vocabulary.hashes_of(word_numbers, scheme.hash, nbytes) if vocabulary.hashed and nbytes in (4, 8) else None
    pair_numbers, pair_counts = pairs.result()
    if not len(pair_numbers):
        return _Features(names, weights, hashes=hashes)
    first_words, second_words = np.divmod(pair_numbers, _PAIR_SPAN)
    # Positions of the pair's words among the features: where their numbers sit in word_numbers.
    position = np.empty(int(word_numbers.max()) + 1, dtype=np.int64) if in_order else None
    if position is not None:
        position[word_numbers] = np.arange(len(word_numbers))
        firsts, seconds = position[first_words], position[second_words]
    else:  # word_numbers is sorted
        firsts, seconds = np.searchsorted(word_numbers, first_words), np.searchsorted(word_numbers, second_words)
    pair_weights = _tf_weights(pair_counts, scheme.weighting)
    if with_idf:
        # A pair's IDF is the mean of its two words'.
        pair_weights = pair_weights * ((idf[firsts] + idf[seconds]) / 2)
    weights = np.concatenate([weights, pair_weights * scheme.bigram_weight])
    if hashes is not None:
        function = HASHES[scheme.hash].function
        joined = [f"{names[a]}{_GRAM_JOINER}{names[b]}" for a, b in zip(firsts.tolist(), seconds.tolist())]
        pair_hashes = np.fromiter(map(function, _encode(joined)), dtype=hashes.dtype, count=len(pair_numbers))
        hashes = np.concatenate([hashes, pair_hashes])
    return _Features(names, weights, firsts, seconds, hashes)


def _distinct(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(numbers, return_counts=True)``, at a third less cost for the short arrays of one text."""
    if not len(numbers):
        return numbers, numbers
    ordered = np.sort(numbers)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.empty(len(starts), dtype=np.int64)
    counts[:-1] = starts[1:] - starts[:-1]
    counts[-1] = len(ordered) - starts[-1]
    return ordered[starts], counts


class _Counts:
    """Distinct numbers and how often each came, over pieces; sorted, or in order of first occurrence."""

    def __init__(self, in_order: bool) -> None:
        self.in_order = in_order
        self.numbers = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(0, dtype=np.int64)
        self.firsts = np.zeros(0, dtype=np.int64)  # position of each number's first occurrence

    def add(self, sequence: np.ndarray, offset: int) -> None:
        if self.in_order:
            numbers, firsts, counts = np.unique(sequence, return_index=True, return_counts=True)
            firsts += offset
        else:
            numbers, counts = _distinct(sequence)
            firsts = self.firsts[:0]
        if not len(self.numbers):
            self.numbers, self.counts, self.firsts = numbers, counts, firsts
            return
        # Later pieces: merge, keeping one entry per number (memory bounded by the distinct numbers).
        merged, inverse = np.unique(np.concatenate([self.numbers, numbers]), return_inverse=True)
        total = np.zeros(len(merged), dtype=np.int64)
        np.add.at(total, inverse, np.concatenate([self.counts, counts]))
        if self.in_order:
            first = np.full(len(merged), np.iinfo(np.int64).max)
            np.minimum.at(first, inverse, np.concatenate([self.firsts, firsts]))
            self.firsts = first
        self.numbers, self.counts = merged, total

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.in_order:
            return self.numbers, self.counts
        order = np.argsort(self.firsts, kind="stable")
        return self.numbers[order], self.counts[order]


def _weighted_features(selected: list[str], scheme: Scheme) -> _Features:
    """Count and weigh selected features (character windows and word n-grams), in order of first occurrence."""
    counts = Counter(selected)
    names = list(counts)
    weights = _tf_weights(np.fromiter(counts.values(), dtype=np.int64, count=len(names)), scheme.weighting)
    if scheme.weighting in ("tfidf", "log-tfidf"):
        weights = weights * np.fromiter(map(_idf_function(scheme), names), dtype=np.float64, count=len(names))
    return _heaviest(_Features(names, weights), scheme)


def _heaviest(features: _Features, scheme: Scheme) -> _Features:
    """With ``top_k``: the heaviest features, heaviest first, ties in code point order."""
    if scheme.top_k is None or len(features.weights) <= scheme.top_k:
        return features
    names, listed = features.names(), features.weights.tolist()
    order = sorted(range(len(names)), key=lambda i: (-listed[i], names[i]))[: scheme.top_k]
    return _Features([names[i] for i in order], features.weights[order])


# ---------------------------------------------------------------- hashing and summing


def fingerprint_features(weighted: Iterable[Feature] | Iterable[str], scheme: Scheme | str = DEFAULT) -> int:
    """SimHash of caller-supplied features: ``(token, weight)`` pairs or bare tokens (weight 1).

    Repeated tokens add their weights. Each feature is hashed to ``scheme.bits`` bits
    with the scheme's hash; bit i of the result is set where the weights of features
    with bit i set outweigh the others.

    >>> fingerprint_features([("中国", 2.0), ("知乎", 1.0), ("读者", 2.0)]) == fingerprint(
    ...     "中国^2 知乎^1 读者^2", "weighted-v1"
    ... )
    True
    """
    scheme = get_scheme(scheme)
    if tokenizer_of(scheme).in_order_sums:
        pairs = [(item, 1.0) if isinstance(item, str) else (item[0], float(item[1])) for item in weighted]
        return _simhash_in_order([t for t, _ in pairs], [w for _, w in pairs], scheme)
    totals: dict[str, float] = {}
    for item in weighted:
        token, weight = (item, 1.0) if isinstance(item, str) else item
        totals[token] = totals.get(token, 0.0) + float(weight)
    return _simhash(list(totals), list(totals.values()), scheme)


def _simhash(unique_tokens: list[str], weights: list[float] | np.ndarray, scheme: Scheme) -> int:
    """The weighted bit sums of distinct tokens (see :func:`_simhash_encoded`)."""
    return _simhash_encoded(_encode(unique_tokens), weights, scheme)


def _simhash_encoded(encoded: list[bytes], weights: list[float] | np.ndarray, scheme: Scheme) -> int:
    """The weighted bit sums of distinct features, vectorised: one product, no loop over bits.

    The weights are rounded to whole units first (see :func:`_whole_units`), so every
    sum is an exact integer: the same on every machine, in any order of addition. Float
    sums would differ in the last bit between BLAS builds, and a sum near zero flips its
    bit. einsum also keeps BLAS, and its threads, out of worker processes.
    """
    if not encoded:
        return 0
    return _simhash_bits(_bits_of(encoded, scheme), weights)


def _simhash_bits(bits: np.ndarray, weights: list[float] | np.ndarray) -> int:
    """The signs of the weighted bit sums, one row of ``bits`` per feature (see :func:`_simhash_encoded`)."""
    units = _whole_units(np.asarray(weights, dtype=np.float64))
    signed_sums = 2.0 * np.einsum("i,ij->j", units, bits) - units.sum()
    return _pack(signed_sums > 0)


def _whole_units(weights: np.ndarray) -> np.ndarray:
    """The weights as integers (in float64) on one power-of-two scale, their absolute sum below 2**53.

    The largest weight keeps about 52 - log2(len(weights)) bits, so the rounding is
    far below anything that decides a bit, and every partial sum is exactly representable.
    """
    largest = float(np.abs(weights).max())
    if not math.isfinite(largest):
        raise SchemeError("feature weights must be finite numbers")
    if largest == 0.0:
        return weights
    # Each |weight| < 2**exponent, so each unit count stays below 2**52 / len(weights).
    exponent = math.frexp(largest)[1]
    return np.rint(np.ldexp(weights, 52 - len(weights).bit_length() - exponent))


def _hash_bits(feature_tokens: list[str], scheme: Scheme) -> np.ndarray:
    """One row of 0/1 per feature: bit i of the feature's hash in column i."""
    return _bits_of(_encode(feature_tokens), scheme)


def _encode(tokens: list[str]) -> list[bytes]:
    try:
        return list(map(str.encode, tokens))
    except UnicodeEncodeError:  # lone surrogates, which only unnormalised text keeps
        return [token.encode("utf-8", "surrogatepass") for token in tokens]


def _bits_of(encoded: list[bytes], scheme: Scheme) -> np.ndarray:
    """One row of 0/1 per encoded feature: bit i of its hash in column i."""
    hash_function = HASHES[scheme.hash].function
    nbytes = scheme.bits // 8
    if nbytes in (4, 8):
        # Hash values as little-endian machine integers: no bytes object per feature.
        hashed = np.array(list(map(hash_function, encoded)), dtype=f"<u{nbytes}").view(np.uint8)
    else:
        hashed = np.frombuffer(b"".join([hash_function(e).to_bytes(nbytes, "little") for e in encoded]), dtype=np.uint8)
    return np.unpackbits(hashed.reshape(len(encoded), nbytes), axis=1, bitorder="little")


# Bit j of each byte value, as a 256 x 8 matrix.
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.float64)


def _simhash_values(values: np.ndarray, weights: np.ndarray) -> int:
    """:func:`_simhash_bits` of hash values, without unpacking their bits one per byte.

    The weights are summed per byte position and byte value first (a bincount, 256 sums
    for each of the 4 or 8 byte positions), and each byte value's bits then pick up
    those sums: exact integers again, so the result is :func:`_simhash_bits`'s.
    """
    nbytes = values.dtype.itemsize
    units = _whole_units(np.asarray(weights, dtype=np.float64))
    by_byte = values.view(np.uint8).reshape(len(values), nbytes) + _BYTE_OFFSETS[:nbytes]
    sums = np.bincount(by_byte.ravel(), weights=np.repeat(units, nbytes), minlength=256 * nbytes)
    set_weight = (sums.reshape(nbytes, 256) @ _BYTE_BITS).ravel()  # bit 8k + j: byte k, bit j
    return _pack(2.0 * set_weight - units.sum() > 0)


_BYTE_OFFSETS = np.arange(8, dtype=np.intp) * 256


def _simhash_weighted(weighted: _Features, scheme: Scheme) -> int:
    if weighted.hashes is not None:
        return _simhash_values(weighted.hashes, weighted.weights) if len(weighted.hashes) else 0
    return _simhash_encoded(weighted.encoded(), weighted.weights, scheme)


def _pack(set_bits: np.ndarray) -> int:
    """The integer whose bit i is ``set_bits[i]``."""
    return int.from_bytes(np.packbits(set_bits, bitorder="little").tobytes(), "little")


# Tokenizers with in_order_sums reproduce a program summing in floating point, feature after
# feature, and must add in that order: rounding makes the sums order-dependent, and near
# zero the order can flip a bit (1e16 + 1 - 1e16 is 0 in doubles, 1 exactly). So no merging
# of repeated tokens and no matrix product, whose order BLAS chooses.


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

    A text in which the scheme finds no features raises :class:`NoFeaturesError`: any number
    returned for it would be the same for all such texts, at distance 0 from each other.

    >>> fingerprint("，。！")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    simhash_store.errors.NoFeaturesError: the text has no features under scheme ...
    """
    scheme = get_scheme(scheme)
    value = fingerprint_if_any(text, scheme)
    if value is None:
        raise NoFeaturesError(no_features_message("the text", scheme))
    return value


def no_features_message(what: str, scheme: Scheme, both: bool = False) -> str:
    """The one line that says a text (``both``: each of two) has no features, and what that means."""
    return (
        f"{what} {'have' if both else 'has'} no features under scheme {scheme.name} (empty, punctuation only, "
        f"or no words the scheme reads), so {'neither has a' if both else 'it has no'} fingerprint"
    )


def fingerprint_if_any(text: str, scheme: Scheme | str = DEFAULT) -> int | None:
    """Like :func:`fingerprint`, but None for a text in which the scheme finds no features.

    >>> fingerprint_if_any("，。！") is None
    True
    """
    scheme = get_scheme(scheme)
    if tokenizer_of(scheme).weighted_input:
        given = _given_features(text, scheme)
        return fingerprint_features(given, scheme) if given else None
    weighted = _weighted(_segment_in_pieces(normalize(text, scheme.normalizer), scheme), scheme)
    if not weighted.words:
        return None
    return _simhash_weighted(weighted, scheme)


def fingerprint_segmented(segmented: list[str], scheme: Scheme | str = DEFAULT) -> int:
    """The fingerprint of a text from its :func:`segment` output under the same scheme.

    >>> fingerprint_segmented(segment("保护人民，制定本法。")) == fingerprint("保护人民，制定本法。")
    True
    """
    scheme = get_scheme(scheme)
    return _simhash_weighted(_weighted([segmented], scheme), scheme)


def bit_sums(weighted: Iterable[Feature], scheme: Scheme | str = DEFAULT) -> np.ndarray:
    """The signed weight sum behind each bit of :func:`fingerprint_features` (bit i at index i).

    Bit i is set where its sum is above zero; a sum near zero is a bit that a small edit
    can flip (``simhash-store explain`` shows them). Exact integer sums, scaled back to
    the weights' units.

    >>> sums = bit_sums(features("保护人民，制定本法。"))
    >>> _pack(sums > 0) == fingerprint("保护人民，制定本法。")
    True
    """
    scheme = get_scheme(scheme)
    totals: dict[str, float] = {}
    for token, weight in weighted:
        totals[token] = totals.get(token, 0.0) + float(weight)
    if not totals:
        return np.zeros(scheme.bits)
    weights = np.array(list(totals.values()), dtype=np.float64)
    units = _whole_units(weights)
    scale = float(np.abs(units).max()) / float(np.abs(weights).max()) if np.abs(weights).max() else 1.0
    signed_sums = 2.0 * np.einsum("i,ij->j", units, _bits_of(_encode(list(totals)), scheme)) - units.sum()
    return signed_sums / scale
