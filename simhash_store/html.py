"""Web pages to text: the charset of a page and its main content. No files, no database.

The charset comes from the HTTP ``Content-Type`` header, else the page's ``<meta>`` tag, else a
byte order mark, else this project's decoding rules (:func:`simhash_store.decoding.decode`:
UTF-8, GB18030 or Big5, told from the bytes). The main content is extracted with
readability-lxml, trafilatura where readability keeps the wrong block (chosen by measurement,
docs/html.md); navigation, related-headline lists, scripts, footers and comment blocks are
left out. A page with no main content comes back with an empty text and
``reason`` NO_MAIN_CONTENT, so a command can count it under its own reason.

Needs the ``html`` extra (``pip install 'simhash-store[html]'``); without it :func:`extract`
raises :class:`~simhash_store.errors.InputError`.

>>> page = "<html><head><meta charset=gbk><title>标题</title></head><body><p>正文</p></body></html>"
>>> decode_page(page.encode("gbk")).encoding, decode_page(page.encode("gbk")).source
('gb18030', 'meta')
>>> looks_like_html(b"  <!DOCTYPE html><html>")
True
"""

from __future__ import annotations

import codecs
import functools
import itertools
import re
from dataclasses import dataclass
from typing import Any

from simhash_store.corpus import NO_MAIN_CONTENT  # why a page has no text to fingerprint
from simhash_store.decoding import Decoded, DecodeError, decode, plainly_chinese
from simhash_store.errors import InputError
from simhash_store.html_limits import bounded

# Where the charset came from, in the order they are tried.
HEADER, META, BOM, DETECTED = "header", "meta", "bom", "detected"

# The meta tag must be early in the page (the HTML standard looks at the first 1024 bytes;
# Chinese portals often put it after scripts and a long title, so look further).
_META_WINDOW = 16384
_META_TAG = re.compile(rb"<meta", re.IGNORECASE)
# The spaces before and after a quote are two runs, never one run split two ways: written as
# \s*["']?\s*, "charset=" and 16,000 spaces backtracked over every split (quadratic: 7-14 s
# for one page's <meta>; a Content-Type header line may be longer still).
_CHARSET_VALUE = re.compile(rb"""charset\s*=\s*(?:["']\s*)?([A-Za-z0-9._:-]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*(?:["']\s*)?([A-Za-z0-9._:-]+)""", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
# Labels read as the encoding browsers use for them (WHATWG Encoding Standard): GB2312 and GBK
# pages are decoded as GB18030 (a superset), Latin-1 and ASCII as windows-1252, Big5 with the
# HKSCS additions.
_AS_BROWSERS_DO = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "gb_2312-80": "gb18030",
    "cp936": "gb18030",
    "iso-8859-1": "cp1252",
    "latin-1": "cp1252",
    "latin1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "big5": "big5hkscs",
    "big5-hkscs": "big5hkscs",
    "utf8": "utf-8",
    "unicode": "utf-8",
    "x-user-defined": "cp1252",
}
# What plainly HTML content opens with, after a BOM, whitespace and comments (skipped by
# :func:`looks_like_html` in one pass: a pattern repeating the comments backtracked over every
# grouping of `<!---->` runs, 145 s for a 197-byte file).
_HTML_OPENING = re.compile(rb"<(?:!doctype\s+html|html[\s>]|head[\s>])", re.IGNORECASE)
_SPACE = re.compile(rb"\s*")
_HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")


@dataclass(frozen=True)
class Page:
    """A page's text as decoded, the encoding used and where its name came from."""

    text: str
    encoding: str
    source: str  # HEADER, META, BOM or DETECTED
    replaced: int = 0  # invalid bytes replaced by U+FFFD


@dataclass(frozen=True)
class Extracted:
    """The main content of a page: ``text`` is empty and ``reason`` says why when there is none."""

    text: str
    title: str | None
    charset: str
    charset_source: str
    reason: str | None = None


def looks_like_html(start: bytes) -> bool:
    """Whether content is plainly HTML: it opens (after a BOM, whitespace or comments) with a
    doctype, ``<html`` or ``<head``."""
    start = start[:4096]
    position = 3 if start.startswith(b"\xef\xbb\xbf") else 0
    while True:
        position = _SPACE.match(start, position).end()  # type: ignore[union-attr]  # \s* always matches
        if not start.startswith(b"<!--", position):
            return _HTML_OPENING.match(start, position) is not None
        end = start.find(b"-->", position + 4)
        if end < 0:
            return False
        position = end + 3


def is_html_name(name: str) -> bool:
    """Whether a file name says HTML (``.html``, ``.htm``, ``.xhtml``, ``.shtml``)."""
    return name.lower().endswith(_HTML_SUFFIXES)


