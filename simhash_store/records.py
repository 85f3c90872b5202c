"""Records of JSONL, CSV and TSV input: a bad line costs that line, never its neighbours. No database here.

Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (old Mac files); a line is never
longer than ``max_line_bytes`` in memory (a longer one is reported and skipped, and
reading goes on after it). In CSV and TSV a quoted field may hold the delimiter, doubled
quotes and line breaks (kept as written), as spreadsheets write them; a record is named
by its first line. A line ending inside a quoted field is joined with the lines after it
only if the quote closes within ``max_line_bytes`` and the record then parses with the
header's number of fields; otherwise that line alone is an unbalanced quote and reading
resumes at the next line, so a stray quote never swallows the rows after it. A JSON line nested too
deeply, or holding an integer of thousands of digits, is one bad record. A key
PostgreSQL cannot hold (NUL, a lone surrogate, over 2,048 bytes) is a bad key, named
by its line. Two records with one key are not merged: the second is a key collision.

When the first record has no key field (or no text or fingerprint field), the whole
input is refused with one :class:`~simhash_store.errors.InputError` naming the fields
it has, instead of one failure per record.
"""

from __future__ import annotations

import csv
import json
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import IO

from .corpus import BAD_KEY, BAD_RECORD, KEY_COLLISION, Skip, Source
from .errors import InputError, SimhashStoreError
from .plural import counted
from .validation import validate_key

# A line, a file and a JSONL text are refused above this size by default, rather than
# read into memory whole (where a 60 GB file would end in MemoryError or the OOM killer).
DEFAULT_MAX_BYTES = 1 << 30
_CHUNK = 1 << 20
# JSON integers longer than this are kept as HugeInteger: nothing here needs more than 20
# digits, and Python refuses to convert more than 4,300 (and is slow at it).
_MAX_INTEGER_DIGITS = 40


