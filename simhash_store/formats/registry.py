"""The registry of input and output formats: a format is one module and one registration.

An input format is an :class:`InputFormat`: a name, the file name endings that imply it, an
optional ``sniff`` of a file's first bytes, and ``read``, a function from an :class:`Input`
(a path, ``-`` for stdin, or a stream given) and the :class:`ReadOptions` every command shares
(key field, text field, metadata fields, size limit, ...) to ``(where, record or Skip)``
pairs in input order. ``where`` names the record in messages (``FILE:LINE``, ``FILE:row N``).
The rules every reader keeps:

- a bad record costs only itself: it is a :class:`~simhash_store.corpus.Skip` naming it
  (``failed: pages.jsonl:7: bad record (not valid JSON: ...)``), and reading goes on;
- what makes every record fail (a file that cannot be opened, a header that names a column
  twice) raises :class:`~simhash_store.errors.InputError` in one line, before any record;
- the records are dicts of the fields as read; the registry checks that the first one has
  the fields the command needs (:attr:`ReadOptions.required`), so a field name given wrong
  is one line, not a million failures.

An output format is an :class:`OutputFormat`: a name, its endings, and a
:class:`~simhash_store.formats.writing.RecordWriter` subclass.

>>> resolve_format("crawl.jsonl").name, resolve_format("legacy.TSV").name
('jsonl', 'tsv')
>>> output_format_for("clean.parquet").name
'parquet'
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from .. import progress
from ..corpus import Skip, open_regular_file
from ..errors import InputError, SimhashStoreError
from .lines import DEFAULT_MAX_BYTES, require_fields

if TYPE_CHECKING:
    from .writing import RecordWriter

SNIFF_BYTES = 4096  # what a sniffer is shown of a file's start
STDIN_FORMAT = "jsonl"  # standard input, where the command reads records and no --format is given


class FormatError(SimhashStoreError):
    """An input or output whose format cannot be read or written."""


@dataclass(frozen=True)
class ReadOptions:
    """What every command asks of its inputs, whatever their format.

    ``key_field``/``text_field``: the fields holding the key and the text (a plain text file's
    record has them under these names too). ``metadata_fields``: fields kept with each
    document (``add --metadata-field``). ``required``: field -> its role, checked on the first
    record. ``prefix``: prepended to every key. ``include``, ``exclude``, ``hidden``: which files
    of a directory are read (the walk of :func:`simhash_store.corpus.walk`). ``max_bytes``: the
    largest line, record or file read into memory. ``html_field``: the field holding a web page's
    HTML, whose main content is the text (instead of ``text_field``). ``keep_field``: the field
    a keep policy ``field:NAME`` compares; each document carries its value (``Source.keep_value``).
    """

    key_field: str = "key"
    text_field: str = "text"
    metadata_fields: tuple[str, ...] = ()
    required: dict[str, str] = field(default_factory=dict)
    prefix: str = ""
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    hidden: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES
    html_field: str | None = None  # a field holding a web page's HTML: its main content is the text
    keep_field: str | None = None  # the field of a store's keep policy (field:NAME): its value goes with each document


@dataclass(frozen=True)
class Input:
    """One input: a path, ``-`` for standard input, or a stream already open (``name`` names it)."""

    name: str
    stream: IO[bytes] | None = None
    on_read: Callable[[int], None] | None = None  # told the bytes read so far (a file or stdin, not Parquet)

    @property
    def path(self) -> str | None:
        """The file's path; None for standard input or a stream given."""
        return None if self.stream is not None or self.name == "-" else self.name

    @contextlib.contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        """The bytes of the input; a stream given or stdin is not closed afterwards."""
        if self.stream is not None:
            yield self._counted(self.stream)
        elif self.name == "-":
            yield self._counted(sys.stdin.buffer)
        else:
            try:
                handle = open_regular_file(self.name)  # a FIFO (or a device) is not waited on, nor read for ever
            except OSError as exc:
                reason = exc.strerror or str(exc)
                if reason.startswith("not a regular file"):
                    reason += "; give its records on standard input ('-')"
                raise InputError(f"cannot open {self.name}: {reason}") from None
            with handle:
                yield self._counted(handle)

    def _counted(self, stream: IO[bytes]) -> IO[bytes]:
        on_read = self.on_read
        if on_read is None:
            return stream
        return progress.counting_reader(stream, lambda done, total: on_read(done))


Reader = Callable[[Input, ReadOptions], Iterator[tuple[str, "dict[str, Any] | Skip"]]]
Documents = Callable[[Input, ReadOptions], Iterator[Any]]


