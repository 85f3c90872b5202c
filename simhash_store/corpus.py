"""Reading a corpus: walk directories, name documents, decode bytes, read JSONL. No database here.

Real corpora are messy, so nothing here raises on a bad input: each one becomes a
:class:`Skip` with a reason, and whether that reason is a failure (the input should
have been read) or a deliberate skip (it is not text) is part of the reason.

>>> decode("中文".encode("gb18030")).encoding
'gb18030'
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import math
import os
import stat
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path, PurePosixPath
from typing import IO, Iterable, Iterator

# Reasons an input is not stored. Deliberate skips are not errors: the input is not text.
EMPTY = "empty"
BINARY = "binary"
NO_WORDS = "no words"
# Failures: the input should have been readable text.
UNREADABLE = "unreadable"
UNDECODABLE = "undecodable"
BROKEN_SYMLINK = "broken symlink"
SYMLINK_LOOP = "symlink loop"
NOT_FOUND = "not found"
BAD_KEY = "bad key"
BAD_RECORD = "bad record"

DELIBERATE = frozenset({EMPTY, BINARY, NO_WORDS})

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Legacy encodings of Chinese sites, told apart by _decode_legacy_chinese.
_LEGACY = ("gb18030", "big5")


@dataclass(frozen=True)
class Source:
    """A document to read: its key and where its bytes are (a file) or its text (a JSONL record)."""

    key: str
    path: str | None = None  # a file's path as a string: cheaper to make and to send to workers than Path
    text: str | None = None
    size: int = 0
    stamp: str | None = None  # "size:mtime_ns" of a file, to recognise it unchanged without reading it


@dataclass(frozen=True)
class Skip:
    """An input that is not stored, and why (``where`` is a path or ``FILE:LINE``)."""

    where: str
    reason: str
    detail: str = ""

    @property
    def deliberate(self) -> bool:
        return self.reason in DELIBERATE

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str


class DecodeError(ValueError):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail


def digest(data: bytes) -> bytes:
    """Content digest for change detection (BLAKE2b, 128 bits)."""
    return hashlib.blake2b(data, digest_size=16).digest()


def _looks_binary(data: bytes) -> bool:
    sample = data[:8192]
    if b"\x00" in sample:
        return True
    controls = sum(1 for byte in sample if byte < 32 and byte not in (9, 10, 12, 13, 27))
    return controls > len(sample) // 100 + 1


def decode(data: bytes) -> Decoded:
    """Text of a file's bytes: UTF-8 (BOM or not), UTF-16/32 with BOM, GB18030/GBK or Big5.

    Raises :class:`DecodeError` with reason ``empty`` (nothing but whitespace),
    ``binary`` or ``undecodable``.
    """
    decoded = _decode(data)
    if not decoded.text.strip():
        raise DecodeError(EMPTY)
    return decoded


def _decode(data: bytes) -> Decoded:
    if not data.strip():
        raise DecodeError(EMPTY)
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return Decoded(data.decode(encoding), encoding)
            except UnicodeDecodeError as exc:
                raise DecodeError(UNDECODABLE, f"{encoding} byte order mark, then {exc.reason}") from None
    if _looks_binary(data):
        raise DecodeError(BINARY)
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    return _decode_legacy_chinese(data)


def _decode_legacy_chinese(data: bytes) -> Decoded:
    """GB18030 (a superset of GBK and GB2312) or Big5, whichever reads as more plausible Chinese.

    Both codecs accept most byte pairs, so the bytes of one usually decode under the
    other too, into rare characters. The reading whose characters are more frequent in
    jieba's dictionary wins: on Wikipedia paragraphs cut to 10 characters this picked
    the right encoding every time (200 GB18030 and 52 Big5 samples), where a statistical
    detector (charset-normalizer) took a quarter of the GB18030 ones for Big5.
    """
    readings = []
    for encoding in _LEGACY:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        score = _plausibility(text)
        readings.append((-1.0 if score is None else score, encoding == "gb18030", encoding, text))
    if readings:
        score, _, encoding, text = max(readings)
        if score >= _IMPLAUSIBLE or _cjk_count(text) < _IMPLAUSIBLE_AFTER:
            return Decoded(text, encoding)
    raise DecodeError(UNDECODABLE, "not UTF-8, UTF-16 with BOM, GB18030 or Big5")


# Random high bytes decoded as GB18030 or Big5 score about 3.6 (at most 4.7 in 200 tries);
# real simplified text about 10, traditional about 7. Judged only on texts long enough.
_IMPLAUSIBLE = 5.0
_IMPLAUSIBLE_AFTER = 50


def _cjk_count(text: str) -> int:
    return sum(1 for c in text if c >= "\u2e80")


def _plausibility(text: str) -> float | None:
    """Mean log-frequency of the text's CJK characters in jieba's dictionary (None without any)."""
    frequencies = _character_frequencies()
    scores = [frequencies.get(c, 0.0) for c in text if c >= "\u2e80"]
    return sum(scores) / len(scores) if scores else None


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


# ------------------------------------------------------------ walking


def _matches(key: str, patterns: Iterable[str]) -> bool:
    path = PurePosixPath(key)
    return any(path.match(pattern) for pattern in patterns)


def walk(
    paths: Iterable[str | Path],
    *,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    hidden: bool = False,
    prefix: str = "",
) -> Iterator[Source | Skip]:
    """Files under the given paths, in a stable order, as Sources keyed as users expect.

    A file found under a directory argument is keyed by its path relative to that
    directory with ``/`` separators; a file named directly by the path as given.
    ``include``/``exclude`` are glob patterns matched against that relative key
    (from the right, so ``*.txt`` matches at any depth). Hidden files and directories
    are left out unless ``hidden``. Symlinks are followed, loops detected.
    """
    include, exclude = list(include), list(exclude)

    def wanted(relative: str) -> bool:
        if include and not _matches(relative, include):
            return False
        return not (exclude and _matches(relative, exclude))

    for argument in paths:
        if Path(argument).is_dir():
            yield from _walk_directory(Path(argument), prefix, wanted, hidden)
        else:
            yield file_source(argument, prefix + str(argument).replace(os.sep, "/"))


def file_source(argument: str | Path, key: str | None = None) -> Source | Skip:
    """A file named directly: a Source keyed by the path as given, or a Skip saying why not."""
    path, shown = Path(argument), str(argument)
    try:
        info = path.stat()
    except FileNotFoundError:
        return Skip(shown, BROKEN_SYMLINK if path.is_symlink() else NOT_FOUND)
    except OSError as exc:
        return Skip(shown, SYMLINK_LOOP if exc.errno == errno.ELOOP else UNREADABLE, exc.strerror or "")
    if stat.S_ISDIR(info.st_mode):
        return Skip(shown, UNREADABLE, "a directory")
    if not stat.S_ISREG(info.st_mode):
        return Skip(shown, UNREADABLE, "not a regular file")
    return Source(key if key is not None else shown.replace(os.sep, "/"), shown, size=info.st_size, stamp=_stamp(info))


def _stamp(info: os.stat_result) -> str:
    return f"{info.st_size}:{info.st_mtime_ns}"


def _walk_directory(root: Path, prefix: str, wanted, hidden: bool) -> Iterator[Source | Skip]:
    root_info = root.stat()
    visited = {(root_info.st_dev, root_info.st_ino)}
    stack = [(str(root), "")]
    while stack:
        directory, relative_dir = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            yield Skip(str(directory), UNREADABLE, exc.strerror or "")
            continue
        subdirectories = []
        for entry in entries:
            relative = f"{relative_dir}{entry.name}"
            if not hidden and entry.name.startswith("."):
                continue
            try:
                info = entry.stat(follow_symlinks=True)
            except FileNotFoundError:
                if wanted(relative):
                    yield Skip(entry.path, BROKEN_SYMLINK)
                continue
            except OSError as exc:
                if wanted(relative):
                    yield Skip(entry.path, SYMLINK_LOOP if exc.errno == errno.ELOOP else UNREADABLE, exc.strerror or "")
                continue
            if stat.S_ISDIR(info.st_mode):
                identity = (info.st_dev, info.st_ino)
                if identity in visited:
                    yield Skip(entry.path, SYMLINK_LOOP, "directory already visited")
                    continue
                visited.add(identity)
                subdirectories.append((entry.path, relative + "/"))
            elif stat.S_ISREG(info.st_mode):
                if wanted(relative):
                    yield Source(prefix + relative, entry.path, size=info.st_size, stamp=_stamp(info))
            elif wanted(relative):
                yield Skip(entry.path, UNREADABLE, "not a regular file")
        stack.extend(reversed(subdirectories))


# ------------------------------------------------------------ JSONL


def read_jsonl(
    stream: IO[bytes], name: str, *, key_field: str = "key", text_field: str = "text", prefix: str = ""
) -> Iterator[Source | Skip]:
    """Records of a JSONL stream, one object per line; broken lines become Skips naming the line."""
    for where, record in _jsonl_rows(stream, name):
        if isinstance(record, Skip):
            yield record
            continue
        key, text = record.get(key_field), record.get(text_field)
        if not isinstance(key, (str, int)) or isinstance(key, bool) or key == "":
            yield Skip(where, BAD_RECORD, f"no {key_field!r} field with a string or integer")
            continue
        if not isinstance(text, str):
            yield Skip(where, BAD_RECORD, f"no {text_field!r} field with a string")
            continue
        yield Source(prefix + str(key), text=text, size=len(text.encode("utf-8", "surrogatepass")))


# ------------------------------------------------------------ existing fingerprints (import)


@dataclass(frozen=True)
class FingerprintRecord:
    key: str
    fingerprint: int


def parse_fingerprint(value: object, form: str = "auto") -> int:
    """An unsigned 64-bit fingerprint from 16 hex digits or a decimal (unsigned or signed) integer.

    ``auto``: a JSON integer or a string of digits with a sign or not of length other
    than 16 is decimal; exactly 16 characters (or ``0x`` and 16) is hex, as
    ``simhash-store fingerprint`` prints it. ``hex`` and ``decimal`` force one reading.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"fingerprint must be a string or an integer, not {type(value).__name__}")
    if isinstance(value, int):
        number = value
    else:
        text = value.strip()
        bare = text[2:] if text[:2].lower() == "0x" else text
        as_hex = form == "hex" or (form == "auto" and (len(bare) == 16 or bare is not text))
        if as_hex:
            if len(bare) != 16 or any(c not in "0123456789abcdefABCDEF" for c in bare):
                raise ValueError(f"expected 16 hex digits, got {text!r}")
            return int(bare, 16)
        if not text.lstrip("+-").isdigit() or not text.isascii():
            raise ValueError(f"not 16 hex digits or a decimal integer: {text!r}")
        number = int(text)
    if -(1 << 63) <= number < 0:
        return number + (1 << 64)
    if 0 <= number < 1 << 64:
        return number
    raise ValueError(f"{number} is outside the 64-bit range")


