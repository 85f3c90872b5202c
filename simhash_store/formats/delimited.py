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
from typing import IO, NamedTuple

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

    Reading stays linear however the quotes fall. Each line read ahead is parsed once as
    the continuation of a quoted field (:func:`_continued`): whether the field, open at the
    line's start, is still open at its end, closed or unreadable, and how many fields the
    line adds. Lines that leave the field open are kept, with running sums of their sizes
    and fields; the first that does not ends every record started before it. A record
    started at any earlier line is then judged by those sums alone, and parsed whole only
    when it has the header's width, to be taken; when its first line is reported instead,
    the next line is judged against the same lines, none parsed again.
    """
    ahead: deque[_Ahead] = deque()  # lines after the current one, read to judge a record; all but the last open
    total_size = total_fields = 0  # the running sums at the last line read ahead
    base_size = base_fields = 0  # the running sums before the first line in ``ahead``
    exhausted = False  # the file ended while reading ahead

    while True:
        if ahead:
            entry = ahead.popleft()
            number, raw, ending = entry.number, entry.raw, entry.ending
            base_size, base_fields = entry.size, entry.fields
        elif (line := next(numbered, None)) is not None:
            number, raw, ending = line
        else:
            return
        where = f"{name}:{number}"
        if raw is None:
            yield where, Skip(where, BAD_RECORD, "line too long")
            continue
        if not raw.strip():
            continue
        cells = _cells(raw, number, delimiter)
        if cells is _UNBALANCED:
            # The fields of this line, the open one closed at its end.
            opened = _cells(raw + b'"', number, delimiter)
            width = len(opened) if isinstance(opened, list) else -1
            size = len(raw) + len(ending)
            while not (ahead and ahead[-1].state != _OPEN) and not exhausted:
                if size + total_size - base_size > max_bytes:
                    break
                line = next(numbered, None)
                if line is None:
                    exhausted = True
                    break
                more = _continued(line, delimiter)
                total_size += more[0]
                total_fields += more[1]
                ahead.append(_Ahead(line[0], line[1], line[2], more[2], total_size, total_fields))
            last = ahead[-1] if ahead else None
            if (
                last is not None
                and last.state == _CLOSED
                and size + last.size - base_size <= max_bytes
                and width + last.fields - base_fields == len(header)
            ):
                text = [raw, ending]
                for entry in ahead:
                    text += (entry.raw or b"", entry.ending)
                joined = _cells(b"".join(text[:-1]), number, delimiter)
                if isinstance(joined, list) and len(joined) == len(header):
                    cells = joined
                    base_size, base_fields = last.size, last.fields
                    ahead.clear()
        if isinstance(cells, str):
            yield where, Skip(where, BAD_RECORD, cells)
        elif len(cells) != len(header):
            yield where, Skip(where, BAD_RECORD, f"{counted(len(cells), 'column')}, the header has {len(header)}")
        else:
            yield where, dict(zip(header, cells))


class _Ahead(NamedTuple):
    """A line read ahead: its place, text, ending, how it leaves a quoted field open at its start, running sums."""

    number: int
    raw: bytes | None
    ending: bytes
    state: str
    size: int
    fields: int


_OPEN, _CLOSED, _STOP = "open", "closed", "stop"


def _continued(line: tuple[int, bytes | None, bytes], delimiter: str) -> tuple[int, int, str]:
    """(bytes counted, fields added, state at its end) of a line read inside a quoted field.

    The line is parsed behind an opening quote, as the csv parser reads it after a line break
    in a quoted field; still open, it is parsed again with a closing quote after it, to count
    its fields. Each line counts ``_LINE_COST`` bytes more against the size limit, so that the
    lines held in memory stay near that bound however short they are.
    """
    _, raw, ending = line
    if raw is None:
        return len(ending) + _LINE_COST, 0, _STOP
    size = len(raw) + len(ending) + _LINE_COST
    cells = _cells(b'"' + raw, 0, delimiter)
    state = _CLOSED
    if cells is _UNBALANCED:
        cells, state = _cells(b'"' + raw + b'"', 0, delimiter), _OPEN
    if isinstance(cells, str):
        return size, 0, _STOP
    return size, len(cells) - 1, state


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
