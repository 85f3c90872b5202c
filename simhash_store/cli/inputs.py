"""The input and output options every command shares (--format, --key-field, --text-field, --html-field,
-o, --output-format), and the calls into the format registry that turn their errors into one line."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any

import typer

from .. import formats
from ..corpus import Pattern, Skip, Source, same_file, written_inside
from ..errors import SimhashStoreError
from ..progress import OnProgress
from .common import fail

INPUT_NAMES = tuple(formats.INPUTS)
OUTPUT_NAMES = tuple(formats.OUTPUTS)


def choices(values: tuple[str, ...]) -> str:
    return "[" + "|".join(values) + "]"


FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar=choices(INPUT_NAMES),
        help="Read every input in this format (default: by each input's name; a directory is text).",
    ),
]
KeyField = Annotated[str, typer.Option("--key-field", help="Field (or column) of a record holding the key.")]
TextField = Annotated[str, typer.Option("--text-field", help="Field (or column) of a record holding the text.")]
HtmlField = Annotated[
    str | None,
    typer.Option(
        "--html-field",
        help="Field (or column) of a record holding a web page's HTML, whose main content is the text (instead of --text-field).",
    ),
]
Output = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        help="Write the results to this file instead of the tables: JSONL, CSV, TSV or Parquet by its name "
        "(or --output-format); '-': JSONL on stdout.",
    ),
]
OutputFormatOption = Annotated[
    str | None,
    typer.Option("--output-format", metavar=choices(OUTPUT_NAMES), help="Format of -o (default: by its name)."),
]


def text_role(text_field: str, html_field: str | None) -> dict[str, str]:
    """The field a record must have for its text: ``--html-field`` when given, else ``--text-field``."""
    return {html_field: "the page"} if html_field is not None else {text_field: "the text"}


def input_format(given: str | None, option: str = "--format") -> str | None:
    """A --format value checked against the registry (a usage error otherwise)."""
    if given is not None and given not in formats.INPUTS:
        raise typer.BadParameter(f"must be one of {', '.join(formats.INPUTS)}, not {given!r}", param_hint=option)
    return given


def output_format(path: str, given: str | None, option: str = "--output-format") -> str:
    """The output format of ``path``: the one given, else the one its name says (a usage error otherwise)."""
    try:
        return formats.output_format_for(path, given).name
    except formats.FormatError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


def check_patterns(include: list[str] | None, exclude: list[str] | None) -> None:
    for pattern in [*(include or []), *(exclude or [])]:
        try:
            Pattern(pattern)
        except ValueError as exc:  # an empty pattern
            raise typer.BadParameter(str(exc), param_hint="--include/--exclude") from None


def resolved(path: str, given: str | None, default: str | None) -> formats.InputFormat:
    """The format of an input (a usage error when it cannot be told, or cannot be read from stdin)."""
    try:
        chosen = formats.resolve_format(path, given, default=default)
    except formats.FormatError as exc:
        raise typer.BadParameter(str(exc), param_hint="--format") from None
    if path == "-" and not chosen.stdin:
        raise typer.BadParameter(
            f"{chosen.name} cannot be read from standard input: give a file", param_hint="--format"
        )
    return chosen


def documents(
    path: str,
    given: str | None,
    options: formats.ReadOptions,
    *,
    default: str | None = "text",
    hint: str = "",
    on_read: OnProgress | None = None,
) -> Iterator[Source | Skip]:
    """The documents of one input, opened and checked now: an input that cannot be read, or whose
    first record lacks a field, is one line (``hint`` after a missing field: which options choose them)."""
    chosen = resolved(path, given, default)
    try:
        return formats.read_documents([path], chosen.name, options, on_read=_bytes_only(on_read))
    except formats.MissingFieldError as exc:
        fail(f"{exc}{hint}")
    except SimhashStoreError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


def records(
    path: str,
    given: str | None,
    options: formats.ReadOptions,
    *,
    default: str | None = None,
    hint: str = "",
    on_read: OnProgress | None = None,
) -> Iterator[tuple[str, dict[str, Any] | Skip]]:
    """The records of one input, opened and checked now (see :func:`documents`)."""
    chosen = resolved(path, given, default)
    try:
        return formats.read_records(path, chosen.name, options, on_read=_bytes_only(on_read))
    except formats.FormatError as exc:
        raise typer.BadParameter(str(exc), param_hint="--format") from None
    except formats.MissingFieldError as exc:
        fail(f"{exc}{hint}")
    except SimhashStoreError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


def _bytes_only(on_progress: OnProgress | None) -> Callable[[int], None] | None:
    """The input layer tells the bytes read alone; the total is the caller's to know."""
    return None if on_progress is None else (lambda done: on_progress(done, None))


def refuse_output_onto_input(output: str | os.PathLike[str] | None, inputs: Iterable[str | os.PathLike[str]]) -> None:
    """One line, before any work, when the file to write is one of the inputs: writing it would replace what is read."""
    if output is None or str(output) == "-":
        return
    for path in inputs:
        if same_file(str(path), str(output)):
            fail(
                f"the output {output} is the input {path if str(path) != '-' else 'standard input'}: write to another file"
            )
        if str(path) != "-" and written_inside(str(output), str(path)):
            fail(
                f"the output {output} is inside the input directory {path}, where a later run would read it: write it elsewhere"
            )


def open_writer(path: str, format: str, **given: Any) -> formats.RecordWriter:
    """A writer for ``path``, claimed before any work: another run writing it stops here, in one line."""
    try:
        return formats.open_writer(path, format, **given)
    except SimhashStoreError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    raise AssertionError("unreachable")
