"""What the store accepts, checked in one place before any I/O: keys, fingerprints, distances,
integers for fixed-width columns, and metadata. Pure: no database, no files.

Every check returns the value it was given (normalised: a numpy integer becomes an ``int``)
or raises a :class:`~simhash_store.errors.SimhashStoreError` subclass that says what was
wrong and what is allowed, so the CLI prints one line and a library caller never meets a
driver exception for bad input.

>>> validate_key("news/2024/0001.txt")
'news/2024/0001.txt'
>>> validate_fingerprint(2**64 - 1)
18446744073709551615
>>> validate_metadata({"score": float("nan")})
Traceback (most recent call last):
...
simhash_store.errors.InvalidValueError: metadata value at score is NaN, which JSON cannot hold
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any, SupportsInt, TypeGuard

from .errors import InvalidFingerprintError, InvalidKeyError, InvalidValueError

# PostgreSQL refuses B-tree entries over about 2,700 bytes; keys are unique-indexed.
MAX_KEY_BYTES = 2048
FINGERPRINT_WIDTHS = (32, 64, 128)
INT4 = (-(1 << 31), (1 << 31) - 1)  # PostgreSQL integer
INT8 = (-(1 << 63), (1 << 63) - 1)  # PostgreSQL bigint
# Nested metadata deeper than this is refused: the JSON encoder and PostgreSQL's parser
# both recurse, and a 100,000-deep object would overflow the one or the other.
MAX_METADATA_DEPTH = 256
# jsonb keeps numbers as numeric, but Python prints integers of more than 4,300 digits only
# on request; nobody's metadata needs more than a few hundred.
MAX_METADATA_INTEGER_DIGITS = 1000
# jsonb holds at most 2**28 - 1 bytes in a string, and in an object's or array's elements: past it
# PostgreSQL refused the whole batch ("string too long to represent as jsonb string").
MAX_JSONB_BYTES = (1 << 28) - 1


def utf8_size(text: str) -> int:
    """The bytes of ``text`` in UTF-8 (a lone surrogate counted as three)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _is_integer(value: object) -> TypeGuard[SupportsInt]:
    # Python and numpy integers; bool is an int to Python but never a fingerprint or a length.
    return type(value) is int or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def _digits(number: int) -> int:
    """Decimal digits of ``number``, without printing it (Python refuses to print huge ones)."""
    number = abs(number)
    estimate = int(number.bit_length() * math.log10(2)) + 1  # exact or one too many
    return estimate - 1 if estimate > 1 and 10 ** (estimate - 1) > number else estimate


def _excerpt(text: str, size: int = 80) -> str:
    return repr(text[:size]) + ("..." if len(text) > size else "")