def charset_of_header(content_type: str | None) -> str | None:
    """The charset a ``Content-Type`` header names, as Python calls it, or None (none or unknown).

    >>> charset_of_header("text/html; charset=GB2312")
    'gb18030'
    """
    if not content_type:
        return None
    found = _HEADER_CHARSET.search(content_type)
    return _codec(found.group(1)) if found else None


def charset_of_meta(data: bytes) -> str | None:
    """The charset a ``<meta charset>`` or ``<meta http-equiv content="...; charset=">`` tag names."""
    window = data[:_META_WINDOW]
    position = 0
    # Each tag is searched up to its own ">": one pattern over the window (a lazy scan from each
    # <meta to the charset) was quadratic in the unclosed tags, 2.7 s for a page of 3,000. A tag
    # without an end that fails fails for every <meta inside it too: the search goes on after it.
    while (tag := _META_TAG.search(window, position)) is not None:
        end = window.find(b">", tag.end())
        end = len(window) if end < 0 else end
        found = _CHARSET_VALUE.search(window, tag.end(), end)
        if found is not None:
            return _codec(found.group(1).decode("ascii", "replace"))
        position = end
    return None


def is_page(name: str, data: bytes) -> bool:
    """Whether a document is a web page: its name says HTML, or its content is plainly HTML."""
    return is_html_name(name) or looks_like_html(data)


def text_of(data: bytes, name: str = "", content_type: str | None = None, *, page: bool | None = None) -> Decoded:
    """The text to fingerprint of a document's bytes: a web page's main content (a page by its
    name or content, or as ``page`` says), else the bytes decoded as any text file is.

    Raises :class:`~simhash_store.decoding.DecodeError`, with reason NO_MAIN_CONTENT for a page
    without one; :class:`~simhash_store.errors.InputError` for a page without the html extra.
    """
    if not (is_page(name, data) if page is None else page):
        return decode(data)
    extracted = extract(data, content_type)
    if extracted.reason is not None:
        raise DecodeError(extracted.reason)
    return Decoded(extracted.text, extracted.charset)