@dataclass(frozen=True)
class InputFormat:
    """An input format. ``read`` gives its records; the rest says when it applies.

    ``sniff``: given the first bytes of a file whose name says nothing, whether
    they are this format's. ``stdin``: whether it reads ``-`` (Parquet needs a file it can
    seek in). ``directories``: whether it reads a directory (the text format walks them).
    ``documents``: a reader of documents (Sources) of its own, where reading a record's text
    in this process would cost what the workers can do (the text format hands file paths to
    them); otherwise documents are made from the records by
    :func:`simhash_store.formats.documents.record_documents`.
    """

    name: str
    read: Reader
    suffixes: tuple[str, ...] = ()
    sniff: Callable[[bytes], bool] | None = None
    stdin: bool = True
    directories: bool = False
    documents: Documents | None = None
    description: str = ""

    def records(self, source: Input, options: ReadOptions) -> Iterator[tuple[str, dict[str, Any] | Skip]]:
        """``read`` with the rules of the registry: the input is opened, and the first record checked
        for the required fields, now (an InputError here, not at the first record)."""
        if source.name == "-" and source.stream is None and not self.stdin:
            raise FormatError(f"{self.name} cannot be read from standard input: give a file")
        if source.path is not None and os.path.isdir(source.path) and not self.directories:
            raise InputError(f"cannot read {source.name} as {self.name}: it is a directory")
        return require_fields(self.read(source, options), source.name, options.required)


@dataclass(frozen=True)
class OutputFormat:
    """An output format: ``writer(path, schema=..., extra_fields=...)`` writes records to ``path`` ('-': stdout)."""

    name: str
    writer: type[RecordWriter]
    suffixes: tuple[str, ...] = ()
    description: str = ""


INPUTS: dict[str, InputFormat] = {}
OUTPUTS: dict[str, OutputFormat] = {}


def register_input(format: InputFormat) -> InputFormat:
    """Make an input format known by its name, endings and sniffer; a later one of a name replaces it."""
    INPUTS[format.name] = format
    return format


def register_output(format: OutputFormat) -> OutputFormat:
    """Make an output format known by its name and endings."""
    OUTPUTS[format.name] = format
    return format


def input_format(name: str) -> InputFormat:
    try:
        return INPUTS[name]
    except KeyError:
        raise FormatError(f"input format must be one of {', '.join(INPUTS)}, not {name!r}") from None


def output_format(name: str) -> OutputFormat:
    try:
        return OUTPUTS[name]
    except KeyError:
        raise FormatError(f"output format must be one of {', '.join(OUTPUTS)}, not {name!r}") from None


def _suffix_match(path: str, suffixes: tuple[str, ...]) -> int:
    """The length of the longest ending of ``path`` among ``suffixes`` (0: none)."""
    lower = path.lower()
    return max((len(suffix) for suffix in suffixes if lower.endswith(suffix)), default=0)


def _input_by_suffix(path: str) -> InputFormat | None:
    best = max(INPUTS.values(), key=lambda f: _suffix_match(path, f.suffixes), default=None)
    return best if best is not None and _suffix_match(path, best.suffixes) else None


def _output_by_suffix(path: str) -> OutputFormat | None:
    best = max(OUTPUTS.values(), key=lambda f: _suffix_match(path, f.suffixes), default=None)
    return best if best is not None and _suffix_match(path, best.suffixes) else None


def resolve_format(path: str, given: str | None = None, *, default: str | None = None) -> InputFormat:
    """The format of an input: the one ``given``; else a directory's (text); else the one its name's
    ending implies; else ``default`` (a command that reads any file as text says so); else JSONL for
    stdin; else the first format whose sniffer knows the file's first bytes; else FormatError asking
    for ``--format``.
    """
    if given is not None:
        return input_format(given)
    if path != "-" and os.path.isdir(path):
        directory = [f for f in INPUTS.values() if f.directories]
        if directory:
            return directory[0]
    if path != "-" and (found := _input_by_suffix(path)) is not None:
        return found
    if default is not None:
        return input_format(default)
    if path == "-":
        # Never sniffed: peeking would wait for the first bytes (a pipe fed later, a terminal)
        # before the command has claimed its output or said anything.
        return input_format(STDIN_FORMAT)
    if head := _head(path):
        for candidate in INPUTS.values():
            if candidate.sniff is not None and candidate.sniff(head):
                return candidate
    names = ", ".join(INPUTS)
    raise FormatError(f"cannot tell the format of {path!r} from its name: give --format ({names})")


def _head(path: str) -> bytes:
    """The first bytes of a regular file; empty when there are none to see."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return b""  # a FIFO would wait for a writer: never opened to be sniffed
        with open_regular_file(path) as handle:
            return handle.read(SNIFF_BYTES)
    except OSError:
        return b""  # said by the reader, with the input's name


def output_format_for(path: str, given: str | None = None) -> OutputFormat:
    """The output format named, or the one a file name implies; stdout ('-') is JSONL."""
    if given is not None:
        return output_format(given)
    if path == "-":
        return output_format("jsonl")
    found = _output_by_suffix(path)
    if found is None:
        names = ", ".join(OUTPUTS)
        raise FormatError(f"cannot tell the format of {path!r} from its name: give --output-format ({names})")
    return found


__all__ = [
    "INPUTS",
    "OUTPUTS",
    "FormatError",
    "Input",
    "InputFormat",
    "OutputFormat",
    "ReadOptions",
    "input_format",
    "output_format",
    "output_format_for",
    "register_input",
    "register_output",
    "resolve_format",
]
