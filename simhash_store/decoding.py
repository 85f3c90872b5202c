"""Bytes to text: which encoding a document is in, told from its bytes alone. No files, no database.

UTF-8 (BOM or not), UTF-16/32 with a BOM, UTF-16 without one when it is plainly text,
GB18030 (GBK, GB2312) and Big5. A few invalid bytes in otherwise good text (a file cut
mid-character, a stray byte) become U+FFFD and are counted in ``Decoded.replaced``;
the caller warns, the document is still read.

>>> decode("中文".encode("gb18030")).encoding
'gb18030'
>>> decode("一些学院同时要去".encode("gb18030")).encoding  # also valid UTF-8, as 'һЩѧԺͬʱҪȥ'
'gb18030'
>>> decode("中文内容".encode("utf-8")[:-1]).replaced
2
"""

from __future__ import annotations

import codecs
import itertools
import math
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files

# Why a document has no text (reasons shared with corpus.Skip): the first two are
# deliberate skips, the last a failure.
EMPTY = "empty"
BINARY = "binary"
UNDECODABLE = "undecodable"

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Legacy encodings of Chinese sites, told apart by _best_legacy_reading.
_LEGACY = ("gb18030", "big5")
# Whether a file is binary is judged on its first bytes only, so that a huge file
# (or a sparse one) can be judged without reading the rest: see is_binary_start.
SAMPLE_BYTES = 8192


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str
    replaced: int = 0  # invalid bytes replaced by U+FFFD


class DecodeError(ValueError):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail


def decode(data: bytes) -> Decoded:
    """Text of a file's bytes, or :class:`DecodeError` with reason ``empty`` (nothing but
    whitespace), ``binary`` or ``undecodable``."""
    decoded = _decode(data)
    if not decoded.text.strip():
        raise DecodeError(EMPTY)
    return decoded


def is_binary_start(start: bytes) -> bool:
    """Whether :func:`decode` calls any data longer than ``start`` (its first SAMPLE_BYTES bytes) binary."""
    sample = start[:SAMPLE_BYTES]
    if any(sample.startswith(bom) for bom, _ in _BOMS) or not sample.strip():
        return False
    return _looks_binary(sample) and _utf16_parity(sample) is None


def _decode(data: bytes) -> Decoded:
    if not data.strip():
        raise DecodeError(EMPTY)
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            decoded = _decode_counting(data, encoding)
            if decoded is None:
                raise DecodeError(UNDECODABLE, f"{encoding} byte order mark, then more than a few invalid bytes")
            return Decoded(decoded[0], encoding, decoded[1])
    sample = data[:SAMPLE_BYTES]
    if _looks_binary(sample):
        utf16_order = _utf16_parity(sample)
        if utf16_order is None:
            raise DecodeError(BINARY)
        decoded = _decode_counting(data, utf16_order)
        if decoded is None:
            raise DecodeError(BINARY)  # UTF-16 text at the start, something else after it
        return Decoded(decoded[0], utf16_order, decoded[1])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_invalid_utf8(data)
    return _utf8_or_legacy(data, text)


# ------------------------------------------------------------ invalid bytes


_counts = threading.local()


class _TooMany(Exception):
    pass


def _count_and_replace(error: UnicodeDecodeError) -> tuple[str, int]:
    _counts.value += error.end - error.start
    if _counts.value > _counts.limit:
        raise _TooMany  # stop early: text in another encoding fails every few bytes
    return "\ufffd", error.end


# Used for decoding only, so the handler always gets a UnicodeDecodeError (typeshed asks for any UnicodeError).
codecs.register_error("simhash-store-count", _count_and_replace)  # type: ignore[arg-type]


def _decode_counting(data: bytes, encoding: str, limit: int | None = None) -> tuple[str, int] | None:
    """(text, number of invalid bytes), each run of invalid bytes replaced by one U+FFFD;
    None when there are more than ``limit`` (by default what _tolerated allows)."""
    try:
        return data.decode(encoding), 0
    except UnicodeDecodeError:
        pass
    _counts.value, _counts.limit = 0, _tolerated(data) if limit is None else limit
    try:
        text = data.decode(encoding, "simhash-store-count")
    except _TooMany:
        return None
    return text, _counts.value


