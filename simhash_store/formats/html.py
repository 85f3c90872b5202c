"""Web pages: an HTML file (or stdin) is one record, its main content the text; and a record
field holding a page's HTML (``--html-field``) read the same way.

The page's charset and main content come from :mod:`simhash_store.html` (header, meta tag,
BOM, then the decoding rules; readability-lxml, trafilatura as fallback). A file is keyed as
the text format keys a file named directly: its path as given (``prefix`` is put before it with
every record's key, when records become documents). A page with no
main content, or that is not text, is a deliberate Skip naming it; without the html extra a
page is a Skip saying how to install it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..corpus import BAD_RECORD, TOO_LARGE, UNREADABLE, Skip, read_up_to
from ..decoding import DecodeError
from ..errors import InputError
from ..html import looks_like_html, text_of
from .registry import Input, InputFormat, ReadOptions, register_input


def page_text(data: bytes, where: str, content_type: str | None = None) -> str | Skip:
    """The main content of a page's bytes, or the Skip naming ``where`` and why there is none."""
    try:
        return text_of(data, content_type=content_type, page=True).text
    except DecodeError as exc:
        return Skip(where, exc.reason, exc.detail)
    except InputError as exc:  # the html extra is not installed
        return Skip(where, UNREADABLE, str(exc))


def field_text(record: dict[str, Any], field: str, where: str) -> str | Skip:
    """The main content of the page whose HTML ``record[field]`` holds (``--html-field``)."""
    value = record.get(field)
    if not isinstance(value, str):
        return Skip(where, BAD_RECORD, f"no {field!r} field with a string")
    return page_text(value.encode("utf-8", "surrogatepass"), where, "text/html; charset=utf-8")


def read(source: Input, options: ReadOptions) -> Iterator[tuple[str, dict[str, Any] | Skip]]:
    """The page as one record of its key and its main content."""
    where = source.name
    with source.open() as stream:
        data = read_up_to(stream, options.max_bytes + 1)  # one read(n) of a pipe allocates n first
    if len(data) > options.max_bytes:
        yield where, Skip(where, TOO_LARGE, f"over {options.max_bytes:,} bytes")
        return
    text = page_text(data, where)
    if isinstance(text, Skip):
        yield where, text
        return
    yield where, {options.key_field: where.replace("\\", "/"), options.text_field: text}


register_input(
    InputFormat(
        "html",
        read,
        suffixes=(".html", ".htm", ".xhtml", ".shtml"),
        sniff=looks_like_html,
        description="web pages: the main content of each (the html extra)",
    )
)
