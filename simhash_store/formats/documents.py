"""Records to what the pipelines take: documents (key, text, metadata) and existing fingerprints.

The same rules for every input format: a record without a usable key or text is one bad
record (a Skip naming it), a key PostgreSQL cannot hold (NUL, a lone surrogate, over 2,048
bytes) is a bad key, and two records with one key are never merged: the second is a key
collision. No database here.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from ..corpus import BAD_KEY, BAD_RECORD, KEY_COLLISION, Skip, Source
from ..errors import InvalidValueError, SimhashStoreError
from ..keep import keep_form
from ..validation import validate_key, validate_metadata
from .html import field_text
from .lines import DEFAULT_MAX_BYTES, HugeInteger, short
from .registry import Input, ReadOptions, input_format

Rows = Iterator[tuple[str, "dict | Skip"]]


def record_key(record: dict, field: str, prefix: str, where: str) -> str | Skip:
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
    return Skip(where, KEY_COLLISION, f"key {short(key)} was given by an earlier input of this run; not stored")


def unique_keys(items: Iterable[Source | Skip]) -> Iterator[Source | Skip]:
    """The items, each key's first Source kept and any later Source with that key a KEY_COLLISION Skip."""
    seen = _Seen()
    for item in items:
        if isinstance(item, Source) and not seen.first(item.key):
            yield collision(item.shown, item.key)
        else:
            yield item


# ------------------------------------------------------------ documents (add, query, calibrate)


def record_documents(rows: Iterable[tuple[str, dict | Skip]], options: ReadOptions) -> Iterator[Source | Skip]:
    """A Source for each record with a key and a text (the key prefixed with ``options.prefix``,
    the metadata fields that are present kept, and the value of ``options.keep_field``), a Skip for
    every other row."""
    key_field, text_field, prefix = options.key_field, options.text_field, options.prefix
    for where, record in rows:
        if isinstance(record, Skip):
            yield record
            continue
        if key_field not in record and key_field not in options.required:
            key: str | Skip = where  # a command that needs no key (query) names the record by its place
        else:
            key = record_key(record, key_field, prefix, where)
        if isinstance(key, Skip):
            yield key
            continue
        if options.html_field is not None:
            text: str | Skip | None = field_text(record, options.html_field, where)
            if isinstance(text, Skip):
                yield text
                continue
        else:
            text = record.get(text_field)
        if not isinstance(text, str):
            yield Skip(where, BAD_RECORD, f"no {text_field!r} field with a string")
            continue
        metadata = _metadata(record, options.metadata_fields)
        if isinstance(metadata, str):
            yield Skip(where, BAD_RECORD, metadata)
            continue
        keep_value = keep_form(record.get(options.keep_field)) if options.keep_field is not None else None
        yield Source(
            key,
            text=text,
            size=len(text.encode("utf-8", "surrogatepass")),
            where=where,
            metadata=metadata,
            keep_value=keep_value,
        )


def _metadata(record: dict, fields: tuple[str, ...]) -> dict[str, Any] | str | None:
    """The metadata fields the record has (None for none), or why the store cannot hold them."""
    kept = {name: record[name] for name in fields if name in record}
    if not kept:
        return None
    if any(isinstance(value, HugeInteger) for value in kept.values()):
        return "a metadata field holds an integer of thousands of digits"
    try:
        return validate_metadata(kept)
    except InvalidValueError as exc:
        refused = str(exc)
    try:  # dates and times (Parquet) are kept as text; looked for only where something was refused
        dated = {name: _dates_as_text(value) for name, value in kept.items()}
        return validate_metadata(dated)
    except RecursionError:
        return refused
    except InvalidValueError as exc:
        return str(exc)


