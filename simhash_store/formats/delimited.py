"""CSV and TSV with a header row, in and out, as spreadsheets and Python's ``csv`` module write them.

A quoted field may hold the delimiter, doubled quotes and line breaks (kept as written); a
record is named by its first line. A line ending inside a quoted field is joined with the
lines after it only if the quote closes within ``max_line_bytes`` and the record then parses
with the header's number of fields; otherwise that line alone is an unbalanced quote and
reading resumes at the next line, so a stray quote never swallows the rows after it. A header
that names a column twice is refused before any work (a record would keep only the last).
"""

from __future__ import annotations

import csv
from collections import deque
from collections.abc import Iterator
from typing import IO

from ..corpus import BAD_RECORD, Skip
from ..errors import InputError
from ..plural import counted
from .columns import as_text
from .lines import MissingFieldError, lines_with_endings, short
from .registry import Input, InputFormat, OutputFormat, ReadOptions, register_input, register_output
from .writing import RecordWriter


def _reader(delimiter: str):
    def read(source: Input, options: ReadOptions) -> Iterator[tuple[str, dict | Skip]]:
        """The records of a file with a header row, in order (the header is read at the first record)."""
        with source.open() as stream:
            yield from delimited_rows(stream, source.name, delimiter, options.required, options.max_bytes)

    return read


def delimited_rows(
    stream: IO[bytes], name: str, delimiter: str, fields: dict[str, str], max_line_bytes: int
) -> Iterator[tuple[str, dict | Skip]]:
    """Rows of CSV or TSV as dicts by the header's names; the header (one line) is read now."""
    numbered = lines_with_endings(stream, max_line_bytes)
    header: list[str] | None = None
    for number, raw, _ in numbered:
        where = f"{name}:{number}"
        if raw is None or not raw.strip():
            if raw is None:
                raise InputError(
                    f"{where}: the header line is longer than {counted(max_line_bytes, 'byte', grouped=True)}"
                )
            continue
        cells = _cells(raw, number, delimiter)
        if isinstance(cells, str):
            raise InputError(f"{where}: the header line is unreadable: {cells}")
        header = cells
        if len(set(header)) != len(header):
            _refuse_repeated_column(header, where)
        missing = [f"{field!r} ({role})" for field, role in fields.items() if field not in header]
        if missing:
            present = ", ".join(short(cell, 40) for cell in header[:20])
            raise MissingFieldError(
                f"{where}: the header has no column {' or '.join(missing)}; its columns are {present}"
            )
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
                f"{where}: the header names two columns {short(name, 40)} (columns {first[name]} and {number}): "
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
                return (
                    (cells, taken, False)
                    if isinstance(cells, list) and len(cells) == width
                    else (_UNBALANCED, taken, False)
                )
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


class DelimitedWriter(RecordWriter):
    """A header of every field seen, in first-seen order, then one row per record; values
    that are not strings are written as JSON text (``true``, ``2.5``, ``["a"]``)."""

    delimiter = ","

    def note(self, record: dict) -> None:
        fields = self._columns.fields
        fields.update((name, None) for name in record if name not in fields)

    def finish(self) -> None:
        if not self._count:
            return  # no record: an empty file, as before there were any
        header = list(self._columns.fields)
        writer = csv.writer(self._stream, delimiter=self.delimiter)
        writer.writerow(header)
        for batch in self._spilled():
            writer.writerows(
                ["" if record.get(f) is None else as_text(record.get(f)) for f in header] for record in batch
            )


class TsvWriter(DelimitedWriter):
    delimiter = "\t"


register_input(InputFormat("csv", _reader(","), suffixes=(".csv",), description="CSV with a header row"))
register_input(
    InputFormat("tsv", _reader("\t"), suffixes=(".tsv",), description="tab-separated values with a header row")
)
register_output(OutputFormat("csv", DelimitedWriter, suffixes=(".csv",), description="CSV with a header row"))
register_output(
    OutputFormat("tsv", TsvWriter, suffixes=(".tsv",), description="tab-separated values with a header row")
)