def decode_page(data: bytes, content_type: str | None = None) -> Page:
    """A page's text: charset from the header, the meta tag, a BOM, then the decoding rules.

    A declared charset that fails on more than a few bytes (a page saved as UTF-8 by a
    template that still says GBK) is passed over for the next source. Raises
    :class:`~simhash_store.decoding.DecodeError` (``empty``, ``binary``, ``undecodable``).
    """
    if not data.strip():
        raise DecodeError("empty")
    for bom, bom_encoding in _BOMS:
        if data.startswith(bom):
            return Page(data.decode(bom_encoding, "replace"), bom_encoding.removesuffix("-sig"), BOM)
    header, meta = charset_of_header(content_type), charset_of_meta(data)
    declared = [(HEADER, header), (META, meta)]
    if header is not None and _single_byte(header) and meta is not None and meta != header:
        # A Latin-1 header is often the server's default (HTTP/1.1's, Apache's AddDefaultCharset)
        # over a page that names its own charset; windows-1252 (any charset of one byte a
        # character) reads almost any bytes, so a GBK page under it never contradicted it and was
        # read as Latin letters (ÖÐ»ªÈËÃñ): the page's own declaration is tried first.
        declared.reverse()
    for source, encoding in declared:
        if encoding is None:
            continue
        if _single_byte(encoding) and not data.isascii():
            try:  # valid UTF-8 holding more than ASCII is not text of one byte a character (`Ã©` for `é`)
                return Page(data.decode("utf-8"), "utf-8", DETECTED)
            except UnicodeDecodeError:
                pass
            if encoding in _LATIN and _bytes_past_ascii_come_in_pairs(data):
                chinese = _chinese_reading(data)
                if chinese is not None:
                    return chinese
        text, replaced = _decode_counting(data, encoding)
        if replaced <= max(4, len(data) // 200):
            return Page(text, encoding, source, replaced)
    decoded = decode(data)
    return Page(decoded.text, decoded.encoding, DETECTED, decoded.replaced)


# Charsets of Latin letters, the labels servers and templates give by default: their text has letters
# past ASCII one at a time between ASCII ones (é, ü, ç), or two (ção), seldom more.
_LATIN = frozenset({"cp1252", "iso8859-1", "iso8859-15"})
_PAST_ASCII = re.compile(rb"[\x80-\xff]+")
_RUNS_JUDGED = 4096


def _bytes_past_ascii_come_in_pairs(data: bytes) -> bool:
    """Whether most bytes past ASCII come in runs of two or more, as GBK's and Big5's characters do
    (two bytes each, side by side in a sentence), not one at a time as Latin text's letters do.
    Judged from the first :data:`_RUNS_JUDGED` runs: counting every run of a 20 MB page of Latin
    letters took 8 s."""
    alone = total = 0
    for run in itertools.islice(_PAST_ASCII.finditer(data), _RUNS_JUDGED):
        length = run.end() - run.start()
        total += length
        alone += length == 1
    return total >= 16 and alone <= total // 4


def _chinese_reading(data: bytes) -> Page | None:
    """The page read as GB18030 or Big5, where the decoding rules find it is: a Chinese page served
    or saved under a Latin label (the server's default ``charset=ISO-8859-1``, a template's meta
    tag), which windows-1252 reads as Latin letters (ÖÐ»ªÈËÃñ) without a byte contradicting it."""
    try:
        decoded = decode(data)
    except DecodeError:
        return None
    # The rules take a short text for GB18030 whatever its characters' scores (every reading of a
    # few words is as likely): a Portuguese page's ção and ões read as 玢o and 珲es, an Estonian one's
    # hää as h滗. Under a Latin label the page must read plainly as Chinese.
    if decoded.encoding not in ("gb18030", "big5") or not plainly_chinese(decoded.text):
        return None
    return Page(decoded.text, decoded.encoding, DETECTED, decoded.replaced)


def extract(data: bytes, content_type: str | None = None) -> Extracted:
    """The main content of a page's bytes (see the module's docstring).

    Raises :class:`~simhash_store.decoding.DecodeError` when the bytes are not text at all, or
    the page is too large to parse (:func:`extract_text`).
    """
    page = decode_page(data, content_type)
    return extract_text(page.text, encoding=page.encoding, source=page.source)


def extract_text(html: str, *, encoding: str = "utf-8", source: str = DETECTED) -> Extracted:
    """The main content of a page already decoded to text.

    Raises :class:`~simhash_store.decoding.DecodeError` (``too large``) for a page of more tags
    than :data:`simhash_store.html_limits.MAX_ELEMENTS`; a tag's attributes past
    :data:`~simhash_store.html_limits.MAX_ATTRIBUTES` are dropped before parsing.

    readability-lxml picks the page's main block; when it keeps less than a tenth of what
    trafilatura finds (an article split over several blocks, of which it kept one), trafilatura's
    text is taken instead. trafilatura runs only when readability's text is that short against
    the page's whole visible text, so most pages pay for one extractor.
    """
    readability, trafilatura, lxml_html = _libraries()
    if not html.strip():
        return Extracted("", None, encoding, source, NO_MAIN_CONTENT)
    html = bounded(html)  # what the parser may spend on the page: attributes a tag, tags a page
    document = readability.Document(html)
    try:
        summary = document.summary(html_partial=True)
        title = " ".join(document.short_title().split()) or None
    except Exception:  # readability raises its own Unparseable and lxml's errors on broken pages
        summary, title = "", None
    text, links = _block_text(lxml_html, summary) if summary.strip() else ("", set())
    if _mostly_links(text, links):
        text = ""  # a menu or a list of headlines, not an article
    visible, page_links = _block_text(lxml_html, html, visible_only=True)
    if len(text) < _FALLBACK_SHARE * len(visible):
        other = (
            trafilatura.extract(html, include_comments=False, include_tables=True, deduplicate=False) or ""
        ).strip()
        if len(text) < _FALLBACK_SHARE * len(other) and not _mostly_links(other, page_links):
            text = other
    if not text:
        return Extracted("", title, encoding, source, NO_MAIN_CONTENT)
    return Extracted(text, title, encoding, source)


# Below this share of trafilatura's text, readability is taken to have kept the wrong block
# (measured on the Chinese pages of benchmarks/extraction.py: any share from 0.1 to 0.3 does as well).
_FALLBACK_SHARE = 0.1
# Text that is more than half link text is navigation (readability's own link-density test
# keeps such a block when the page has nothing else).
_LINK_SHARE = 0.5
_BLOCKS = frozenset(
    "address article aside blockquote br dd div dl dt figcaption figure footer h1 h2 h3 h4 h5 h6 header "
    "hr li main nav ol p pre section table td th tr ul".split()
)


def _mostly_links(text: str, links: set[str]) -> bool:
    """Whether more than half of a text's characters (spaces aside) are the texts of links.

    Spaces are left out on both sides: extractors differ in how they join a menu's items
    (a line each, or run together)."""
    compact = "".join(text.split())
    linked = sum(len(link) for link in {"".join(link.split()) for link in links} if len(link) > 1 and link in compact)
    return linked > _LINK_SHARE * len(compact)


def _block_text(lxml_html: Any, html: str, *, visible_only: bool = False) -> tuple[str, set[str]]:
    """The text of a fragment, a line break after each block element (so that words of two
    paragraphs do not run together), lines stripped and empty ones dropped; and the texts of
    its links, spaced the same way."""
    try:
        tree = lxml_html.fromstring(html)
    except Exception:  # lxml's ParserError on an empty or broken fragment
        return "", set()
    for node in list(tree.iter()):
        if not isinstance(node.tag, str) or node.tag in ("script", "style", "noscript", "template"):
            if node.getparent() is not None and (visible_only or not isinstance(node.tag, str)):
                node.drop_tree()
            continue
        if node.tag in _BLOCKS:
            node.tail = "\n" + (node.tail or "")
    links = {" ".join(link.text_content().split()) for link in tree.iter("a")}
    lines = (" ".join(line.split()) for line in tree.text_content().splitlines())
    text = "\n".join(line for line in lines if line)
    return text, links


def _libraries() -> tuple[Any, Any, Any]:
    try:
        import lxml.html
        import readability
        import trafilatura
    except ImportError as error:
        raise InputError("reading web pages needs the html extra: pip install 'simhash-store[html]'") from error
    _quiet_readability()
    return readability, trafilatura, lxml.html


@functools.cache
def _quiet_readability() -> None:
    """readability logs every page it cannot parse with a traceback (``log.exception``), which
    Python prints to stderr when the application configured no logging: a page that is only a
    comment or a doctype (nothing left once the bound drops them) printed one in ``add`` and
    ``fingerprint``. Its failures are handled here (trafilatura's text is taken instead), so its
    records go nowhere unless the application routes them somewhere (they still propagate)."""
    import logging

    logging.getLogger("readability").addHandler(logging.NullHandler())


# Text encodings Python has that no page is written in and that cost more than a pass to decode
# (punycode is quadratic: 320 KB took 35 s) or decode nothing (undefined raises on any byte).
_NOT_PAGE_ENCODINGS = frozenset({"punycode", "undefined", "idna", "raw-unicode-escape", "unicode-escape", "mbcs"})


def _codec(label: str) -> str | None:
    """The Python codec a charset label names, or None: a label of no text encoding (Python's
    `zlib`, `base64`, `hex`, `rot13` ... are codecs of bytes to bytes or str to str), or of one
    no page is written in, is not a charset, and the page's charset is detected instead."""
    label = label.strip().lower()
    label = _AS_BROWSERS_DO.get(label, label)
    try:
        info = codecs.lookup(label)
    except (LookupError, UnicodeError, ValueError):  # a label holding NUL or non-ASCII
        return None
    name = info.name
    if not getattr(info, "_is_text_encoding", True) or name in _NOT_PAGE_ENCODINGS:
        return None
    if name in ("utf-16-le", "utf-16-be", "utf-16", "utf-32", "utf-32-le", "utf-32-be"):
        return "utf-8"  # a page that was decoded to find its meta tag is not UTF-16 (HTML standard)
    try:
        markup = _MARKUP.decode(name) == _MARKUP.decode("ascii")
    except (UnicodeError, LookupError, ValueError):
        markup = False
    if not markup:
        # EBCDIC (cp037, cp500, cp1140 ...) and utf-7 read the bytes of markup as other characters:
        # a page whose tags are ASCII is not written in them (no browser reads them), and decoding
        # one with them gives text of other characters throughout, which no byte contradicts.
        return None
    return _AS_BROWSERS_DO.get(name, name)


# What every charset a page can be written in reads as ASCII: the markup and the label itself.
_MARKUP = b"<!-- --><meta charset=\"x\" content='y; z'/>&#1; abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789._:+1 "


@functools.lru_cache(maxsize=64)
def _single_byte(encoding: str) -> bool:
    """Whether a charset reads each byte as one character (windows-1252, KOI8-R, ISO-8859-5 ...):
    such a charset reads almost any bytes, so the bytes seldom contradict it. UTF-8 is not; a
    7-bit one (HZ, ISO-2022) counts, harmlessly: bytes past ASCII are not its text anyway."""
    try:
        if codecs.lookup(encoding).name.startswith("utf"):
            return False
        return len(bytes(range(0x80, 0x100)).decode(encoding, "replace")) == 0x80
    except (LookupError, UnicodeError, ValueError):
        return False


def _decode_counting(data: bytes, encoding: str) -> tuple[str, int]:
    try:
        return data.decode(encoding), 0
    except UnicodeDecodeError:
        text = data.decode(encoding, "replace")
        return text, text.count("\ufffd")
    except (LookupError, UnicodeError, ValueError):  # a codec that fails otherwise: not this page's charset
        return "", len(data) + 1
