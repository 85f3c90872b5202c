"""Web archives (WARC, ``.warc`` and ``.warc.gz``) to pages: the HTML responses of a crawl. No database.

Each ``response`` record whose HTTP ``Content-Type`` is HTML (or, without one, whose body is
plainly HTML) comes out as a :class:`WarcPage` keyed by its ``WARC-Target-URI``, with the HTTP
header's ``Content-Type`` for the charset (:func:`simhash_store.html.extract`). Requests,
metadata, revisits and responses of other types (images, scripts, JSON) are passed over and
counted. Read with warcio (the ``html`` extra): plain WARC, gzip per record as crawlers write it,
or a file gzipped whole; a damaged archive raises :class:`~simhash_store.errors.InputError` at the
record where it breaks, after the pages before it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from simhash_store.decoding import is_binary_start
from simhash_store.errors import InputError
from simhash_store.html import looks_like_html

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_SUFFIXES = (".warc", ".warc.gz")
# The most of one record's body read, whatever --max-file-size allows: a body inflates (gzip per
# record, then the HTTP Content-Encoding) to far more than the archive's size, so the archive's
# size on disk bounds nothing. Crawlers cut page records at 1 MiB (Common Crawl); the extractors
# refuse pages of more than 200,000 tags anyway (:mod:`simhash_store.html_limits`).
MAX_PAGE_BYTES = 64 << 20
# The body is read in pieces of this size, so a refused one costs the bound and no more.
_PIECE = 1 << 20
# What the pages of one archive may inflate to, in all: this many times its size on disk, plus
# one page's bound. A crawl's pages compress about 5:1; a body gzipped inside its record's gzip
# made 500 bytes of archive into 8.9 MB of page (33 s to extract), once per record.
INFLATION_RATIO = 100


@dataclass(frozen=True)
class WarcPage:
    uri: str
    content_type: str | None
    body: bytes
    # Bytes the record's Content-Length promised beyond the end of its archive (or of its gzip
    # member): a cut archive, or a wrong length that took in the records after it. Such a record
    # comes out whatever its type, with no body: it is damaged, not a page.
    missing: int = 0
    # The body was longer than the reader's bound (a compressed archive can hold far more than
    # its size): not read beyond it, and the page comes out with no body.
    too_large: bool = False
    # Too large because the archive's pages, this one included, inflate past INFLATION_RATIO
    # times the archive's size on disk.
    over_budget: bool = False
    # Why the body's HTTP Content-Encoding could not be undone (one this does not read, a
    # compressed body damaged or cut short): the page comes out with no body.
    undecoded: str = ""


@dataclass
class WarcCounts:
    """What a read passed over: records that are not responses, and responses that are not HTML."""

    other_records: int = 0
    not_html: int = 0
    not_successful: int = 0  # responses whose HTTP status is not 2xx, or is 206 (a part of the page)
    by_type: dict[str, int] = field(default_factory=dict)

    def count_type(self, kind: str) -> None:
        """One more record of this WARC-Type: at most :data:`MAX_TYPES` types by name (a type's
        first 64 characters), the rest counted as ``other`` (an archive of a distinct 1 MB type
        a record kept them all: 1.3 GB for a 1.3 MB file)."""
        kind = str(kind)[:64]
        if kind not in self.by_type and len(self.by_type) >= MAX_TYPES:
            kind = "other"
        self.by_type[kind] = self.by_type.get(kind, 0) + 1


# WARC-Type values counted by name (the standard has eight).
MAX_TYPES = 32


def is_warc_name(name: str) -> bool:
    """Whether a file name says WARC (``.warc``, ``.warc.gz``)."""
    return name.lower().endswith(_SUFFIXES)


def read_pages(stream: IO[bytes], counts: WarcCounts | None = None, max_bytes: int | None = None) -> Iterator[WarcPage]:
    """The HTML pages of a WARC stream, in the archive's order. ``max_bytes``: the most of one
    record's body that is read, at most :data:`MAX_PAGE_BYTES` (a longer one comes out
    ``too_large``, without its body). The pages read so far may inflate to at most
    :data:`INFLATION_RATIO` times the archive's bytes read so far, plus one page's bound: a page
    past that is not decompressed, and comes out ``too_large`` and ``over_budget`` (from a pipe
    as from a file)."""
    ArchiveIterator, ArchiveLoadFailed = _warcio()
    max_bytes = page_bound(max_bytes)
    counted = _Counted(stream)
    inflated = 0  # the bytes of the pages' bodies read so far
    counts = counts if counts is not None else WarcCounts()
    archive = ArchiveIterator(counted)
    # warcio writes a warning of several lines to stderr where a record is not followed by its
    # blank lines (a wrong Content-Length); the reader's one-line error says it instead.
    archive.INC_RECORD = ""
    # A .warc.gz gzipped whole, not per record (one gzip member for the archive): warcio reads it
    # as well as any, but refuses it after its first record, since a whole-file gzip cannot be
    # seeked into by replay tools. Read here from start to end, it is read whole.
    archive._raise_invalid_gzip_err = lambda: None
    # warcio parses a record's HTTP head with its target URI's scheme in hand, and a response,
    # request or revisit record without a WARC-Target-URI was an AttributeError inside its parser:
    # the archive counted as damaged there, and every record after it was lost. Such a record is
    # read as one of an empty URI (its HTTP head parsed here), a bad key that costs only itself.
    load_http_headers = archive.loader.load_http_headers
    archive.loader.load_http_headers = lambda kind, uri, stream, length: load_http_headers(
        kind, "" if uri is None else uri, stream, length
    )
    next_record = _bound_lines(archive.reader, counted)
    cut_short = _watch_gzip_end(archive.reader)
    reported = False  # the last record read was reported as cut short
    records = iter(archive)
    body: bytes | None
    while True:
        try:
            next_record()
            record = next(records)
            reported = passed_over = False
            if not str(record.format).startswith("warc"):
                # warcio reads the older ARC format too, and takes almost any first line for an
                # ARC header: a gzipped page or text file would come out as one bogus record
                raise InputError("not a readable WARC archive: no WARC record header where one should start")
            uri = record.rec_headers.get_header("WARC-Target-URI") or ""
            if record.rec_type != "response":
                counts.other_records += 1
                counts.count_type(record.rec_type)
                content_type, body = None, b""
            elif record.http_headers is None:
                # warcio parses the HTTP head only under an http: or https: target URI (an empty
                # one, or another scheme, leaves it in the body): parsed here, the page is read as any.
                room = MAX_PAGE_BYTES + INFLATION_RATIO * counted.count - inflated
                content_type, body = _own_http_head(record.raw_stream, max(0, min(max_bytes, room)))
                if body is None and room < max_bytes:
                    yield WarcPage(uri, content_type, b"", too_large=True, over_budget=True)
                    continue
            else:
                content_type = record.http_headers.get_header("Content-Type")
                room = MAX_PAGE_BYTES + INFLATION_RATIO * counted.count - inflated
                if not _successful(record.http_headers.statusline):
                    # an error page, a redirect, a part of a page: not the page at its URI (a recrawl in
                    # which a page answered 503 replaced its stored fingerprint with the error page's)
                    counts.not_successful += 1
                    content_type, body, passed_over = None, b"", True
                elif room <= 0 or (content_type and not _is_html(content_type, b"")):
                    body = None if room <= 0 else b""  # past the budget, or not a page: not decompressed
                else:
                    body, undecoded = _read_body(record, min(max_bytes, room))
                    if undecoded:
                        yield WarcPage(uri, content_type, b"", undecoded=undecoded)
                        continue
                    if body is None and room < max_bytes:
                        room = 0  # over the budget, not over the page's bound
                if body is None and room <= 0:
                    missing = _missing_bytes(record.raw_stream)
                    if not missing:
                        yield WarcPage(uri, content_type, b"", too_large=True, over_budget=True)
                        continue
            missing = _missing_bytes(record.raw_stream)
        except StopIteration:
            if cut_short() and not reported:
                # warcio ends quietly where the file ends inside a gzip member: the records in it were lost.
                raise InputError(
                    "not a readable WARC archive: it ends inside its gzip (the file is cut short)"
                ) from None
            return
        # warcio fails on garbage with its own error, zlib's, or (a header line it cannot split)
        # an AttributeError or IndexError from inside its parser: all mean a damaged archive.
        except (ArchiveLoadFailed, OSError, EOFError, ValueError, AttributeError, IndexError, KeyError) as error:
            hint = " (after a record whose Content-Length looks wrong)" if getattr(archive, "err_count", 0) else ""
            raise InputError(f"not a readable WARC archive: {_first_line(error)}{hint}") from None
        if missing:  # damaged, whatever its type: it may have taken in the records after it
            reported = True  # where the file is cut short in it, that is said here
            yield WarcPage(uri, content_type, b"", missing)
            continue
        if record.rec_type != "response" or passed_over:
            continue
        if body is None:  # over the bound: an HTML page by its type, or a body of no type too large to tell
            if content_type and not _is_html(content_type, b""):
                counts.not_html += 1
            else:
                yield WarcPage(uri, content_type, b"", too_large=True)
            continue
        if not _is_html(content_type, body):
            counts.not_html += 1
            continue
        inflated += len(body)
        yield WarcPage(uri, content_type, body)


def _successful(statusline: str | None) -> bool:
    """Whether an HTTP status line gives the page itself: 2xx but 206 (a part of it). A status line
    that names no number is read as before, as a page.

    >>> [_successful(line) for line in ("200 OK", "204 No Content", "206 Partial Content", "301 Moved", "404", "x")]
    [True, True, False, False, False, True]
    """
    code = (statusline or "").split(" ", 1)[0]
    if not (len(code) == 3 and code.isdigit() and code.isascii()):
        return True
    return code.startswith("2") and code != "206"


# The longest header line read (a WARC header, an HTTP header, a chunk size, the blank lines
# between records): real ones are a few kilobytes (long cookies, long URLs). warcio reads a line
# whole however long: one 150 MB header line (a .warc.gz of 153 KB) took 565 MB, and the body's
# bound did not apply.
MAX_HEADER_LINE = 1 << 20
# The most bytes of lines read one after another, with no body read between them: a record's WARC
# and HTTP headers (read as one run) and the blank lines before them. warcio keeps every header
# line: a .warc.gz of 1 MB holding a thousand header lines each under MAX_HEADER_LINE took 1.1 GB.
MAX_HEADER_BYTES = 8 << 20


class ArchiveInflationError(InputError):
    """The archive inflates (its gzip, records read or passed over alike) past :data:`INFLATION_RATIO`
    times its bytes read so far plus :data:`MAX_PAGE_BYTES`: not read on."""


def _watch_gzip_end(reader: Any) -> Callable[[], bool]:
    """Whether the archive's file ended inside a gzip member (a download cut short), which warcio
    takes for the end of the archive: ask once it has no more records. ``reader`` is warcio's
    decompressing reader; a member is watched from its start (each is a new decompressor)."""
    fed = [False]
    cut = [False]
    start, decompress, process = reader._init_decomp, reader._decompress, reader._process_read

    def init_decomp(kind: Any) -> None:
        fed[0] = False
        start(kind)

    def decompress_counted(data: bytes) -> bytes:
        fed[0] = fed[0] or bool(data and reader.decompressor is not None)
        result: bytes = decompress(data)
        return result

    def process_read(data: bytes) -> None:
        decompressor = reader.decompressor
        if not data and fed[0] and decompressor is not None and not getattr(decompressor, "eof", True):
            cut[0] = True
        process(data)

    reader._init_decomp, reader._decompress, reader._process_read = init_decomp, decompress_counted, process_read
    return lambda: cut[0]


def _bound_lines(reader: Any, counted: _Counted) -> Callable[[], None]:
    """Make every line warcio reads from ``reader`` (its decompressing reader, which the record's
    own readers read through) end within :data:`MAX_HEADER_LINE` bytes, and lines read one after
    another stop at :data:`MAX_HEADER_BYTES`, or fail as damage; and everything read from it
    stay within :data:`INFLATION_RATIO` times the archive's bytes read (``counted``) plus
    :data:`MAX_PAGE_BYTES`, or raise :class:`ArchiveInflationError`: a record that is no page, or a
    page past its bound, is still inflated to its end to reach the next one (a 1 MB .warc.gz of a
    metadata record of 1 GB of zeros took 66 s). Returns what to call before each record is read:
    its lines count from there (records without a body follow one another)."""
    whole, body = reader.readline, reader.read
    run = [0]  # bytes of lines since the last read of a body
    out = [0]  # bytes read from the decompressing reader, in all

    def inflated(data: bytes) -> bytes:
        out[0] += len(data)
        if out[0] > INFLATION_RATIO * counted.count + MAX_PAGE_BYTES:
            raise ArchiveInflationError(
                f"the archive inflates past {INFLATION_RATIO} times its size (a decompression bomb, or records "
                f"padded with what compresses to nothing): not read past {out[0]:,} bytes inflated from "
                f"{counted.count:,}"
            )
        return data

    def read(*arguments: Any, **options: Any) -> bytes:
        run[0] = 0
        data: bytes = body(*arguments, **options)
        return inflated(data)

    def readline(length: int | None = None) -> bytes:
        line = inflated(_line(length))
        run[0] += len(line)
        if run[0] > MAX_HEADER_BYTES:
            raise ValueError(f"header lines of more than {MAX_HEADER_BYTES:,} bytes in a row")
        return line

    def _line(length: int | None) -> bytes:
        wanted = MAX_HEADER_LINE + 1 if length is None or length < 0 else length  # no length: a whole line
        asked = min(wanted, MAX_HEADER_LINE)
        # warcio's readline may stop short of the length asked without a line end (at a buffer's
        # edge): asked again for the rest, up to the bound.
        pieces, size = [], 0
        while size < asked:
            piece = whole(asked - size)
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
            if piece.endswith(b"\n"):
                break
        line = b"".join(pieces)
        if size >= MAX_HEADER_LINE and wanted > MAX_HEADER_LINE and not line.endswith(b"\n"):
            raise ValueError(f"a header line longer than {MAX_HEADER_LINE:,} bytes")
        return line

    reader.readline, reader.read = readline, read

    def next_record() -> None:
        run[0] = 0

    return next_record


class _Counted:
    """A stream that counts the bytes read from it (what the inflation budget is measured against)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream, self.count = stream, 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.count += len(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self._stream.readline(size)
        self.count += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def page_bound(max_bytes: int | None) -> int:
    """The most of one record's body read: ``max_bytes`` (--max-file-size), at most :data:`MAX_PAGE_BYTES`.

    >>> page_bound(None) == MAX_PAGE_BYTES, page_bound(1000)
    (True, 1000)
    """
    return MAX_PAGE_BYTES if max_bytes is None else min(max_bytes, MAX_PAGE_BYTES)


def _read_at_most(stream: Any, limit: int) -> bytes | None:
    """All of ``stream`` if it holds at most ``limit`` bytes, else None: read in pieces, and a
    body over the bound is dropped unjoined (one ``read(limit)`` of warcio's decompressing reader
    gathers its pieces and joins them, twice the memory of what it returns)."""
    pieces: list[bytes] = []
    left = limit + 1
    while left > 0:
        piece = stream.read(min(left, _PIECE))
        if not piece:
            return b"".join(pieces)
        pieces.append(piece)
        left -= len(piece)
    return None


def _read_body(record: Any, limit: int) -> tuple[bytes | None, str]:
    """(the body with its Content-Encoding undone, or None past ``limit``; why it could not be
    undone, or "").

    warcio passes a body whose Content-Encoding it does not read (``br`` without brotli, ``zstd``)
    through as it is, writes a decompression error past the first block to stderr and ends the
    body there, and ends a compressed body cut short quietly: compressed bytes were taken for a
    binary page, and a damaged or cut page for the whole. A body that does not decompress from its
    first block, and is not binary, is taken as it is (some crawlers store bodies decoded and keep
    the header).
    """
    from warcio.bufferedreaders import BufferedReader

    coding = (record.http_headers.get_header("Content-Encoding") or "").strip().lower()
    if coding in ("", "identity"):
        return _read_at_most(record.content_stream(), limit), ""
    if coding not in BufferedReader.get_supported_decompressors():
        hint = " (pip install brotli reads it)" if coding == "br" else ""
        return b"", f"its body's Content-Encoding {coding[:40]!r} is not one this reads{hint}"
    stream = record.content_stream()
    failed: list[str] = []
    if stream is not record.raw_stream:
        stream._decompress = _strict_decompress(stream, failed)
    body = _read_at_most(stream, limit)
    if body is None:
        return None, ""
    if failed:
        return b"", f"its {coding} body is damaged ({failed[0]})"
    decompressor = getattr(stream, "decompressor", None)
    if decompressor is None:
        if is_binary_start(body):
            return b"", f"its body does not decompress as its Content-Encoding {coding!r} says"
        return body, ""
    if not getattr(decompressor, "eof", True) and not record.rec_headers.get_header("WARC-Truncated"):
        # (a record the crawler says it cut, WARC-Truncated, is taken as far as it goes, as an
        # uncompressed one is)
        return b"", f"its {coding} body is cut short (the compressed data does not end)"
    return body, ""


def _strict_decompress(reader: Any, failed: list[str]) -> Callable[[bytes], bytes]:
    """warcio's ``_decompress`` for ``reader``, but an error past the first block is kept in
    ``failed`` (and the body ends), not written to stderr."""
    own = type(reader)._decompress

    def decompress(data: bytes) -> bytes:
        if reader.decompressor is None or not data or reader.num_block_read == 0:
            return bytes(own(reader, data))
        try:
            return bytes(reader.decompressor.decompress(data))
        except Exception as error:  # zlib.error, brotli.error: any means the body is damaged
            failed.append(_first_line(error))
            return b""

    return decompress


def _own_http_head(raw: Any, max_bytes: int) -> tuple[str | None, bytes | None]:
    """The Content-Type and body of a response block warcio left unparsed; a block that does not
    start with an HTTP status line is all body, without a type (sniffed like any)."""
    from warcio.statusandheaders import StatusAndHeadersParser

    start = raw.read(5)
    if start != b"HTTP/":
        rest = _read_at_most(raw, max(max_bytes - len(start), 0))
        return None, None if rest is None else start + rest
    head = StatusAndHeadersParser([], verify=False).parse(_Prefixed(start, raw))
    return head.get_header("Content-Type"), _read_at_most(raw, max_bytes)


class _Prefixed:
    """A stream's first bytes, already read, put back before the rest (lines only: what the
    header parser asks for)."""

    def __init__(self, prefix: bytes, stream: Any) -> None:
        self._prefix, self._stream = prefix, stream

    def readline(self, limit: int = -1) -> bytes:
        line, self._prefix = self._prefix, b""
        if not line.endswith(b"\n"):
            line += self._stream.readline()
        return line


def _missing_bytes(raw: Any) -> int:
    """What the record's Content-Length still owes once its stream has ended (0 for a whole
    record). warcio stops quietly at the end of the file, so a length past it is found here."""
    if not isinstance(getattr(raw, "limit", None), int):
        return 0  # no usable Content-Length: warcio reads to the end, as it does
    while raw.read(1 << 16):
        pass
    return max(int(raw.limit), 0)


def _is_html(content_type: str | None, body: bytes) -> bool:
    if content_type:
        return content_type.split(";", 1)[0].strip().lower() in _HTML_TYPES
    return looks_like_html(body)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _warcio() -> tuple[Any, Any]:
    try:
        from warcio.archiveiterator import ArchiveIterator
        from warcio.exceptions import ArchiveLoadFailed
    except ImportError as error:
        raise InputError("reading WARC files needs the html extra: pip install 'simhash-store[html]'") from error
    _quiet_warcio()
    return ArchiveIterator, ArchiveLoadFailed


@functools.cache
def _quiet_warcio() -> None:
    """warcio logs a warning holding the record's target URI as it is where the URI has a space
    (``Replacing spaces in invalid WARC-Target-URI: ...``), which Python prints to stderr when the
    application configured no logging: an escape sequence in the URI reached the terminal raw
    (retitling or clearing it), and the line was not one of the command's. The URI is read as
    warcio reads it (spaces as ``%20``) and printed escaped where a message names it; warcio's
    records go nowhere unless the application routes them (they still propagate)."""
    logging.getLogger("warcio").addHandler(logging.NullHandler())
