"""Records in and out of files: JSONL, CSV and Parquet, every field kept in order and type.

Reading reuses :mod:`records`' JSONL and CSV readers (a bad line becomes a Skip naming
it); Parquet goes through pyarrow, the optional extra ``simhash-store[parquet]``.
Writers write to a temporary file of their own and rename it over ``OUTPUT`` when done
(:mod:`output`), so an interrupted run never leaves a half-written file under the real name.
"""

from __future__ import annotations

import csv
import datetime
import os
import pickle
import sys
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from .columns import OTHER, STRING, TEXT, Columns, arrow_type, as_text, convert, fits, needs_conversion
from .corpus import BAD_RECORD, Skip
from .errors import InputError, SimhashStoreError
from .output import OutputFile
from .records import DEFAULT_MAX_BYTES, HugeInteger, _delimited_rows, _json_rows, _refuse_missing_fields
from .terminal import json_text

FORMATS = ("jsonl", "csv", "parquet")
_EXTENSIONS = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
    ".csv": "csv", ".tsv": "csv",
    ".parquet": "parquet", ".pq": "parquet",
}


class FormatError(SimhashStoreError):
    """An input or output whose format cannot be read or written."""


def format_of(path: str, given: str | None = None) -> str:
    """The format named, or the one a file name implies; stdin/stdout ('-') is JSONL."""
    if given is not None:
        if given not in FORMATS:
            raise FormatError(f"format must be one of {', '.join(FORMATS)}, not {given!r}")
        return given
    if path == "-":
        return "jsonl"
    for extension, name in _EXTENSIONS.items():
        if path.lower().endswith(extension):
            return name
    raise FormatError(f"cannot tell the format of {path!r} from its name: give --format jsonl, csv or parquet")


def pyarrow_module():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise FormatError("Parquet needs pyarrow: pip install 'simhash-store[parquet]'") from None
    return pyarrow


def read_records(path: str, format: str, *, key_field: str, text_field: str) -> Iterator[tuple[str, dict | Skip]]:
    """(where, record or Skip) for every record of a file ('-': stdin), in order."""
    if format == "parquet":
        yield from _parquet_rows(path)
        return
    stream: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")
    try:
        fields = {key_field: "key", text_field: "text"}
        if format == "jsonl":
            yield from _refuse_missing_fields(_json_rows(stream, path, DEFAULT_MAX_BYTES), path, fields)
        else:
            delimiter = "\t" if path.lower().endswith(".tsv") else ","
            yield from _delimited_rows(stream, path, delimiter, fields, DEFAULT_MAX_BYTES)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _parquet_rows(path: str) -> Iterator[tuple[str, dict | Skip]]:
    pyarrow = pyarrow_module()
    try:
        table = pyarrow.parquet.ParquetFile(path)
    except (OSError, pyarrow.ArrowException) as exc:
        raise FormatError(f"cannot read {path} as Parquet: {exc}") from None
    _refuse_repeated_columns(table.schema_arrow, path)
    number = 0
    for batch in table.iter_batches(batch_size=_parquet_batch_rows(table.metadata)):
        try:
            records: list[dict | str] = batch.to_pylist()
        except (ValueError, OverflowError, pyarrow.ArrowException):
            records = _rows_beyond_python(batch, pyarrow)
        for record in records:
            number += 1
            where = f"{path}:row {number}"
            yield where, Skip(where, BAD_RECORD, record) if isinstance(record, str) else record


_PARQUET_BATCH_BYTES = 64 << 20  # uncompressed bytes per batch read from a Parquet file