def lines(stream: IO[bytes], max_line_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """(line number from 1, line without its ending) of a byte stream; None for a line over the limit.

    Reads what is available (``read1``), so records from a pipe are handled as they come.
    """
    for number, body, _ in _lines(stream, max_line_bytes):
        yield number, body


def _lines(stream: IO[bytes], max_line_bytes: int) -> Iterator[tuple[int, bytes | None, bytes]]:
    """As :func:`lines`, with each line's ending (``b"\\r\\n"``, ``b"\\n"``, ``b"\\r"``, or ``b""`` at the end).

    A line whose ``\\r`` ends a read is held until the next read tells ``\\r`` from ``\\r\\n``,
    so that a line break kept inside a quoted CSV field is the one written.
    """
    read = getattr(stream, "read1", stream.read)
    number, parts, size, too_long = 0, [], 0, False
    held: tuple[bytes | None] | None = None  # a line ended by the "\r" that ended the last read
    while chunk := read(_CHUNK):
        if held is not None:
            crlf = chunk.startswith(b"\n")
            if crlf:
                chunk = chunk[1:]  # the "\n" of a "\r\n" split between two reads
            yield number, held[0], b"\r\n" if crlf else b"\r"
            held = None
        pieces = chunk.splitlines(keepends=True)  # bytes split at \n, \r\n and \r only
        for index, piece in enumerate(pieces):
            if piece.endswith(b"\r\n"):
                body, ending = piece[:-2], b"\r\n"
            elif piece.endswith((b"\n", b"\r")):
                body, ending = piece[:-1], piece[-1:]
            else:  # the start of a line that goes on in the next read
                size += len(piece)
                if size > max_line_bytes:
                    parts, too_long = [], True  # keep reading to the line's end, not its bytes
                elif not too_long:
                    parts.append(piece)
                continue
            number += 1
            line = None if too_long or size + len(body) > max_line_bytes else b"".join(parts) + body if parts else body
            parts, size, too_long = [], 0, False
            if ending == b"\r" and index == len(pieces) - 1:
                held = (line,)
            else:
                yield number, line, ending
    if held is not None:
        yield number, held[0], b"\r"
    if parts or too_long:
        yield number + 1, None if too_long else b"".join(parts), b""


class HugeInteger:
    """A JSON integer too long to be anything here (a key, a fingerprint): its digits are only counted."""

    def __init__(self, literal: str) -> None:
        self.digits = len(literal.lstrip("-"))

    def __repr__(self) -> str:
        return f"an integer of {self.digits:,} digits"


def _parse_int(literal: str) -> int | HugeInteger:
    return int(literal) if len(literal) <= _MAX_INTEGER_DIGITS else HugeInteger(literal)


def _json_rows(stream: IO[bytes], name: str, max_line_bytes: int) -> Iterator[tuple[str, dict | Skip]]:
    for number, raw in lines(stream, max_line_bytes):
        where = f"{name}:{number}"
        if raw is None:
            yield where, Skip(where, BAD_RECORD, f"line longer than {counted(max_line_bytes, 'byte', grouped=True)}")
            continue
        if not raw.strip():
            continue
        try:
            record = json.loads(
                raw.decode("utf-8-sig" if number == 1 else "utf-8"), parse_int=_parse_int, object_pairs_hook=_object
            )
        except RecursionError:
            yield where, Skip(where, BAD_RECORD, "JSON nested too deeply")
            continue
        except _RepeatedMember as exc:
            yield where, Skip(where, BAD_RECORD, f"the member {_short(exc.name, 40)} appears twice in one object")
            continue
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            yield where, Skip(where, BAD_RECORD, f"not valid JSON: {_first_line(exc)}")
            continue
        yield where, record if isinstance(record, dict) else Skip(where, BAD_RECORD, "not a JSON object")


class _RepeatedMember(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _object(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object as a dict; a name given twice is refused (json keeps the last silently,
    so {"key": "a", "key": "b"} would be stored under a key no one can see in the file)."""
    record = dict(pairs)
    if len(record) != len(pairs):
        seen = set()
        for name, _ in pairs:
            if name in seen:
                raise _RepeatedMember(name)
            seen.add(name)
    return record


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0][:200] if str(error) else type(error).__name__


def _refuse_missing_fields(
    rows: Iterator[tuple[str, dict | Skip]], name: str, fields: dict[str, str], kind: str = "record"
) -> Iterator[tuple[str, dict | Skip]]:
    """The rows unchanged, once the first record (read ahead now) is found to have every field.

    Raises InputError naming the fields it has otherwise: a field name given wrong
    would fail every record, and one line says so better than a million.
    """
    ahead = []
    for where, record in rows:
        ahead.append((where, record))
        if isinstance(record, dict):
            missing = [f"{field!r} ({role})" for field, role in fields.items() if field not in record]
            if missing:
                present = ", ".join(_short(str(field), 40) for field in list(record)[:20]) or "none"
                more = f" and {len(record) - 20} more" if len(record) > 20 else ""
                raise InputError(
                    f"{where}: the first {kind} has no field {' or '.join(missing)}; its fields are {present}{more}"
                )
            break
    return chain(ahead, rows)


def _short(text: str, size: int = 80) -> str:
    return repr(text[:size]) + ("..." if len(text) > size else "")


def _record_key(record: dict, field: str, prefix: str, where: str) -> str | Skip:
    key = record.get(field)
    if isinstance(key, HugeInteger):
        return Skip(where, BAD_KEY, f"{field!r} is {key!r}")
    if not isinstance(key, (str, int)) or isinstance(key, bool) or key == "":
        return Skip(where, BAD_RECORD, f"no {field!r} field with a string or integer")
    try:
        return validate_key(prefix + str(key))
    except SimhashStoreError as exc:
        return Skip(where, BAD_KEY, str(exc))


class _Seen:
    """Keys given so far, as 64-bit hashes: about 60 bytes each, so 10 million cost 0.6 GB, not 2.

    A hash shared by two different keys (about 1 in 370,000 runs of 10 million keys)
    would report a collision that is not one; never a merge. Python's string hash is
    salted per process, so such a false report does not repeat on the next run.
    """

    def __init__(self) -> None:
        self._hashes: set[int] = set()

    def first(self, key: str) -> bool:
        """True the first time a key is given."""
        value = hash(key)
        if value in self._hashes:
            return False
        self._hashes.add(value)
        return True


def collision(where: str, key: str) -> Skip:
    return Skip(where, KEY_COLLISION, f"key {_short(key)} was given by an earlier input of this run; not stored")


def unique_keys(items: Iterable[Source | Skip]) -> Iterator[Source | Skip]:
    """The items, each key's first Source kept and any later Source with that key a KEY_COLLISION Skip."""
    seen = _Seen()
    for item in items:
        if isinstance(item, Source) and not seen.first(item.key):
            yield collision(item.shown, item.key)
        else:
            yield item


# ------------------------------------------------------------ JSONL documents (add --jsonl)


def read_jsonl(
    stream: IO[bytes],
    name: str,
    *,
    key_field: str = "key",
    text_field: str = "text",
    prefix: str = "",
    max_line_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[Source | Skip]:
    """Documents of a JSONL stream, one object per line; bad lines become Skips naming the line.

    Reads the first record now, and raises InputError if it lacks either field.
    """
    rows = _refuse_missing_fields(
        _json_rows(stream, name, max_line_bytes), name, {key_field: "the key", text_field: "the text"}
    )
    return _jsonl_sources(rows, key_field, text_field, prefix)


def _jsonl_sources(rows, key_field: str, text_field: str, prefix: str) -> Iterator[Source | Skip]:
    for where, record in rows:
        if isinstance(record, Skip):
            yield record
            continue
        key = _record_key(record, key_field, prefix, where)
        if isinstance(key, Skip):
            yield key
            continue
        text = record.get(text_field)
        if not isinstance(text, str):
            yield Skip(where, BAD_RECORD, f"no {text_field!r} field with a string")
            continue
        yield Source(key, text=text, size=len(text.encode("utf-8", "surrogatepass")), where=where)


# ------------------------------------------------------------ existing fingerprints (import)


@dataclass(frozen=True)
class FingerprintRecord:
    key: str
    fingerprint: int


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_DECIMAL = re.compile(r"[+-]?[0-9]+", re.ASCII)


def parse_fingerprint(value: object, form: str = "auto") -> int:
    """An unsigned 64-bit fingerprint from 16 hex digits or a decimal (unsigned or signed) integer.

    ``auto``: a JSON integer or a string of digits with a sign or not of length other
    than 16 is decimal; exactly 16 characters (or ``0x`` and 16) is hex, as
    ``simhash-store fingerprint`` prints it. ``hex`` and ``decimal`` force one reading.

    >>> parse_fingerprint("ffffffffffffffff"), parse_fingerprint(-1)
    (18446744073709551615, 18446744073709551615)
    """
    if isinstance(value, HugeInteger):
        raise ValueError(f"{value!r} is outside the 64-bit range")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"fingerprint must be a string or an integer, not {type(value).__name__}")
    if isinstance(value, int):
        number = value
    else:
        text = value.strip()
        bare = text[2:] if text[:2].lower() == "0x" else text
        as_hex = form == "hex" or (form == "auto" and (len(bare) == 16 or bare is not text))
        if as_hex:
            if len(bare) != 16 or not _HEX_DIGITS.issuperset(bare):
                raise ValueError(f"expected 16 hex digits, got {_short(text, 40)}")
            return int(bare, 16)
        if not _DECIMAL.fullmatch(text):
            raise ValueError(f"not 16 hex digits or a decimal integer: {_short(text, 40)}")
        digits = text.lstrip("+-").lstrip("0")
        if len(digits) > 20:
            raise ValueError(f"a decimal of {len(digits):,} digits is outside the 64-bit range")
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
    max_line_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[FingerprintRecord | Skip]:
    """(key, fingerprint) rows of a CSV or TSV file (with a header row) or a JSONL file; bad rows become Skips.

    ``auto`` reads ``*.csv`` as CSV, ``*.tsv`` as TSV and anything else as JSONL. Reads
    the header (or first record) now, and raises InputError if a field is missing.
    A key repeated in the file is a KEY_COLLISION after its first row.
    """
    if format == "auto":
        lower = name.lower()
        format = "csv" if lower.endswith(".csv") else "tsv" if lower.endswith(".tsv") else "jsonl"
    fields = {key_field: "the key", fingerprint_field: "the fingerprint"}
    if format == "jsonl":
        rows = _refuse_missing_fields(_json_rows(stream, name, max_line_bytes), name, fields)
    elif format in ("csv", "tsv"):
        rows = _delimited_rows(stream, name, "," if format == "csv" else "\t", fields, max_line_bytes)
    else:
        raise ValueError(f"format must be csv, tsv, jsonl or auto, not {format!r}")
    return _fingerprint_records(rows, key_field, fingerprint_field, fingerprint_form)


def _fingerprint_records(rows, key_field: str, fingerprint_field: str, form: str) -> Iterator[FingerprintRecord | Skip]:
    seen = _Seen()
    for where, record in rows:
        if isinstance(record, Skip):
            yield record
            continue
        key = _record_key(record, key_field, "", where)
        if isinstance(key, Skip):
            yield key
            continue
        try:
            value = parse_fingerprint(record.get(fingerprint_field), form)
        except ValueError as exc:
            yield Skip(where, BAD_RECORD, str(exc))
            continue
        yield FingerprintRecord(key, value) if seen.first(key) else collision(where, key)


def _delimited_rows(
    stream: IO[bytes], name: str, delimiter: str, fields: dict[str, str], max_line_bytes: int
) -> Iterator[tuple[str, dict | Skip]]:
    """Rows of CSV or TSV as dicts by the header's names; the header (one line) is read now."""
    numbered = _lines(stream, max_line_bytes)
    header: list[str] | None = None
    for number, raw, _ in numbered:
        where = f"{name}:{number}"
        if raw is None or not raw.strip():
            if raw is None:
                raise InputError(f"{where}: the header line is longer than {counted(max_line_bytes, 'byte', grouped=True)}")
            continue
        cells = _cells(raw, number, delimiter)
        if isinstance(cells, str):
            raise InputError(f"{where}: the header line is unreadable: {cells}")
        header = cells
        if len(set(header)) != len(header):
            _refuse_repeated_column(header, where)
        missing = [f"{field!r} ({role})" for field, role in fields.items() if field not in header]
        if missing:
            present = ", ".join(_short(cell, 40) for cell in header[:20])
            raise InputError(f"{where}: the header has no column {' or '.join(missing)}; its columns are {present}")
        break
    if header is None:
        return iter(())
    return _delimited_body(numbered, name, delimiter, header, max_line_bytes)


class RepeatedColumnError(InputError):
    """A header that names two columns alike (a record would keep only the last)."""


def _refuse_repeated_column(header: list[str], where: str) -> None:
    """A record would keep only the last of two columns of one name: refused, naming them."""
    first: dict[str, int] = {}
    for number, name in enumerate(header, start=1):
        if name in first:
            raise RepeatedColumnError(
                f"{where}: the header names two columns {_short(name, 40)} (columns {first[name]} and {number}): "
                "rename one, each column needs a name of its own"
            )
        first[name] = number


def _delimited_body(
    numbered: Iterator[tuple[int, bytes | None, bytes]], name: str, delimiter: str, header: list[str], max_bytes: int
) -> Iterator[tuple[str, dict | Skip]]:
    """The records after the header; one whose quoted field holds line breaks spans those lines.

    A line that ends inside a quoted field is joined with the lines after it until the
    quote closes. The joined record is taken only if it closes within ``max_bytes``, parses
    and has the header's number of fields; otherwise the first line alone is reported as
    an unbalanced quote and reading resumes at the very next line, so a stray quote costs
    its own line and never the rows after it.
    """
    ahead: deque[tuple[int, bytes | None, bytes]] = deque()  # lines read to try a record, given back
    barren_until = 0  # the lines up to this one were looked through for a closing quote in vain

    def next_line():
        return ahead.popleft() if ahead else next(numbered, None)

    while (line := next_line()) is not None:
        number, raw, ending = line
        where = f"{name}:{number}"
        if raw is None:
            yield where, Skip(where, BAD_RECORD, "line too long")
            continue
        if not raw.strip():
            continue
        cells = _cells(raw, number, delimiter)
        if cells is _UNBALANCED and number >= barren_until:
            cells, taken, barren = _quoted_record(raw + ending, number, delimiter, len(header), max_bytes, next_line)
            if cells is _UNBALANCED:
                ahead.extendleft(reversed(taken))
                if barren:  # a later stray quote among these lines would search them again in vain
                    barren_until = taken[-1][0] if taken else number
        if isinstance(cells, str):
            yield where, Skip(where, BAD_RECORD, cells)
        elif len(cells) != len(header):
            yield where, Skip(where, BAD_RECORD, f"{counted(len(cells), 'column')}, the header has {len(header)}")
        else:
            yield where, dict(zip(header, cells))


def _quoted_record(start: bytes, number: int, delimiter: str, width: int, max_bytes: int, next_line):
    """(fields or _UNBALANCED, lines taken, whether no taken line held a quote) of a record open at its first line's end.

    A ``"`` byte is never part of a longer UTF-8 character, so an odd count of them in a
    line flips whether the field is still open: the record is parsed only when it may be
    whole. Each line taken counts ``_LINE_COST`` bytes more against ``max_bytes``, so that
    the lines held in memory stay near that bound however short they are.
    """
    text, taken, still_open, barren = [start], [], True, True
    size = len(start)
    while (line := next_line()) is not None:
        taken.append(line)
        _, raw, ending = line
        size += len(raw or b"") + len(ending) + _LINE_COST
        if raw is None or size > max_bytes:
            break
        text.append(raw)
        if b'"' in raw:
            barren = False
            if raw.count(b'"') % 2:
                still_open = not still_open
        if not still_open:
            cells = _cells(b"".join(text), number, delimiter)
            if cells is not _UNBALANCED:  # parsed, or unreadable: no more lines can mend it
                return (cells, taken, False) if isinstance(cells, list) and len(cells) == width else (_UNBALANCED, taken, False)
            still_open = True  # a quote inside an unquoted field is a plain character
        text.append(ending)
    return _UNBALANCED, taken, barren


_LINE_COST = 100
_UNBALANCED = "unbalanced quote (no closing quote ends a record of the header's width within the size limit)"


def _cells(raw: bytes, number: int, delimiter: str) -> list[str] | str:
    """The fields of one record, or why it has none (_UNBALANCED when it ends inside a quoted field)."""
    try:
        text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8: {exc.reason} at byte {exc.start}"
    # The csv module refuses fields over 128 KiB (a long law in one cell): the line is bounded
    # already (max_line_bytes), so the limit is raised for this line only, then put back.
    limit = csv.field_size_limit()
    if len(text) > limit:
        csv.field_size_limit(len(text))
    try:
        return next(csv.reader([text], delimiter=delimiter, strict=True))
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            return _UNBALANCED
        return str(exc)
    finally:
        if len(text) > limit:
            csv.field_size_limit(limit)
