"""Parquet, in and out, through pyarrow (the optional extra ``simhash-store[parquet]``).

Columns keep their Arrow types from input to output where the values still fit them; a file
(or a struct column) that names two columns alike is refused before any work, as a CSV header
is. Parquet needs a file it can seek in: not standard input, not standard output.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..corpus import BAD_RECORD, TOO_LARGE, UNREADABLE, Skip, open_regular_file
from ..errors import InputError
from .columns import OTHER, STRING, TEXT, arrow_type, convert, fits, needs_conversion
from .registry import FormatError, Input, InputFormat, OutputFormat, ReadOptions, register_input, register_output
from .writing import RecordWriter

MAGIC = b"PAR1"
MAX_PARQUET_COLUMNS = 10_000


def pyarrow_module():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise FormatError("Parquet needs pyarrow: pip install 'simhash-store[parquet]'") from None
    return pyarrow


def _checked(path: str, opener: Callable[[Any], Any]) -> Any:
    """``opener(path)`` given the regular file opened at ``path`` (another user may have swapped a
    FIFO in under its name since it was checked: Arrow would wait on it for ever). Arrow opens it
    again through ``/proc/self/fd``, which names that very file, and reads it natively."""
    with open_regular_file(path) as handle:
        again = f"/proc/self/fd/{handle.fileno()}"
        return opener(again) if os.path.exists(again) else opener(handle)


def read(source: Input, options: ReadOptions) -> Iterator[tuple[str, dict | Skip]]:
    """The rows of a Parquet file as records, in order (``FILE:row N``)."""
    path = source.name
    pyarrow = pyarrow_module()
    try:
        table = _checked(path, pyarrow.parquet.ParquetFile)
    except (OSError, pyarrow.ArrowException) as exc:
        raise FormatError(f"cannot read {path} as Parquet: {exc}") from None
    _refuse_repeated_columns(table.schema_arrow, path)
    # Nanosecond timestamps and durations become pandas objects when pandas is installed
    # (Ray brings it): such columns are converted column by column instead (_python_values).
    plain = all(_microsecond_type(field.type, pyarrow) is None for field in table.schema_arrow)
    number = 0
    batches = _batches(table, _parquet_batch_rows(table.metadata))
    while True:
        batch = records = None
        short = False
        try:
            batch = next(batches, None)
            if batch is None:
                return
            if plain:
                try:
                    records = batch.to_pylist()
                except (ValueError, OverflowError, pyarrow.ArrowException):
                    pass
            if records is None:
                records = _rows_beyond_python(batch, pyarrow)
        except (OSError, pyarrow.ArrowException) as exc:  # a damaged row group: the rows before it stay read
            yield path, Skip(path, UNREADABLE, f"after row {number:,}: {_one_line(exc)}")
            return
        except MemoryError:
            short = True
        if short or records is None:  # out of the handler, so that nothing of the conversion outlives it
            batch = records = None
            pyarrow.default_memory_pool().release_unused()  # Arrow's pool keeps what it freed, else
            yield path, Skip(path, TOO_LARGE, f"rows after row {number:,} do not fit in memory as Python values")
            return
        for record in records:
            number += 1
            where = f"{path}:row {number}"
            yield where, Skip(where, BAD_RECORD, record) if isinstance(record, str) else record


def _batches(table, rows: int) -> Iterator:
    """The batches of each row group in turn: a batch never spans two, so that a damaged row
    group costs its own rows, never those of the groups before it."""
    for group in range(table.metadata.num_row_groups):
        yield from table.iter_batches(batch_size=rows, row_groups=[group])


def _one_line(exc: BaseException) -> str:
    """An Arrow message (several lines, the last often empty) as one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


_PARQUET_BATCH_BYTES = 64 << 20  # uncompressed bytes per batch read from a Parquet file


