"""What the command line's document arguments name, as sources: files, directories walked as
``add`` walks them, ``-`` for standard input (read whole, up to a bound, as a stream may never
end), and records of any input format (:mod:`~simhash_store.formats`). Used by ``query``,
``fingerprint`` and ``explain``; no database here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from itertools import chain
from pathlib import Path

from . import corpus
from .decoding import DecodeError, decode
from .errors import InputError
from .formats import DEFAULT_MAX_BYTES, ReadOptions, read_documents, resolve_format
from .html import text_of
from .terminal import visible


def argument_sources(
    names: list[str], formats: Sequence[str | None] | None = None, options: ReadOptions | None = None
) -> Iterator[corpus.Source | corpus.Skip]:
    """A Source (or the Skip saying why not) for each document named; a directory gives the
    files under it, each named by its path as given under the directory (not the key ``add``
    would give it), ``-`` the text of standard input. ``formats``: the input format of each name
    (None: told by its name, a file whose name says nothing being text; default: text for all);
    records give a Source each, named by ``options.key_field``, else by their place (``FILE:LINE``).
    Every input is opened, and records checked for their first one, now.
    """
    options = options or ReadOptions(required={})
    parts: list[Iterator[corpus.Source | corpus.Skip] | list[corpus.Source | corpus.Skip]] = []
    for name, given in zip(names, formats if formats is not None else ["text"] * len(names)):
        if resolve_format(name, given, default="text").documents is None:
            parts.append(read_documents([name], given, options))
        elif name == "-":
            parts.append([_stdin_source()])
        elif Path(name).is_dir():
            parts.append(
                [
                    dataclasses.replace(item, key=item.path or item.key) if isinstance(item, corpus.Source) else item
                    for item in corpus.walk([name])
                ]
            )
        else:
            parts.append([corpus.file_source(name)])
    return chain.from_iterable(parts)


def _stdin_source() -> corpus.Source | corpus.Skip:
    too_large = corpus.Skip("-", corpus.TOO_LARGE, f"over {DEFAULT_MAX_BYTES:,} bytes")
    if corpus.left_to_read_over(sys.stdin.buffer, DEFAULT_MAX_BYTES):
        return too_large
    try:
        data = corpus.read_up_to(sys.stdin.buffer, DEFAULT_MAX_BYTES + 1)
    except MemoryError:
        return corpus.Skip("-", corpus.TOO_LARGE, "it does not fit in memory")
    if len(data) > DEFAULT_MAX_BYTES:
        return too_large
    try:
        return corpus.Source("-", text=decode(data).text, size=len(data))
    except DecodeError as exc:
        return corpus.Skip("-", exc.reason, exc.detail)


def read_text(path: str) -> str:
    """A document's text (``-``: standard input), decoded as ``add`` decodes files (a web page,
    by its name or its content: its main content, as the html format reads it).

    Raises InputError, in one line, for a file that cannot be opened, is not a regular file
    (a FIFO would wait for a writer forever, /dev/zero never ends), is larger than ``add``
    reads (1 GiB), or cannot be decoded.
    """
    limit = DEFAULT_MAX_BYTES  # as add and fingerprint read stdin: a stream may never end
    with contextlib.suppress(OSError):  # a missing file is said by open() below
        mode = os.stat(path).st_mode if path != "-" else stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise InputError(f"cannot open {visible(path)}: not a regular file ({corpus.special_kind(mode)})")
    too_large = InputError(f"{visible(path)}: {corpus.TOO_LARGE} (more than {limit >> 20} MiB)")
    try:
        with open(sys.stdin.fileno(), "rb", closefd=False) if path == "-" else corpus.open_regular_file(path) as handle:
            if corpus.left_to_read_over(handle, limit):
                raise too_large
            data = corpus.read_up_to(handle, limit + 1)
    except OSError as exc:
        raise InputError(f"cannot open {visible(path)}: {exc.strerror}") from None
    except MemoryError:
        raise InputError(f"{visible(path)}: {corpus.TOO_LARGE} (it does not fit in memory)") from None
    if len(data) > limit:
        raise too_large
    try:
        return text_of(data, path).text
    except DecodeError as exc:
        raise InputError(f"{path}: {exc.reason}" + (f" ({exc.detail})" if exc.detail else "")) from None
