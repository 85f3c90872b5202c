"""Plain text: files, directories (walked as ``add`` walks them) and standard input, each one document.

As records, a file is ``{key_field: its key, text_field: its text}``: keyed by its path under the
directory argument (or as given, for a file named directly), with ``prefix`` before it, and
decoded as :func:`simhash_store.corpus.decode` decodes (UTF-8, GB18030, Big5, UTF-16, ...), a web
page found in a directory read for its main content (:func:`simhash_store.html.text_of`). A
file that cannot be read or decoded is a Skip naming it; an empty or binary file, or a FIFO
found in a directory, is a deliberate one. As documents (``add``, ``query``), files stay paths:
the workers read and decode them, and an unchanged file is known by its size and time unread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..corpus import TOO_LARGE, UNREADABLE, Skip, Source, left_to_read_over, read_file, read_up_to, walk
from ..decoding import DecodeError, decode
from ..errors import InputError
from ..html import text_of
from .registry import Input, InputFormat, ReadOptions, register_input


def documents(source: Input, options: ReadOptions) -> Iterator[Source | Skip]:
    """The files under a path as Sources (their bytes read later, by whoever fingerprints them);
    standard input, or a stream given, as one Source holding its text."""
    if source.path is None:
        yield _stream_document(source, options)
        return
    try:
        found = walk(
            [source.path],
            include=options.include,
            exclude=options.exclude,
            hidden=options.hidden,
            prefix=options.prefix,
        )
        yield from found
    except ValueError as exc:  # an empty pattern
        raise InputError(str(exc)) from None


def _stream_document(source: Input, options: ReadOptions) -> Source | Skip:
    name = source.name
    too_large = Skip(name, TOO_LARGE, f"over {options.max_bytes:,} bytes")
    with source.open() as stream:
        if left_to_read_over(stream, options.max_bytes):
            return too_large
        try:
            data = read_up_to(stream, options.max_bytes + 1)  # one read(n) of a pipe allocates n first
        except MemoryError:
            return Skip(name, TOO_LARGE, "it does not fit in memory")
    if len(data) > options.max_bytes:
        return too_large
    try:
        text = decode(data).text
    except DecodeError as exc:
        return Skip(name, exc.reason, exc.detail)
    return Source(options.prefix + name, text=text, size=len(data), where=name if options.prefix else None)


def read(source: Input, options: ReadOptions) -> Iterator[tuple[str, dict[str, Any] | Skip]]:
    """Each file (or standard input) as one record of its key and its text."""
    for item in documents(source, options):
        if isinstance(item, Skip):
            yield item.where, item
            continue
        where = item.shown
        if item.text is None:
            raw = read_file(item, options.max_bytes)
            if isinstance(raw, Skip):
                yield where, raw
                continue
            try:
                # a web page found in a directory (by its name or content): its main content, as add reads it
                decoded = text_of(raw, item.path or "")
            except DecodeError as exc:
                yield where, Skip(where, exc.reason, exc.detail)
                continue
            except InputError as exc:  # a web page, and the html extra is not installed
                yield where, Skip(where, UNREADABLE, str(exc))
                continue
            text = decoded.text
        else:
            text = item.text
        yield where, {options.key_field: item.key, options.text_field: text}


register_input(
    InputFormat(
        "text",
        read,
        suffixes=(".txt", ".text"),
        directories=True,
        documents=documents,
        description="plain text files and directories of them (any encoding), or stdin: one document each",
    )
)
