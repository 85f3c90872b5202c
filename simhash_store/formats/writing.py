"""Writing records to a file in any output format: the part every format shares.

A :class:`RecordWriter` writes to a temporary file of its own and renames it over the output
at :meth:`~RecordWriter.close` (:mod:`~simhash_store.formats.output`), so an interrupted run never
leaves a half-written file under the real name, and another run writing the same path stops at
once. A format that needs every record's fields before its header or schema (CSV, Parquet)
keeps the records in an unnamed temporary file beside the output meanwhile; a record the format
cannot hold is refused by :meth:`~RecordWriter.write` with a FormatError, and costs only itself.

A new output format is a subclass: ``binary``, ``spills`` and ``to_stdout`` say what it needs;
:meth:`~RecordWriter.note` sees each record as it comes (the columns so far: ``self._columns``);
:meth:`~RecordWriter.finish` writes the kept records (:meth:`~RecordWriter._spilled`) to
``self._stream``. A format that writes as it comes overrides :meth:`~RecordWriter.write` instead.
"""

from __future__ import annotations

import datetime
import os
import pickle
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import IO, Any

from .columns import Columns
from .lines import HugeInteger
from .output import OutputFile
from .registry import FormatError


def unwritable(value: Any) -> Any:
    # Dates and times (from Parquet) as the text Arrow gives those Python cannot hold, so one
    # column reads alike whichever its values are: 2023-11-14 22:13:20.123456, 2023-11-14.
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    # The readers keep an integer of thousands of digits as a HugeInteger that only counts them.
    raise FormatError(f"holds {value!r}, which cannot be written back as it was")


def check_writable(record: Mapping[str, Any]) -> None:
    """Raise FormatError if some output could not hold the record as it is (a lone surrogate, an
    integer of thousands of digits, nesting too deep): callers check before they store it."""
    try:
        _check_writable(dict(record))
    except RecursionError:
        raise FormatError("nested too deeply to be written") from None


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
        unwritable(value)


_PLAIN = frozenset({int, float, bool, type(None)})


def check_json(value: Any) -> None:
    """Raise FormatError if a value cannot go into a JSON line as it is: what :func:`check_writable`
    refuses, and any value JSON has no type for (a Parquet decimal or binary value)."""
    kind = type(value)
    if kind is str:
        _check_text(value)
    elif kind is dict:
        for name, member in value.items():
            if type(name) is str:
                _check_text(name)
            elif type(name) not in _PLAIN:  # JSON writes numbers, booleans and null as names
                unwritable(name)
            if type(member) not in _PLAIN:
                check_json(member)
    elif kind is list or kind is tuple:
        for item in value:
            if type(item) not in _PLAIN:
                check_json(item)
    elif kind not in _PLAIN:
        unwritable(value)  # dates and times pass (written as text); anything else is refused


def _check_text(text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise FormatError(
                "holds a lone surrogate (a \\ud800-\\udfff escape alone), which UTF-8 cannot hold"
            ) from None


_SPILL_BATCH = 4096  # records per pickled batch, and per Parquet row group


class RecordWriter:
    """Writes records to a path ('-': stdout); :meth:`close` publishes the file.

    ``schema`` and ``extra_fields``: Arrow types given beforehand (a Parquet input's columns, the
    fields dedup adds), kept by formats that type their columns, where the values fit them.
    """

    binary = False  # the file is bytes (Parquet), not UTF-8 text
    spills = True  # records wait for the end (every record's fields are needed first)
    to_stdout = True  # the format can be written to a pipe
    stdout_refusal = "this format cannot go to stdout: give -o FILE"

    def __init__(self, path: str, *, schema: Any = None, extra_fields: dict[str, Any] | None = None) -> None:
        self.path = path
        if path == "-" and not self.to_stdout:
            raise FormatError(self.stdout_refusal)
        if path == "-" and sys.stdout is None:  # started with standard output closed (`>&-`)
            raise FormatError("standard output is closed: give -o FILE")
        self.prepare()
        # Arrow types given beforehand: a Parquet input's columns, the annotation fields.
        self._given: dict[str, Any] = {}
        if schema is not None:
            self._given.update((field.name, field.type) for field in schema)
        for name, kind in (extra_fields or {}).items():
            self._given.setdefault(name, kind)
        self._columns = Columns()
        self._columns.fields.update((name, None) for name in (schema.names if schema is not None else ()))
        self._output = None if path == "-" else OutputFile(path, binary=self.binary)
        try:  # from here on, an error or a signal abandons the output (its file and lock go)
            self._stream: IO = sys.stdout if self._output is None else self._output.file
            self._spill: IO[bytes] | None = None
            self._batch: list[dict] = []
            self._count = 0
            if self.spills:
                directory = None if path == "-" else os.path.dirname(os.path.abspath(path))
                # Unnamed (O_TMPFILE where the system has it), so no one can replace it under us.
                self._spill = tempfile.TemporaryFile(dir=directory)
        except BaseException:
            if self._output is not None:
                self._output.abandon()
            raise

    def prepare(self) -> None:
        """Check, before any file is made, that the format can be written here (its library is installed)."""

    def note(self, record: dict) -> None:
        """See a record as it is kept (the default: its fields and their types, in ``self._columns``)."""
        self._columns.add(record)

    def finish(self) -> None:
        """Write what was kept (the default: nothing more)."""

    def check(self, record: Mapping[str, Any]) -> None:
        """Raise FormatError if this output could not hold the record (nothing is written, nothing
        noted): callers check before they store a record, so one the output cannot hold costs only
        itself. A format with limits of its own adds them in :meth:`check_fields`."""
        try:
            _check_writable(dict(record))
        except RecursionError:
            raise FormatError("nested too deeply to be written") from None
        self.check_fields(record)

    def check_fields(self, record: Mapping[str, Any]) -> None:
        """Raise FormatError if the record's fields, beside those written so far, are more than the
        format can hold (the default: no bound)."""

    def write(self, record: dict) -> None:
        """Write one record, or raise FormatError if the output cannot hold it (nothing of it is written)."""
        try:
            _check_writable(record)
            self.note(record)
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
            self.finish()
            self._stream.flush()
        except BaseException:
            self.abandon()
            raise
        if self._spill is not None:
            self._spill.close()
        if self._output is not None:
            self._output.commit()

    def abandon(self) -> None:
        """Stop without publishing: the temporary files are removed, the real name untouched."""
        try:
            if self._spill is not None:
                self._spill.close()
        finally:
            if self._output is not None:
                self._output.abandon()


__all__ = ["RecordWriter", "check_json", "check_writable", "unwritable"]
