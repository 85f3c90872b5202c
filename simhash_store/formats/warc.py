"""WARC crawls (``.warc``, ``.warc.gz``): each HTML response a record, keyed by its target URI
(``prefix`` goes before it when records become documents), its text the page's main content (:mod:`simhash_store.formats.html`).

Requests, metadata and responses that are not HTML are passed over. A page with no main
content is a deliberate Skip naming it (``crawl.warc.gz: https://...``); an archive that
breaks part way gives the pages before the damage, then a Skip saying so. Needs the html extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..corpus import TOO_LARGE, UNREADABLE, Skip
from ..errors import InputError
from ..warc import INFLATION_RATIO, ArchiveInflationError, page_bound, read_pages
from .html import page_text
from .registry import Input, InputFormat, ReadOptions, register_input

_WARC_START = b"WARC/1."
_GZIP_START = b"\x1f\x8b"


def read(source: Input, options: ReadOptions) -> Iterator[tuple[str, dict[str, Any] | Skip]]:
    """The HTML pages of the archive, in its order."""
    with source.open() as stream:
        pages = read_pages(stream, max_bytes=options.max_bytes)
        while True:
            try:
                page = next(pages)
            except StopIteration:
                return
            except ArchiveInflationError as exc:  # a bomb: the pages before stay read
                yield source.name, Skip(source.name, TOO_LARGE, str(exc))
                return
            except InputError as exc:  # damaged, or the html extra is missing: the pages before stay read
                yield source.name, Skip(source.name, UNREADABLE, str(exc))
                return
            where = f"{source.name}: {page.uri}"
            if page.missing:
                short = (
                    f"the record ends {page.missing:,} bytes short of its Content-Length: the archive is cut "
                    "short, or the length is wrong and took in the records after it"
                )
                yield where, Skip(where, UNREADABLE, short)
                continue
            if page.undecoded:
                yield where, Skip(where, UNREADABLE, page.undecoded)
                continue
            if page.over_budget:
                yield (
                    where,
                    Skip(where, TOO_LARGE, f"the archive's pages inflate past {INFLATION_RATIO} times its size"),
                )
                continue
            if page.too_large:
                yield where, Skip(where, TOO_LARGE, _over_the_bound(options.max_bytes))
                continue
            text = page_text(page.body, where, page.content_type)
            if isinstance(text, Skip):
                yield where, text
            else:
                yield where, {options.key_field: page.uri, options.text_field: text}


def _over_the_bound(max_bytes: int | None) -> str:
    bound = page_bound(max_bytes)
    if max_bytes is not None and bound == max_bytes:
        return f"a body over {bound:,} bytes; raise it with --max-file-size"
    return f"a body over {bound:,} bytes, the most of one WARC page that is read"


def _sniff(head: bytes) -> bool:
    return head.startswith(_WARC_START)  # a gzipped one is told by its name (.warc.gz) or --format warc


register_input(
    InputFormat(
        "warc",
        read,
        suffixes=(".warc", ".warc.gz"),
        sniff=_sniff,
        description="WARC crawls: the main content of each HTML response, keyed by its URI (the html extra)",
    )
)
