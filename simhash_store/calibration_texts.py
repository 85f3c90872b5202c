"""The texts ``calibrate`` samples: inputs of any format (files, directories, JSONL, CSV, TSV,
Parquet records), or the stored keys that name readable files. No database here: stored keys
are handed in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from . import corpus
from .decoding import DecodeError, decode
from .errors import InputError
from .formats import ReadOptions, read_documents
from .formats.lines import DEFAULT_MAX_BYTES


@dataclass
class Texts:
    """``(key, text)`` pairs to calibrate on, and how many inputs could not be read."""

    texts: list[tuple[str, str]] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # how a JSONL record is shown (FILE:LINE), by its key
    skipped: int = 0

    def extend(self, other: Texts) -> None:
        self.texts += other.texts
        self.names.update(other.names)
        self.skipped += other.skipped


def texts_of_inputs(
    names: list[str],
    formats: list[str | None] | None = None,
    text_field: str = "text",
    *,
    html_field: str | None = None,
) -> Texts:
    """The texts of inputs of any format (see :func:`simhash_store.formats.read_documents`; ``formats``:
    each one's, None to tell it by its name, a file whose name says nothing being text).

    A file is keyed as ``add`` keys it; a record by its number among the records read (bad ones
    too), which seeds its variants, and shown by its place (``FILE:LINE``). A record without
    ``text_field`` as a string, or a file that cannot be read or decoded, is counted as skipped.
    ``html_field``: records hold a web page's HTML there, and its main content is the text.
    Raises InputError (MissingFieldError) when an input's first record has no ``text_field``.
    """
    required = {html_field: "the page"} if html_field is not None else {text_field: "the text"}
    options = ReadOptions(text_field=text_field, required=required, html_field=html_field)
    parts = [read_documents([name], given, options) for name, given in zip(names, formats or [None] * len(names))]
    found = Texts()
    for number, item in enumerate(chain.from_iterable(parts)):
        if isinstance(item, corpus.Skip):
            found.skipped += 1
        elif item.text is not None:
            found.texts.append((str(number), item.text))
            found.names[str(number)] = item.shown
        else:
            _read_into(found, item.key, Path(str(item.path)))
    return found


def texts_of_jsonl(path: str, text_field: str) -> Texts:
    """The ``text_field`` of each JSONL record (``-``: standard input), keyed by the record's
    number, which seeds its variants; a record without that text is skipped."""
    return texts_of_inputs([path], ["jsonl"], text_field)


def texts_of_paths(paths: Iterable[str | Path]) -> Texts:
    """The files under ``paths`` (walked as ``add`` walks them), keyed as ``add`` keys them."""
    names = [str(path) for path in paths]
    return texts_of_inputs(names, ["text"] * len(names))


def texts_of_keys(keys: Iterable[str]) -> Texts:
    """The stored keys that name readable files here. Raises InputError for fewer than two."""
    found = Texts()
    for key in keys:
        _read_into(found, key, Path(key))
    if len(found.texts) < 2:
        raise InputError(
            "the store keeps fingerprints, not texts, and fewer than two stored keys name readable files "
            "here: give the documents (PATHS or --jsonl)"
        )
    return found


def _read_into(found: Texts, key: str, path: Path) -> None:
    # As add reads a file: a stored key is anyone's to choose, and one naming a FIFO waited for a
    # writer for ever, /dev/zero was read until memory ran out (a MemoryError traceback).
    data = corpus.read_file(corpus.Source(key, str(path)), DEFAULT_MAX_BYTES)
    if isinstance(data, corpus.Skip):
        found.skipped += 1
        return
    try:
        found.texts.append((key, decode(data).text))
    except DecodeError:
        found.skipped += 1
