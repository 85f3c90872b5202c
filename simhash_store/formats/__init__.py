"""Every input and output format, behind one registry: records and documents in, records out.

Input formats (:data:`INPUTS`): ``text`` (files, directories, stdin), ``jsonl``, ``csv``,
``tsv``, ``parquet``, ``html`` (web pages), ``warc`` (crawls); output formats (:data:`OUTPUTS`): ``jsonl``, ``csv``, ``tsv``, ``parquet``.
Every command that reads takes any input format with the same options (:class:`ReadOptions`)
and the same bad-record rules; see :mod:`~simhash_store.formats.registry` for how a format is
added (one module and one registration).

>>> rows = read_records("pages.jsonl", options=ReadOptions(key_field="url", text_field="body"))  # doctest: +SKIP
>>> for where, record in rows:  # doctest: +SKIP
...     print(where, record)  # pages.jsonl:1 {'url': ..., 'body': ...}, or a Skip for a bad line
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..corpus import Skip, Source

# The formats shipped, each registering itself; the order is the order sniffers are asked in.
# isort: off
from . import text, jsonl, delimited, parquet, html, warc  # noqa: F401

# isort: on
from .delimited import RepeatedColumnError
from .documents import (
    FingerprintRecord,
    collision,
    fingerprint_records,
    parse_fingerprint,
    read_fingerprints,
    read_jsonl,
    record_documents,
    unique_keys,
)
from .lines import DEFAULT_MAX_BYTES, HugeInteger, MissingFieldError, lines
from .parquet import parquet_schemas, pyarrow_module
from .registry import (
    INPUTS,
    OUTPUTS,
    FormatError,
    Input,
    InputFormat,
    OutputFormat,
    ReadOptions,
    input_format,
    output_format,
    output_format_for,
    register_input,
    register_output,
    resolve_format,
)
from .writing import RecordWriter, check_writable


def read_records(
    path: str,
    format: str | None = None,
    options: ReadOptions | None = None,
    *,
    default: str | None = None,
    on_read: Callable[[int], None] | None = None,
) -> Iterator[tuple[str, dict[str, Any] | Skip]]:
    """``(where, record or Skip)`` for every record of one input ('-': stdin), in order.

    ``format``: a registered name, else told from the name (:func:`resolve_format`; ``default``
    for a name that says nothing). The input is opened and its first record checked for
    ``options.required`` now: an InputError or FormatError here, before any work. ``on_read``
    is told the bytes of the input read so far (not for Parquet, read by pyarrow).
    """
    options = options or ReadOptions()
    return resolve_format(path, format, default=default).records(Input(path, on_read=on_read), options)


def read_documents(
    paths: Iterable[str],
    format: str | None = None,
    options: ReadOptions | None = None,
    *,
    default: str | None = "text",
    on_read: Callable[[int], None] | None = None,
) -> Iterator[Source | Skip]:
    """The documents (key, text or file, metadata) of every input in order, whatever its format.

    Files and directories of text are walked (their bytes read later by whoever fingerprints
    them); records become documents by ``options.key_field`` and ``options.text_field``
    (:func:`~simhash_store.formats.documents.record_documents`). Every input is opened and
    checked now, so that a missing field or an unreadable input is one error before any work.
    """
    options = options or ReadOptions()
    parts = []
    for path in paths:
        chosen = resolve_format(path, format, default=default)
        if chosen.documents is not None:
            parts.append(chosen.documents(Input(path, on_read=on_read), options))
        else:
            parts.append(record_documents(chosen.records(Input(path, on_read=on_read), options), options))
    return (item for part in parts for item in part)


def open_writer(
    path: str, format: str | None = None, *, schema: Any = None, extra_fields: dict[str, Any] | None = None
) -> RecordWriter:
    """A writer of records to ``path`` ('-': stdout) in ``format``, else the one its name implies."""
    return output_format_for(path, format).writer(path, schema=schema, extra_fields=extra_fields)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "INPUTS",
    "OUTPUTS",
    "FingerprintRecord",
    "FormatError",
    "HugeInteger",
    "Input",
    "InputFormat",
    "MissingFieldError",
    "OutputFormat",
    "ReadOptions",
    "RecordWriter",
    "RepeatedColumnError",
    "check_writable",
    "collision",
    "fingerprint_records",
    "input_format",
    "lines",
    "open_writer",
    "output_format",
    "output_format_for",
    "parquet_schemas",
    "parse_fingerprint",
    "pyarrow_module",
    "read_documents",
    "read_fingerprints",
    "read_jsonl",
    "read_records",
    "record_documents",
    "register_input",
    "register_output",
    "resolve_format",
    "unique_keys",
]