def _parquet_batch_rows(metadata) -> int:
    """Rows per batch, so that a batch holds about 64 MiB of uncompressed data at most.

    Compressed columns can be thousands of times smaller than their data (a 38 KB file held
    245 MB of text: 1.2 GB of memory in batches of 4,096 rows): the rows a batch takes are
    counted from the largest row group's uncompressed size per row, as its metadata gives it.
    """
    widest = max(
        (metadata.row_group(i).total_byte_size / max(metadata.row_group(i).num_rows, 1) for i in range(metadata.num_row_groups)),
        default=0,
    )
    return max(1, min(4096, int(_PARQUET_BATCH_BYTES // max(widest, 1))))


def _rows_beyond_python(batch, pyarrow) -> list[dict | str]:
    """The records of a batch holding values Python's types cannot hold: timestamps in
    nanoseconds (datetime stops at microseconds), dates and times past the year 9999.

    Such a column is read as the text pyarrow writes for it (``2023-11-14 22:13:20.123456789``,
    ``10000-01-01``): nothing is lost, and a Parquet output turns it back into its type where
    pyarrow can. A value that has no text either (inside a list or a struct) costs its record
    (the reason, a string, in place of the record).
    """
    columns: dict[str, list] = {}
    failed: dict[int, str] = {}
    for name, column in zip(batch.schema.names, batch.columns):
        try:
            columns[name] = column.to_pylist()
            continue
        except (ValueError, OverflowError, pyarrow.ArrowException):
            pass
        try:
            columns[name] = column.cast(pyarrow.string()).to_pylist()
            continue
        except (ValueError, pyarrow.ArrowException):
            pass
        values = []
        for row in range(len(column)):
            try:
                values.append(column[row].as_py())
            except (ValueError, OverflowError, pyarrow.ArrowException):
                failed.setdefault(row, f"the column {name!r} holds a value Python cannot hold ({column.type})")
                values.append(None)
        columns[name] = values
    names = list(columns)
    return [
        failed[row] if row in failed else dict(zip(names, values))
        for row, values in enumerate(zip(*columns.values()))
    ] if names else [{} for _ in range(batch.num_rows)]


def _refuse_repeated_columns(schema, path: str) -> None:
    """Parquet lets two columns (or two members of a struct) share a name; as a record, the
    last would silently hide the first. Refused before any work, as a CSV header is."""
    types = pyarrow_module().types

    def check(fields, where: str) -> None:
        seen: set[str] = set()
        for field in fields:
            if field.name in seen:
                raise InputError(f"{path}: {where} has two columns named {field.name!r}: rename one")
            seen.add(field.name)
        for field in fields:
            kind = field.type
            while types.is_list(kind) or types.is_large_list(kind) or types.is_fixed_size_list(kind):
                kind = kind.value_type
            if types.is_struct(kind):
                check([kind.field(i) for i in range(kind.num_fields)], f"the struct column {field.name!r}")

    check(list(schema), "the file")


def parquet_schemas(paths: list[str]):
    """The Arrow columns of Parquet inputs (None for none), so that the output keeps their types;
    a column in several inputs takes the type of the first that has it."""
    if not paths:
        return None
    pyarrow = pyarrow_module()
    fields: dict[str, Any] = {}
    for path in paths:
        try:
            schema = pyarrow.parquet.read_schema(path)
        except (OSError, pyarrow.ArrowException) as exc:
            raise FormatError(f"cannot read {path} as Parquet: {exc}") from None
        _refuse_repeated_columns(schema, path)
        for field in schema:
            fields.setdefault(field.name, field)
    return pyarrow.schema(list(fields.values()))


def _json_line(record: dict) -> str:
    # U+2028 and U+2029 end lines for some splitters: escape them so each line is one record.
    text = json_text(record, ensure_ascii=False, default=_unwritable)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n"


def _unwritable(value: Any) -> Any:
    # Dates and times (from Parquet) as the text Arrow gives those Python cannot hold, so one
    # column reads alike whichever its values are: 2023-11-14 22:13:20.123456, 2023-11-14.
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    # The readers keep an integer of thousands of digits as a HugeInteger that only counts them.
    raise FormatError(f"holds {value!r}, which cannot be written back as it was")


def _check_writable(value: Any) -> None:
    """Raise FormatError if a value cannot be written to a file as it is, before it is kept for later."""
    kind = type(value)
    if kind is str:
        _check_text(value)
    elif kind is dict:
        for name, member in value.items():
            _check_text(name)
            if type(member) not in _PLAIN:  # the common case inline: a record is checked at each write
                _check_writable(member)
    elif kind is list:
        for item in value:
            if type(item) not in _PLAIN:
                _check_writable(item)
    elif isinstance(value, HugeInteger):
        _unwritable(value)


_PLAIN = frozenset({int, float, bool, type(None)})


def _check_text(text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise FormatError("holds a lone surrogate (a \\ud800-\\udfff escape alone), which UTF-8 cannot hold") from None


MAX_PARQUET_COLUMNS = 10_000
_SPILL_BATCH = 4096  # records per pickled batch, and per Parquet row group


class RecordWriter:
    """Writes records to a path ('-': stdout) in a format; :meth:`close` publishes the file.

    The file is written under a temporary name of its own and renamed at :meth:`close` (see
    :mod:`output`): another run writing the same path stops at once, a link planted in the
    directory is never followed. JSONL is written as it comes. CSV and Parquet need every
    record's fields before their header or schema: records wait in an unnamed temporary file
    beside the output (``schema`` and ``extra_fields``, Arrow types given beforehand, are kept
    where the values fit them), then the columns are the union of the fields in first-seen
    order, typed by :mod:`columns`' rules.
    """

    def __init__(self, path: str, format: str, *, schema: Any = None, extra_fields: dict[str, Any] | None = None) -> None:
        self.path, self.format = path, format
        if format == "parquet":
            if path == "-":
                raise FormatError("Parquet cannot go to stdout: give -o FILE.parquet")
            pyarrow_module()
        # Arrow types given beforehand: a Parquet input's columns, the annotation fields.
        self._given: dict[str, Any] = {}
        if schema is not None:
            self._given.update((field.name, field.type) for field in schema)
        for name, kind in (extra_fields or {}).items():
            self._given.setdefault(name, kind)
        self._columns = Columns()
        self._columns.fields.update((name, None) for name in (schema.names if schema is not None else ()))
        self._output = None if path == "-" else OutputFile(path, binary=format == "parquet")
        self._stream: IO = sys.stdout if self._output is None else self._output.file
        self._spill: IO[bytes] | None = None
        self._batch: list[dict] = []
        self._count = 0
        if format != "jsonl":
            try:
                directory = None if path == "-" else os.path.dirname(os.path.abspath(path))
                # Unnamed (O_TMPFILE where the system has it), so no one can replace it under us.
                self._spill = tempfile.TemporaryFile(dir=directory)
            except BaseException:
                if self._output is not None:
                    self._output.abandon()
                raise

    def write(self, record: dict) -> None:
        """Write one record, or raise FormatError if the output cannot hold it (nothing of it is written)."""
        if self.format == "jsonl":
            line = _json_line(record)
            try:
                self._stream.write(line)
            except UnicodeEncodeError:
                raise FormatError("holds a lone surrogate (a \\ud800-\\udfff escape alone), which UTF-8 cannot hold") from None
            return
        try:
            _check_writable(record)
            if self.format == "csv":
                self._columns.fields.update((name, None) for name in record if name not in self._columns.fields)
            else:
                new = sum(1 for name in record if name not in self._columns.fields)
                if new and len(self._columns.fields) + new > MAX_PARQUET_COLUMNS:
                    # pyarrow's writer takes about 6 KB a column: 200,000 fields (a 1.4 MB CSV) took 1.3 GB
                    raise FormatError(
                        f"would make the Parquet output's columns more than {MAX_PARQUET_COLUMNS:,} "
                        "(every record's fields are its columns): write JSONL instead"
                    )
                self._columns.add(record)
        except RecursionError:
            raise FormatError("nested too deeply to be written") from None
        self._batch.append(record)
        self._count += 1
        if len(self._batch) >= _SPILL_BATCH:
            self._spill_batch()

    def _spill_batch(self) -> None:
        if self._batch:
            pickle.dump(self._batch, self._spill, protocol=pickle.HIGHEST_PROTOCOL)  # type: ignore[arg-type]
            self._batch = []

    def _spilled(self) -> Iterator[list[dict]]:
        """The batches kept so far, in order (read back from the temporary file only this writer has)."""
        self._spill_batch()
        spill = self._spill
        spill.seek(0)  # type: ignore[union-attr]
        while True:
            try:
                yield pickle.load(spill)  # type: ignore[arg-type]
            except EOFError:
                return

    def close(self) -> None:
        """Finish the output and move it to its name (on success only)."""
        try:
            if self.format == "csv":
                self._write_csv()
            elif self.format == "parquet":
                self._write_parquet()
            self._stream.flush()
        except BaseException:
            self.abandon()
            raise
        if self._spill is not None:
            self._spill.close()
        if self._output is not None:
            self._output.commit()

    def _write_csv(self) -> None:
        if not self._count:
            return  # no record: an empty file, as before there were any
        header = list(self._columns.fields)
        writer = csv.writer(self._stream, delimiter="\t" if self.path.lower().endswith(".tsv") else ",")
        writer.writerow(header)
        for batch in self._spilled():
            writer.writerows(["" if record.get(f) is None else as_text(record.get(f)) for f in header] for record in batch)

    def _write_parquet(self) -> None:
        pyarrow = pyarrow_module()
        plan = {name: self._column_plan(name, shape) for name, shape in self._columns.fields.items()}
        retyped: set[str] = set()
        while True:
            try:
                self._write_parquet_with(plan, pyarrow)
                return
            except _ColumnFailed as failed:
                # A value pyarrow would not take as planned (300 in a Parquet input's int8): the
                # column takes the type of its values instead, else text (which always holds),
                # and the file is written again from the start.
                shape = self._columns.fields[failed.name]
                if failed.name in self._given and failed.name not in retyped:
                    plan[failed.name] = self._column_plan(failed.name, shape, use_given=False)
                else:
                    plan[failed.name] = (pyarrow.string(), TEXT)
                retyped.add(failed.name)
                self._stream.seek(0)
                self._stream.truncate()

    def _column_plan(self, name: str, shape: Any, use_given: bool = True) -> tuple[Any, Any]:
        """(Arrow type, shape whose conversion the values need, or None to take them as they are)."""
        pyarrow = pyarrow_module()
        given = self._given.get(name) if use_given else None
        if given is not None and fits(shape, given, pyarrow):
            return given, None
        if given is not None and pyarrow.types.is_temporal(given) and shape in (STRING, TEXT, OTHER):
            return given, None  # read as text where Python cannot hold it: parsed back (_arrow_array)
        kind = arrow_type(shape, pyarrow)
        if kind is None:  # not JSON values, from no column given beforehand: their text
            return pyarrow.string(), TEXT
        return kind, shape if needs_conversion(shape) else None

    def _write_parquet_with(self, plan: dict[str, tuple[Any, Any]], pyarrow) -> None:
        schema = pyarrow.schema([pyarrow.field(name, kind) for name, (kind, _) in plan.items()])
        writer = pyarrow.parquet.ParquetWriter(self._stream, schema)
        try:
            for batch in self._spilled():
                columns = []
                for name, (kind, shape) in plan.items():
                    values = [record.get(name) for record in batch]
                    if shape is not None:
                        values = [convert(value, shape) for value in values]
                    try:
                        columns.append(_arrow_array(values, kind, pyarrow))
                    except (pyarrow.ArrowException, TypeError, ValueError, OverflowError) as exc:
                        if shape == TEXT:  # strings always go into a string column: a bug, not the data
                            raise FormatError(f"cannot write the column {name!r} as text: {exc}") from None
                        raise _ColumnFailed(name) from None
                writer.write_table(pyarrow.Table.from_arrays(columns, schema=schema))
        finally:
            writer.close()

    def abandon(self) -> None:
        """Stop without publishing: the temporary files are removed, the real name untouched."""
        try:
            if self._spill is not None:
                self._spill.close()
        finally:
            if self._output is not None:
                self._output.abandon()


def _arrow_array(values: list, kind, pyarrow):
    """``values`` as an Arrow array of ``kind``; a temporal column read as text (values beyond
    Python's datetime) is parsed back into its type, the other values of it through their text."""
    try:
        return pyarrow.array(values, type=kind)
    except (pyarrow.ArrowException, TypeError, ValueError, OverflowError):
        if not pyarrow.types.is_temporal(kind) or not any(isinstance(value, str) for value in values):
            raise
    texts = [value if value is None or isinstance(value, str) else value.isoformat(sep=" ") for value in values]
    return pyarrow.array(texts, type=pyarrow.string()).cast(kind)


class _ColumnFailed(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


__all__ = ["FORMATS", "FormatError", "RecordWriter", "format_of", "parquet_schemas", "read_records"]