def _dates_as_text(value: Any) -> Any:
    """A value with each date and time in it (a Parquet ``timestamp``, ``date32``, ``time64``, also in
    lists and structs) as the text every output writes for it (``2024-06-03 08:00:00+00:00``): jsonb
    has no type for them, and every record of a Parquet file naming such a column in
    ``--metadata-field`` failed (``metadata value at published_at is a datetime``)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    if type(value) is dict:
        return {name: _dates_as_text(member) for name, member in value.items()}
    if type(value) is list:
        return [_dates_as_text(item) for item in value]
    return value


def read_jsonl(
    stream: IO[bytes],
    name: str,
    *,
    key_field: str = "key",
    text_field: str = "text",
    prefix: str = "",
    max_line_bytes: int = DEFAULT_MAX_BYTES,
    keep_field: str | None = None,
) -> Iterator[Source | Skip]:
    """Documents of a JSONL stream, one object per line; bad lines become Skips naming the line.

    Reads the first record now, and raises InputError if it lacks either field. ``keep_field``:
    the field of the store's keep policy, whose value goes with each document.
    """
    options = ReadOptions(
        key_field=key_field,
        text_field=text_field,
        prefix=prefix,
        max_bytes=max_line_bytes,
        required={key_field: "the key", text_field: "the text"},
        keep_field=keep_field,
    )
    return record_documents(input_format("jsonl").records(Input(name, stream), options), options)


# ------------------------------------------------------------ existing fingerprints (import)


@dataclass(frozen=True)
class FingerprintRecord:
    key: str
    fingerprint: int


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_DECIMAL = re.compile(r"[+-]?[0-9]+", re.ASCII)


def parse_fingerprint(value: object, form: str = "auto") -> int:
    """An unsigned 64-bit fingerprint from 16 hex digits or a decimal (unsigned or signed) integer.

    ``auto``: a JSON integer, a string of digits of length other than 16, or one with a sign,
    is decimal; exactly 16 characters (or ``0x`` and 16) is hex, as ``simhash-store
    fingerprint`` prints it. ``hex`` and ``decimal`` force one reading. (A file of them reads
    16 decimal digits as its other values show: :func:`fingerprint_records`.)

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
        as_hex = form == "hex" or (form == "auto" and (bare is not text or (len(bare) == 16 and text[:1] not in "+-")))
        if as_hex:
            if len(bare) != 16 or not _HEX_DIGITS.issuperset(bare):
                raise ValueError(f"expected 16 hex digits, got {short(text, 40)}")
            return int(bare, 16)
        if not _DECIMAL.fullmatch(text):
            raise ValueError(f"not 16 hex digits or a decimal integer: {short(text, 40)}")
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
    from .registry import resolve_format

    chosen = resolve_format(name, None if format == "auto" else format, default="jsonl")
    options = ReadOptions(
        key_field=key_field,
        max_bytes=max_line_bytes,
        required={key_field: "the key", fingerprint_field: "the fingerprint"},
    )
    rows = chosen.records(Input(name, stream), options)
    return fingerprint_records(rows, key_field, fingerprint_field, fingerprint_form)


_EITHER = "either"  # 16 decimal digits: hex or decimal alike
_HELD_ROWS = 10_000  # rows held while no value has shown whether a file is hex or decimal


def _form_of(value: object) -> str | None:
    """How ``auto`` can read a fingerprint: "hex" or "decimal" when only one way, _EITHER for 16
    decimal digits, None for a value neither reads (a bad record whatever the file's form)."""
    if isinstance(value, bool) or isinstance(value, HugeInteger):
        return None
    if isinstance(value, int):
        return "decimal"
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text[:2].lower() == "0x":
        return "hex"
    if len(text) == 16 and _HEX_DIGITS.issuperset(text):
        return _EITHER if text.isdigit() else "hex"
    return "decimal" if _DECIMAL.fullmatch(text) else None


def fingerprint_records(rows, key_field: str, fingerprint_field: str, form: str) -> Iterator[FingerprintRecord | Skip]:
    """(key, fingerprint) of each row, a Skip for each bad one; a key's second row is a collision.

    Under ``auto``, 16 decimal digits (``1234567890123456``) read as hex or decimal alike, and
    are read as the file's other values are: a decimal file (one value with a sign, of another
    length, or a JSON integer) has them decimal, a hex file (a letter, ``0x``) hex. Rows are held,
    in order, until a value shows which (at most 10,000 rows; then, and in a file that never
    shows it, they are hex, as ``simhash-store fingerprint`` prints a fingerprint): otherwise
    about 1 in 2,000 decimal fingerprints would be stored as another value, silently.
    """
    seen = _Seen()
    decided = None if form == "auto" else form
    held: list[tuple[str, dict | Skip]] = []

    def parsed(where: str, record: dict | Skip) -> FingerprintRecord | Skip:
        if isinstance(record, Skip):
            return record
        key = record_key(record, key_field, "", where)
        if isinstance(key, Skip):
            return key
        value = record.get(fingerprint_field)
        try:
            number = parse_fingerprint(value, decided if decided and _form_of(value) is _EITHER else form)
        except ValueError as exc:
            return Skip(where, BAD_RECORD, str(exc))
        return FingerprintRecord(key, number) if seen.first(key) else collision(where, key)

    for where, record in rows:
        if decided is None:
            shown = None if isinstance(record, Skip) else _form_of(record.get(fingerprint_field))
            if shown in ("hex", "decimal"):
                decided = shown
            elif (held or shown is _EITHER) and len(held) < _HELD_ROWS:
                held.append((where, record))
                continue
            else:
                decided = "hex" if held else None
            for row in held:
                yield parsed(*row)
            held.clear()
        yield parsed(where, record)
    decided = decided or "hex"
    for row in held:
        yield parsed(*row)
