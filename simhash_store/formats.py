"""Records in and out of files: JSONL, CSV and Parquet, every field kept in order and type.

Reading reuses :mod:`corpus`'s JSONL and CSV readers (a bad line becomes a Skip naming
it); Parquet goes through pyarrow, the optional extra ``simhash-store[parquet]``.
Writers write to ``OUTPUT.partial`` and rename it over ``OUTPUT`` when done, so an
interrupted run never leaves a half-written file under the real name.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from typing import IO, Any, Iterator

from .corpus import Skip
from .records import DEFAULT_MAX_BYTES, _delimited_rows, _json_rows, _refuse_missing_fields
from .errors import SimhashStoreError

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


def _pyarrow():
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
    pyarrow = _pyarrow()
    try:
        table = pyarrow.parquet.ParquetFile(path)
    except (OSError, pyarrow.ArrowException) as exc:
        raise FormatError(f"cannot read {path} as Parquet: {exc}") from None
    number = 0
    for batch in table.iter_batches(batch_size=4096):
        for record in batch.to_pylist():
            number += 1
            yield f"{path}:row {number}", record


def parquet_schema(path: str):
    """The Arrow schema of a Parquet input, so that the output keeps its column types."""
    return _pyarrow().parquet.read_schema(path)


def _json_line(record: dict) -> str:
    # U+2028 and U+2029 end lines for some splitters: escape them so each line is one record.
    text = json.dumps(record, ensure_ascii=False, default=_unwritable)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n"


def _unwritable(value: Any) -> Any:
    # The readers keep an integer of thousands of digits as a HugeInteger that only counts them.
    raise FormatError(f"holds {value!r}, which cannot be written back as it was")


class RecordWriter:
    """Writes records to a path ('-': stdout) in a format; :meth:`close` publishes the file."""

    def __init__(self, path: str, format: str, *, schema: Any = None, extra_fields: dict[str, Any] | None = None) -> None:
        self.path, self.format = path, format
        self._schema = schema  # Arrow schema of a Parquet input
        self._extra = extra_fields or {}  # annotation fields and their Arrow types
        self._partial = None if path == "-" else path + ".partial"
        self._stream: IO | None = None
        self._csv = None
        self._header: list[str] | None = None
        self._rows: list[dict] = []
        self._parquet = None
        if format == "parquet":
            if path == "-":
                raise FormatError("Parquet cannot go to stdout: give -o FILE.parquet")
            _pyarrow()
        elif path == "-":
            self._stream = sys.stdout
        else:
            self._stream = open(self._partial, "w", encoding="utf-8", newline="")  # type: ignore[arg-type]

    def write(self, record: dict) -> None:
        if self.format == "jsonl":
            self._stream.write(_json_line(record))  # type: ignore[union-attr]
        elif self.format == "csv":
            if self._csv is None:
                self._csv = csv.writer(self._stream)  # type: ignore[arg-type]
                self._header = list(record)
                self._csv.writerow(self._header)
            extra = [f for f in record if f not in self._header]  # type: ignore[operator]
            if extra:
                raise FormatError(
                    f"a record has fields the first one had not ({', '.join(map(repr, extra[:5]))}), "
                    "which a CSV header cannot take: write JSONL or Parquet"
                )
            self._csv.writerow(["" if record.get(f) is None else _cell(record.get(f)) for f in self._header])
        else:
            self._rows.append(record)
            if len(self._rows) >= 4096:
                self._flush_parquet()

    def _flush_parquet(self) -> None:
        if not self._rows:
            return
        pyarrow = _pyarrow()
        if self._parquet is None:
            if self._schema is not None:
                schema = self._schema
                for name, kind in self._extra.items():
                    if schema.get_field_index(name) < 0:
                        schema = schema.append(pyarrow.field(name, kind))
            else:
                inferred = pyarrow.Table.from_pylist(self._rows).schema
                schema = pyarrow.schema([
                    pyarrow.field(f.name, self._extra.get(f.name, f.type)) for f in inferred
                ])
            self._parquet = pyarrow.parquet.ParquetWriter(self._partial, schema)
        try:
            table = pyarrow.Table.from_pylist(self._rows, schema=self._parquet.schema)
        except (pyarrow.ArrowException, TypeError, ValueError) as exc:
            raise FormatError(f"a record does not fit the Parquet columns of the first ones: {exc}") from None
        self._parquet.write_table(table)
        self._rows = []

    def close(self) -> None:
        """Finish the output and move it to its name (on success only)."""
        if self.format == "parquet":
            self._flush_parquet()
            if self._parquet is None:  # no record: still an empty file with the input's columns
                pyarrow = _pyarrow()
                schema = self._schema if self._schema is not None else pyarrow.schema([])
                self._parquet = pyarrow.parquet.ParquetWriter(self._partial, schema)
            self._parquet.close()
        elif self._stream is not None:
            self._stream.flush()
            if self._stream is not sys.stdout:
                os.fsync(self._stream.fileno())
                self._stream.close()
        if self._partial is not None:
            os.replace(self._partial, self.path)

    def abandon(self) -> None:
        """Stop without publishing: the partial file is removed, the real name untouched."""
        try:
            if self._parquet is not None:
                self._parquet.close()
            if self._stream is not None and self._stream is not sys.stdout:
                self._stream.close()
        finally:
            if self._partial is not None and os.path.exists(self._partial):
                os.unlink(self._partial)


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


__all__ = ["FORMATS", "FormatError", "RecordWriter", "format_of", "parquet_schema", "read_records"]