def _parquet_batch_rows(metadata) -> int:
    """Rows per batch, so that a batch holds about 64 MiB of uncompressed data at most.

    Compressed columns can be thousands of times smaller than their data (a 38 KB file held
    245 MB of text: 1.2 GB of memory in batches of 4,096 rows): the rows a batch takes are
    counted from the largest row group's uncompressed size per row, as its metadata gives it.
    """
    widest = max(
        (
            metadata.row_group(i).total_byte_size / max(metadata.row_group(i).num_rows, 1)
            for i in range(metadata.num_row_groups)
        ),
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
            columns[name] = _python_values(column, pyarrow)
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
                values.append(
                    _python_values(column.take([row]), pyarrow)[0]
                )  # not slice(): a cast reads its whole buffers
            except (ValueError, OverflowError, pyarrow.ArrowException):
                failed.setdefault(row, f"the column {name!r} holds a value Python cannot hold ({column.type})")
                values.append(None)
        columns[name] = values
    names = list(columns)
    return (
        [
            failed[row] if row in failed else dict(zip(names, values))
            for row, values in enumerate(zip(*columns.values()))
        ]
        if names
        else [{} for _ in range(batch.num_rows)]
    )


def _python_values(column, pyarrow) -> list:
    """``column.to_pylist()``, alike whether pandas is installed or not.

    pyarrow gives a nanosecond timestamp or duration as a pandas object when it can import
    pandas, else as a datetime or timedelta, raising where nanoseconds would be lost. The
    column is cast to microseconds first (a cast that refuses to lose nanoseconds, raising
    as pyarrow does without pandas), so pandas is never asked.
    """
    microseconds = _microsecond_type(column.type, pyarrow)
    if microseconds is not None:
        column = column.cast(microseconds, safe=True)
    values: list = column.to_pylist()
    return values


def _microsecond_type(kind, pyarrow):
    """``kind`` with each nanosecond timestamp and duration in it (in lists, structs and maps
    too) in microseconds instead; None when it holds none. A dictionary column becomes its values."""
    types = pyarrow.types
    if types.is_timestamp(kind) or types.is_duration(kind):
        if kind.unit != "ns":
            return None
        return pyarrow.timestamp("us", tz=kind.tz) if types.is_timestamp(kind) else pyarrow.duration("us")
    if types.is_list(kind) or types.is_large_list(kind) or types.is_fixed_size_list(kind):
        inner = _microsecond_type(kind.value_type, pyarrow)
        if inner is None:
            return None
        field = kind.value_field.with_type(inner)
        if types.is_fixed_size_list(kind):
            return pyarrow.list_(field, kind.list_size)
        return pyarrow.large_list(field) if types.is_large_list(kind) else pyarrow.list_(field)
    if types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        inner = [_microsecond_type(field.type, pyarrow) for field in fields]
        if all(member is None for member in inner):
            return None
        return pyarrow.struct(
            [field if member is None else field.with_type(member) for field, member in zip(fields, inner)]
        )
    if types.is_map(kind):
        key, item = _microsecond_type(kind.key_type, pyarrow), _microsecond_type(kind.item_type, pyarrow)
        if key is None and item is None:
            return None
        return pyarrow.map_(
            kind.key_field.with_type(key or kind.key_type),
            kind.item_field.with_type(item or kind.item_type),
            keys_sorted=kind.keys_sorted,
        )
    if types.is_dictionary(kind):
        return _microsecond_type(kind.value_type, pyarrow)
    return None


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
            schema = _checked(path, pyarrow.parquet.read_schema)
        except (OSError, pyarrow.ArrowException) as exc:
            raise FormatError(f"cannot read {path} as Parquet: {exc}") from None
        _refuse_repeated_columns(schema, path)
        for field in schema:
            fields.setdefault(field.name, field)
    return pyarrow.schema(list(fields.values()))


class ParquetWriter(RecordWriter):
    """Columns typed from every record's values (:mod:`~simhash_store.formats.columns`), or as given beforehand."""

    binary = True
    to_stdout = False
    stdout_refusal = "Parquet cannot go to stdout: give -o FILE.parquet"

    def prepare(self) -> None:
        pyarrow_module()

    def check_fields(self, record: Mapping[str, Any]) -> None:
        new = sum(1 for name in record if name not in self._columns.fields)
        if new and len(self._columns.fields) + new > MAX_PARQUET_COLUMNS:
            # pyarrow's writer takes about 6 KB a column: 200,000 fields (a 1.4 MB CSV) took 1.3 GB
            raise FormatError(
                f"would make the Parquet output's columns more than {MAX_PARQUET_COLUMNS:,} "
                "(every record's fields are its columns): write JSONL instead"
            )

    def note(self, record: dict) -> None:
        self.check_fields(record)
        self._columns.add(record)

    def finish(self) -> None:
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


register_input(
    InputFormat(
        "parquet",
        read,
        suffixes=(".parquet", ".pq"),
        sniff=lambda head: head.startswith(MAGIC),
        stdin=False,
        description="Apache Parquet (needs pyarrow)",
    )
)
register_output(
    OutputFormat("parquet", ParquetWriter, suffixes=(".parquet", ".pq"), description="Apache Parquet (needs pyarrow)")
)
