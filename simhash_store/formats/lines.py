"""Lines of a byte stream, bounded in memory, and the helpers every record reader shares. No database here.

Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (old Mac files); a line is never
longer than ``max_line_bytes`` in memory (a longer one is reported and skipped, and
reading goes on after it). When the first record has none of the fields a command needs,
the whole input is refused with one :class:`~simhash_store.errors.InputError` naming the
fields it has, instead of one failure per record (:func:`require_fields`).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import IO

from ..corpus import Skip
from ..errors import InputError

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
    for number, body, _ in lines_with_endings(stream, max_line_bytes):
        yield number, body


def lines_with_endings(stream: IO[bytes], max_line_bytes: int) -> Iterator[tuple[int, bytes | None, bytes]]:
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


def parse_int(literal: str) -> int | HugeInteger:
    """A JSON integer literal as an int, or a HugeInteger when it is too long to be anything here."""
    return int(literal) if len(literal) <= _MAX_INTEGER_DIGITS else HugeInteger(literal)


def first_line(error: Exception) -> str:
    return str(error).splitlines()[0][:200] if str(error) else type(error).__name__


class MissingFieldError(InputError):
    """The first record (or the header) lacks a field the command needs: every record would fail."""


def require_fields(
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
                present = ", ".join(short(str(field), 40) for field in list(record)[:20]) or "none"
                more = f" and {len(record) - 20} more" if len(record) > 20 else ""
                raise MissingFieldError(
                    f"{where}: the first {kind} has no field {' or '.join(missing)}; its fields are {present}{more}"
                )
            break
    return chain(ahead, rows)


def short(text: str, size: int = 80) -> str:
    return repr(text[:size]) + ("..." if len(text) > size else "")