def _tolerated(data: bytes) -> int:
    """How many invalid bytes still make "a few" in otherwise good text: 0.5%, at least 4.

    Text in another encoding has far more: GB18030 read as UTF-8 fails on about every
    other byte, and so does UTF-8 read as GB18030 wherever a line ends.
    """
    return max(4, len(data) // 200)


# ------------------------------------------------------------ UTF-16 without a byte order mark


def _utf16_parity(sample: bytes, *, convincing: bool = False) -> str | None:
    """``utf-16-le`` or ``-be`` when a sample with zero bytes is plainly UTF-16 text without a BOM, else None.

    Plainly: it decodes to printable text (no U+0000, controls, private-use, unassigned
    or lone surrogate characters), and its CJK characters, when it has 20 or more,
    are plausible Chinese. Read in the wrong byte order, text fails that at once. When
    both orders pass (short texts), the one with more ASCII characters wins: ASCII is
    where UTF-16 text gets its zero bytes. Text without zero bytes (Chinese without a
    single ASCII character) is taken for UTF-16 only when ``convincing``: 8 or more
    Chinese characters that score as real text does.
    """
    if len(sample) < 4:
        return None
    readings = []
    for encoding in ("utf-16-le", "utf-16-be"):
        units = sample[: len(sample) // 2 * 2]
        high = units[-1] if encoding == "utf-16-le" else units[-2]
        if 0xD8 <= high <= 0xDB:
            units = units[:-2]  # a surrogate pair cut by the sample's end
        try:
            text = units.decode(encoding)
        except UnicodeDecodeError:
            continue
        if sum(1 for c in text if not _is_text_character(c)) > len(text) // 100:
            continue
        score = _plausibility(text)
        if score is not None and _cjk_count(text) >= 20 and score < _IMPLAUSIBLE:
            continue
        if convincing and (score is None or score < _CONVINCING or _cjk_count(text) < 8):
            continue
        readings.append((sum(1 for c in text if c < "\x80"), -1.0 if score is None else score, encoding))
    return max(readings)[2] if readings else None


def _is_text_character(character: str) -> bool:
    if character in "\t\n\r\f":
        return True
    category = unicodedata.category(character)
    return category[0] != "C" or category == "Cf"  # format characters (ZWJ, soft hyphen) are text


# ------------------------------------------------------------ UTF-8, GB18030 and Big5


def _utf8_or_legacy(data: bytes, text: str) -> Decoded:
    """Valid UTF-8 is UTF-8, unless its letters read as garbage in UTF-8 and as plausible Chinese
    in GB18030 or Big5.

    Chinese text in GB18030 is valid UTF-8 surprisingly often when it is short (2% of
    2-character snippets of the corpus, 0.2% at 4 characters, none from 12 on) or repetitive
    (``一些学院同时要去``, eight characters that are valid UTF-8, repeated thirty times is
    240): ``一些学院同时要去`` in GB18030 reads ``һЩѧԺͬʱҪȥ`` as UTF-8, seven scripts in
    eight letters. So a UTF-8 reading is looked at again, whatever its length, when it has no
    CJK character and most of its non-ASCII letters (judged on the first thousand) are
    ones real text seldom uses (see _common_outside_cjk); and the legacy reading wins only if
    it decodes without an invalid byte, scores as real Chinese does, and holds nothing but CJK
    and ASCII. A UTF-8 text with CJK characters, or in a European script, stays UTF-8. The
    longer the text, the less likely a false legacy reading: bytes of another script fail a
    strict GB18030 or Big5 decoding at the first misaligned line end.
    """
    if len(data) == len(text) or _CJK.search(text):  # ASCII, or UTF-8 with CJK characters
        return Decoded(text, "utf-8")
    found = list(itertools.islice(_NON_ASCII.finditer(text), _JUDGED_CHARACTERS))
    common = sum(1 for match in found if _common_outside_cjk(text, match.start()))
    if common * 2 > len(found):
        return Decoded(text, "utf-8")
    legacy = _best_legacy_reading(data, strict=True)
    if legacy is not None and legacy.score >= _CONVINCING and _foreign(legacy.text) == 0:
        return Decoded(legacy.text, legacy.encoding)
    return Decoded(text, "utf-8")


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_CJK = re.compile(r"[\u2e80-\U0010ffff]")  # CJK and everything above it, as _cjk_count counts
# The first this many non-ASCII characters decide whether a UTF-8 reading looks like garbage:
# a GB18030 text read as UTF-8 is garbage throughout, and a long text is judged in time.
_JUDGED_CHARACTERS = 1024
# A legacy reading this plausible (mean log-frequency of its characters) is Chinese:
# short snippets of real text score 9 to 13; UTF-8 letters of European scripts read
# as GB18030 (café as caf茅) reach 8.7.
_CONVINCING = 9.0


def _common_outside_cjk(text: str, position: int) -> bool:
    """Whether the non-ASCII, non-CJK character at ``position`` is one real UTF-8 text commonly holds.

    Latin-1 and Latin Extended-A letters, the Vietnamese and Romanian letters of
    Latin Extended-B, Latin Extended Additional, basic Greek, basic Cyrillic, Hebrew
    and Arabic letters, punctuation and symbols, and combining accents on a Latin
    letter. Not IPA letters, spacing modifiers, Armenian, or the Cyrillic and Hebrew
    marks that GB18030 pairs land on when read as UTF-8.
    """
    code = ord(text[position])
    if 0x0300 <= code <= 0x036F:
        before = text[position - 1] if position else " "
        return before.isascii() and before.isalpha() or "\u00c0" <= before <= "\u017f"
    return (
        0x00A0 <= code <= 0x017F
        or code in _LATIN_EXTENDED_B_IN_USE
        or 0x0370 <= code <= 0x03FF
        or 0x0400 <= code <= 0x045F
        or 0x05D0 <= code <= 0x05EA
        or 0x0620 <= code <= 0x064A
        or 0x1E00 <= code <= 0x1EFF
        or 0x2000 <= code <= 0x2BFF
    )


_LATIN_EXTENDED_B_IN_USE = frozenset({0x01A0, 0x01A1, 0x01AF, 0x01B0, 0x0218, 0x0219, 0x021A, 0x021B})


def _decode_invalid_utf8(data: bytes) -> Decoded:
    """Not valid UTF-8: UTF-8 with a few bytes replaced, or GB18030, or Big5, whichever reads best."""
    utf8 = _decode_counting(data, "utf-8")
    legacy = _best_legacy_reading(data, strict=False)
    if (
        (legacy is None or legacy.score < _CONVINCING)
        and len(data) % 2 == 0
        and (encoding := _utf16_parity(data[:SAMPLE_BYTES], convincing=True))
    ):
        utf16 = _decode_counting(data, encoding)
        if utf16 is not None and (legacy is None or _reads_better(utf16[0], legacy.score)):
            return Decoded(utf16[0], encoding, utf16[1])
    if utf8 is not None:
        utf8_text, utf8_replaced = utf8
        # U+FFFD counts as a character of score 0 here, so that a reading is not made
        # more plausible by the bytes it could not read.
        utf8_score = _non_ascii_plausibility(utf8_text)
        legacy_score = -1.0 if legacy is None else _non_ascii_plausibility(legacy.text)
        if (
            legacy is not None
            and (legacy_score, -legacy.replaced) > (utf8_score, -utf8_replaced)
            and (legacy.score >= _IMPLAUSIBLE or legacy.replaced < utf8_replaced)
        ):
            return Decoded(legacy.text, legacy.encoding, legacy.replaced)
        return Decoded(utf8_text, "utf-8", utf8_replaced)
    if legacy is not None and (legacy.score >= _IMPLAUSIBLE or _cjk_count(legacy.text) < _IMPLAUSIBLE_AFTER):
        return Decoded(legacy.text, legacy.encoding, legacy.replaced)
    raise DecodeError(UNDECODABLE, "not UTF-8, UTF-16, GB18030 or Big5")


@dataclass(frozen=True)
class _Reading:
    text: str
    encoding: str
    replaced: int
    score: float  # _plausibility, -1 without CJK characters


def _best_legacy_reading(data: bytes, *, strict: bool) -> _Reading | None:
    """GB18030 (a superset of GBK and GB2312) or Big5, whichever reads as more plausible Chinese.

    Both codecs accept most byte pairs, so the bytes of one usually decode under the
    other too, into rare characters. The reading whose characters are more frequent in
    jieba's dictionary wins: on Wikipedia paragraphs cut to 10 characters this picked
    the right encoding every time (200 GB18030 and 52 Big5 samples), where a statistical
    detector (charset-normalizer) took a quarter of the GB18030 ones for Big5. Without
    ``strict``, readings with a few invalid bytes (replaced) take part too.
    """
    readings = []
    for encoding in _LEGACY:
        try:
            readings.append(_reading(data.decode(encoding), encoding, 0))
        except UnicodeDecodeError:
            continue
    if not strict and not any(r.score >= _IMPLAUSIBLE for r in readings):
        # No plausible clean reading: let readings with a few invalid bytes take part (slower).
        for encoding in _LEGACY:
            decoded = _decode_counting(data, encoding)
            if decoded is not None and decoded[1]:
                readings.append(_reading(decoded[0], encoding, decoded[1]))
    if not readings:
        return None
    return max(readings, key=lambda r: (r.score, -r.replaced, r.encoding == "gb18030"))


def _reading(text: str, encoding: str, replaced: int) -> _Reading:
    score = _plausibility(text, replacements=True)
    return _Reading(text, encoding, replaced, -1.0 if score is None else score)


def _foreign(text: str) -> int:
    """Characters outside CJK and ASCII, which GB18030 and Big5 text seldom holds."""
    return sum(1 for _ in _FOREIGN.finditer(text))


_FOREIGN = re.compile("[\x80-\u2e7f]")


# Random high bytes decoded as GB18030 or Big5 score about 3.6 (at most 4.7 in 200 tries);
# real simplified text about 10, traditional about 7. Judged only on texts long enough.
_IMPLAUSIBLE = 5.0
_IMPLAUSIBLE_AFTER = 50


def _looks_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    controls = sum(1 for byte in sample if byte < 32 and byte not in (9, 10, 12, 13, 27))
    return controls > len(sample) // 100 + 1


def _cjk_count(text: str) -> int:
    return sum(1 for c in text if c >= "\u2e80" and c != "\ufffd")


def _plausibility(text: str, *, replacements: bool = False) -> float | None:
    """Mean log-frequency of the text's CJK characters in jieba's dictionary (None without any).

    With ``replacements``, each U+FFFD counts as a character of frequency 0, so that a
    reading does not gain from the bytes it could not read.
    """
    frequencies = _character_frequencies()  # has no U+FFFD: it scores 0
    scores = [frequencies.get(c, 0.0) for c in text if c >= "\u2e80"]
    counted = len(scores) if replacements else len(scores) - text.count("\ufffd")
    return sum(scores) / counted if counted else None


def plainly_chinese(text: str) -> bool:
    """Whether a GB18030 or Big5 reading is plainly Chinese, not Latin text whose letters past ASCII
    came in pairs (``ção`` read as ``玢o``): its characters score as Chinese text does (at least
    :data:`_IMPLAUSIBLE`, whatever its length), and at most a quarter of them sit between two ASCII
    letters, as the pairs inside Latin words do (``popula玢o``, ``condi珲es``) and Chinese seldom does.

    >>> plainly_chinese("中华人民共和国刑法"), plainly_chinese("A popula玢o e as condi珲es")
    (True, False)
    """
    score = _plausibility(text, replacements=True)
    if score is None or score < _IMPLAUSIBLE:
        return False
    sandwiched = _SANDWICHED.subn("", text)[1]  # counted in C: no list of what matched
    return sandwiched <= _cjk_count(text) // 4


_SANDWICHED = re.compile("(?<=[A-Za-z])[\u2e80-\U0010ffff](?=[A-Za-z])")


def _reads_better(text: str, score: float) -> bool:
    """``text`` has CJK characters and they score above ``score``."""
    plausibility = _plausibility(text)
    return plausibility is not None and plausibility > score


def _non_ascii_plausibility(text: str) -> float:
    """Like _plausibility with replacements, over every non-ASCII character (others score 0); -1 without any."""
    frequencies = _character_frequencies()
    # Counted per distinct character: memory follows the alphabet, not the text (a list of every
    # non-ASCII character took 657 MB for 20 MB of Chinese with one stray byte).
    total = score = 0.0
    for character, count in Counter(text).items():
        if character > "\x7f":
            total += count
            score += frequencies.get(character, 0.0) * count
    return score / total if total else -1.0


@lru_cache(maxsize=1)
def _character_frequencies() -> dict[str, float]:
    """log(1 + summed frequency of the words it occurs in) for each character of jieba's dictionary."""
    counts: Counter[str] = Counter()
    with files("jieba").joinpath("dict.txt").open(encoding="utf-8") as lines:
        for line in lines:
            word, frequency = line.split(" ", 2)[:2]
            for character in word:
                counts[character] += int(frequency)
    return {character: math.log1p(count) for character, count in counts.items()}