def read_fingerprints(
    stream: IO[bytes],
    name: str,
    *,
    format: str = "auto",
    key_field: str = "key",
    fingerprint_field: str = "fingerprint",
    fingerprint_form: str = "auto",
) -> Iterator[FingerprintRecord | Skip]:
    """(key, fingerprint) rows of a CSV file (with a header row) or a JSONL file; bad rows become Skips."""
    if format == "auto":
        format = "csv" if name.lower().endswith((".csv", ".tsv")) else "jsonl"
    if format == "jsonl":
        rows = _jsonl_rows(stream, name)
    elif format == "csv":
        rows = _csv_rows(stream, name, key_field, fingerprint_field)
    else:
        raise ValueError(f"format must be csv, jsonl or auto, not {format!r}")
    for where, record in rows:
        if isinstance(record, Skip):
            yield record
            continue
        key, value = record.get(key_field), record.get(fingerprint_field)
        if not isinstance(key, (str, int)) or isinstance(key, bool) or key == "":
            yield Skip(where, BAD_RECORD, f"no {key_field!r} value")
            continue
        try:
            yield FingerprintRecord(str(key), parse_fingerprint(value, fingerprint_form))
        except ValueError as exc:
            yield Skip(where, BAD_RECORD, str(exc))


def _jsonl_rows(stream: IO[bytes], name: str) -> Iterator[tuple[str, dict | Skip]]:
    for number, raw in enumerate(stream, start=1):
        where = f"{name}:{number}"
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            yield where, Skip(where, BAD_RECORD, f"not valid JSON: {exc}")
            continue
        yield where, record if isinstance(record, dict) else Skip(where, BAD_RECORD, "not a JSON object")