def text_problem(text: str) -> str | None:
    """Why PostgreSQL ``text`` cannot hold ``text`` faithfully (a NUL, a lone surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character, which PostgreSQL text cannot hold"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (it holds a lone surrogate)"
    return None


def validate_key(key: object) -> str:
    """A key PostgreSQL can store faithfully, or :class:`InvalidKeyError` saying why not."""
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"a key must be a non-empty string, not {key!r}")
    problem = text_problem(key)
    if problem:
        raise InvalidKeyError(f"key {_excerpt(key)} {problem}")
    size = len(key.encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise InvalidKeyError(f"key {key[:40]!r}... is {size} bytes long; keys are limited to {MAX_KEY_BYTES} bytes")
    return key


def validate_keys(keys: object) -> list[str]:
    """Keys given as one string (one key, never its characters) or as an iterable of strings."""
    if isinstance(keys, str):
        return [validate_key(keys)]
    if isinstance(keys, (bytes, bytearray)) or not isinstance(keys, Iterable):
        raise InvalidKeyError(f"keys must be a string or an iterable of strings, not {type(keys).__name__}")
    return [validate_key(key) for key in keys]


def validate_fingerprint(value: object, bits: int = 64) -> int:
    """An unsigned fingerprint of ``bits`` bits (a Python or numpy integer), as an ``int``."""
    if bits not in FINGERPRINT_WIDTHS:
        raise InvalidFingerprintError(f"fingerprint width must be one of {FINGERPRINT_WIDTHS}, not {bits!r}")
    if not _is_integer(value) or not 0 <= int(value) < (1 << bits):
        raise InvalidFingerprintError(f"a {bits}-bit fingerprint is an integer in [0, 2**{bits}), not {value!r}")
    return int(value)


def validate_distance(max_distance: object, bits: int = 64) -> int:
    """A Hamming distance from 0 to ``bits``."""
    if not _is_integer(max_distance) or not 0 <= int(max_distance) <= bits:
        raise InvalidFingerprintError(f"max distance must be an integer from 0 to {bits}, not {max_distance!r}")
    return int(max_distance)


def validate_integer(value: object, what: str, low: int, high: int) -> int:
    """An integer in [low, high] (a column's range, or a sensible bound), never wrapped or truncated."""
    if not _is_integer(value):
        raise InvalidValueError(f"{what} must be an integer, not {value!r}")
    number = int(value)
    if not low <= number <= high:
        shown = str(number) if abs(number) < 10**30 else f"an integer of {_digits(number)} digits"
        raise InvalidValueError(f"{what} must lie in [{low}, {high}], not {shown}")
    return number


def validate_seconds(value: object, what: str, high: float = 86_400.0) -> float:
    """A positive, finite duration in seconds (a timeout), at most ``high``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) <= high:
        raise InvalidValueError(f"{what} must be a number of seconds above 0 and at most {high:g}, not {value!r}")
    return float(value)


def validate_optional_text(value: object, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidValueError(f"{what} must be a string, not {type(value).__name__}")
    problem = text_problem(value)
    if problem:
        raise InvalidValueError(f"{what} {_excerpt(value)} {problem}")
    return value


def validate_optional_bytes(value: object, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidValueError(f"{what} must be bytes, not {type(value).__name__}")


def validate_metadata(metadata: object) -> dict[str, Any] | None:
    """Metadata that PostgreSQL's jsonb holds as given: a JSON object with string keys, finite
    numbers, and strings without NUL characters or lone surrogates, at most a few hundred deep.

    Walked without recursion, so hostile nesting costs a message, not a RecursionError.
    """
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise InvalidValueError(f"metadata must be a JSON object (a dict), not {type(metadata).__name__}")
    stack: list[tuple[object, str, int]] = [(metadata, "", 0)]
    size = 0  # about what jsonb takes: the strings' bytes, 16 bytes a value besides
    while stack:
        value, where, depth = stack.pop()
        at = f" at {where}" if where else ""
        size += 16
        if size > MAX_JSONB_BYTES:
            raise InvalidValueError(f"metadata is more than {MAX_JSONB_BYTES:,} bytes, which jsonb cannot hold")
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise InvalidValueError(f"metadata string{at} {problem}")
            size += utf8_size(value)
            if size > MAX_JSONB_BYTES:
                raise InvalidValueError(
                    f"metadata string{at} makes the metadata more than {MAX_JSONB_BYTES:,} bytes, which jsonb cannot hold"
                )
        elif _is_integer(value):
            digits = _digits(int(value))
            if digits > MAX_METADATA_INTEGER_DIGITS:
                raise InvalidValueError(f"metadata integer{at} has more than {MAX_METADATA_INTEGER_DIGITS} digits")
            size += digits
        elif isinstance(value, float):
            if not math.isfinite(value):
                name = "NaN" if math.isnan(value) else "infinite"
                raise InvalidValueError(f"metadata value{at} is {name}, which JSON cannot hold")
        elif isinstance(value, (Mapping, list, tuple)):
            if depth >= MAX_METADATA_DEPTH:
                raise InvalidValueError(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep{at}")
            if isinstance(value, Mapping):
                for name, item in value.items():
                    if not isinstance(name, str):
                        raise InvalidValueError(f"metadata object keys must be strings, not {name!r}{at}")
                    problem = text_problem(name)
                    if problem:
                        raise InvalidValueError(f"metadata key {_excerpt(name)}{at} {problem}")
                    size += utf8_size(name)
                    stack.append((item, f"{where}.{name}" if where else name, depth + 1))
            else:
                stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        else:
            raise InvalidValueError(f"metadata value{at} is a {type(value).__name__}, which JSON cannot hold")
    return dict(metadata)


__all__ = [
    "INT4",
    "INT8",
    "MAX_KEY_BYTES",
    "text_problem",
    "validate_distance",
    "validate_fingerprint",
    "validate_integer",
    "validate_key",
    "validate_keys",
    "validate_metadata",
    "validate_optional_bytes",
    "validate_optional_text",
    "validate_seconds",
]