def _csv_rows(stream: IO[bytes], name: str, key_field: str, fingerprint_field: str) -> Iterator[tuple[str, dict | Skip]]:
    import csv

    undecodable: dict[int, str] = {}

    def lines() -> Iterator[str]:
        # Decode line by line, so one bad line is reported and the rest still read.
        for number, raw in enumerate(stream, start=1):
            try:
                yield raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                undecodable[number] = f"not UTF-8: {exc.reason}"
                yield "\n"

    def pending_skips() -> Iterator[tuple[str, Skip]]:
        for number in sorted(undecodable):
            where = f"{name}:{number}"
            yield where, Skip(where, BAD_RECORD, undecodable.pop(number))

    reader = csv.reader(lines())
    header = next(reader, None)
    yield from pending_skips()
    if header is None:
        return
    missing = [f for f in (key_field, fingerprint_field) if f not in header]
    if missing:
        yield f"{name}:1", Skip(f"{name}:1", BAD_RECORD, f"header has no column {', '.join(map(repr, missing))}")
        return
    while True:
        where = f"{name}:{reader.line_num + 1}"
        try:
            row = next(reader)
        except StopIteration:
            yield from pending_skips()
            return
        except csv.Error as exc:
            yield where, Skip(where, BAD_RECORD, str(exc))
            continue
        yield from pending_skips()
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            yield where, Skip(where, BAD_RECORD, f"{len(row)} columns, the header has {len(header)}")
            continue
        yield where, dict(zip(header, row))
