"""What one web page may cost the HTML parser, bounded before lxml sees it. No files, no database.

lxml's parser (libxml2) spends time that grows with the square of the number of attributes on
one tag (32,000 attributes, 341 KB, took seconds a parse, and a page is parsed several times),
and about a kilobyte of memory an element. :func:`bounded` reads a page's tokens the way the
HTML standard's tokenizer does, in one linear pass, and writes the page out again from them:
each tag with at most :data:`MAX_ATTRIBUTES` attributes, names and values in a form every parser
reads alike, text that opens no tag escaped, comments and the text of scripts and styles left
out. So what the extractors parse is exactly the tags counted here, whatever a parser's own
reading of odd markup (old libxml2, trafilatura's repairs) would have been; a page of more than
:data:`MAX_ELEMENTS` tags is refused. Elements nested deeper than :data:`MAX_DEPTH` lose their
tags (their text stays): readability spends time that grows with the tags times their depth.

>>> bounded('<p class="a" id=b>text<br/></p>')
'<p class="a" id="b">text<br/></p>'
>>> len(bounded("<div " + " ".join(f"a{i}" for i in range(1000)) + ">x</div>")) < 2000
True
"""

from __future__ import annotations

import re

from simhash_store.corpus import TOO_LARGE
from simhash_store.decoding import DecodeError

# Attributes kept on one tag: real pages carry a few dozen at most (framework markup, SVG);
# at this bound the parser's quadratic cost stays under a second for a page of any size
# --max-file-size lets in.
MAX_ATTRIBUTES = 256
# Tags in one page: about 200 MB of parser memory. The longest Wikipedia articles hold a few
# tens of thousands; a crawler's page records are cut at 1 MiB (Common Crawl).
MAX_ELEMENTS = 200_000
# Nesting kept: below this depth an element's descendants lose their tags (their text stays).
# readability's scoring costs the tags times their depth (199,000 tags 240 deep took 98 s against
# 20 s flat; libxml2 stops nesting at 256). The deepest of 250 real pages (benchmarks/html_bound.py)
# nests 51 deep, most 11 to 24.
MAX_DEPTH = 64
# Elements libxml2 never nests anything in (the names it treats as empty in 2.13 and 2.14; `embed`,
# `source`, `wbr` are not among them there). A name left out only makes the depth counted
# below larger than the parser's.
_VOID = frozenset("area base basefont br col frame hr img input isindex link meta param".split())

# A start or end tag as the standard's tokenizer reads it: the name, then attributes (a name,
# optionally `=` and a value, quoted or not) and separators, up to `>` or the end of the page.
# Every part of the loop starts on a different character class and the end is optional, so the
# match never backtracks over the loop: one pass, linear in the tag's length.
_VALUE = r"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*"?|'[^']*'?|[^\t\n\f\r >]*))?"""
# The same attribute with its name and value apart (the value quoted either way, or not).
_ATTRIBUTE_PARTS = re.compile(
    r"""([^\t\n\f\r />][^\t\n\f\r /=>]*)(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"?|'([^']*)'?|([^\t\n\f\r >]*)))?"""
)
# What a tag's or an attribute's name keeps when written out again: names every parser reads
# the same way (a tag's `a"b` or an attribute's `@click` would not be).
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_:.-]")
# Attributes already as they would be written out (most tags of most pages): kept as they are.
_WRITTEN_AS_WE_WRITE = re.compile(r'(?: [a-z][a-z0-9_:.-]*="[^"<>]*")*')
_TAG = re.compile(
    r"<(/?)([A-Za-z][^\t\n\f\r />]*)((?:[\t\n\f\r /]+|[^\t\n\f\r />][^\t\n\f\r /=>]*" + _VALUE + r")*)(>?)"
)
# Elements whose content the standard reads as text up to their end tag. Not noscript: libxml2
# parses without scripting, and so reads a noscript's content as markup (a comment in it that
# runs past `</noscript>` hid a quote from lxml that hid a tag from this pass).
_RAW_TEXT = {
    name: re.compile(rf"</{name}[\t\n\f\r />]", re.IGNORECASE | re.ASCII)
    for name in "script style textarea title xmp iframe noembed noframes".split()
}
# Tag names are compared in ASCII only, as the standard does: Python's IGNORECASE alone matches
# `ſ` to `s` and `ı` to `i`, so `</ſcript>` ended a script for this pass and not for lxml.
# What moves a script's text between the standard's states: `<!--` opens an escaped part, where
# `<script` starts a double-escaped one, in which `</script` does not end the script but goes back
# to the escaped part; `-->` ends either. A script's end is `</script` outside the double-escaped part.
# Raw text whose text is kept (as escaped text); the others' text is not content.
_TEXT_KEPT = frozenset({"title", "textarea"})
_SCRIPT_STATES = re.compile(r"<!--|-->|<(/?)script[\t\n\f\r />]", re.IGNORECASE | re.ASCII)
# A comment (`<!--`, to `-->`, `--!>` or at once `<!-->`), or what the standard reads as one
# up to the next `>`: `<!` and `<?` opening anything else, `</` before other than a letter.
_BOGUS_COMMENT = re.compile(r"<!--|<[!?]|</[^A-Za-z>]")
_COMMENT_END = re.compile(r"--!?>")


# What an lxml tree cannot hold (XML 1.0 leaves it out): C0 controls but tab, line feed and
# carriage return; U+FFFE, U+FFFF; lone surrogates. lxml refuses to join such text when an
# element is dropped (a ValueError out of readability and the extractor: one page with \x01
# after a <script> ended the whole run), and trafilatura deletes these characters before it
# parses, which made `<\x01div ...>`, text to this pass and to lxml, a tag of any number of
# attributes the bound had not counted.
_UNHOLDABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
# A numeric character reference, which the parser resolves into the tree: its digits whole
# (leading zeros aside), so that a long number is never read by its first digits.
_REFERENCE = re.compile(r"&#(?:[xX]0*([0-9A-Fa-f]{1,8})(?![0-9A-Fa-f])|0*([0-9]{1,8})(?![0-9]));?")


def holdable(html: str) -> str:
    """The page with what an lxml tree cannot hold replaced, as characters and as numeric
    references: a form feed by a space (it separates as one), anything else by U+FFFD, which
    forms no tag and no reference with what surrounds it (so no parser, and no repair a parser's
    caller makes first, reads the page's tags differently from :func:`bounded`).

    >>> holdable("a\x01b&#1;c&#x0C;d&#xfffe;e&#65;\x0cf")
    'a\ufffdb\ufffdc d\ufffde&#65; f'
    """

    def character(found: re.Match[str]) -> str:
        return " " if found.group() == "\x0c" else "\ufffd"

    def reference(found: re.Match[str]) -> str:
        hexadecimal, decimal = found.groups()
        value = int(hexadecimal, 16) if hexadecimal is not None else int(decimal)
        if value == 0x0C:
            return " "
        if value in (0xFFFE, 0xFFFF) or (0 < value < 0x20 and value not in (0x09, 0x0A, 0x0D)):
            return "\ufffd"
        return found.group()

    if _UNHOLDABLE.search(html):
        html = _UNHOLDABLE.sub(character, html)
    if "&#" not in html:
        return html
    replaced = _REFERENCE.sub(reference, html)
    return html if replaced == html else replaced  # the same object when nothing changed


def bounded(html: str) -> str:
    """The page written out again from the tokens read here, so that every parser reads the same
    tags: what an lxml tree cannot hold replaced (:func:`holdable`); each tag with at most
    :data:`MAX_ATTRIBUTES` attributes (the first of each name), names reduced to letters, digits
    and ``_:.-``, values quoted and escaped; a ``<`` that opens nothing escaped as ``&lt;``;
    comments, doctypes, processing instructions and the text of scripts and styles left out.
    Raises :class:`~simhash_store.decoding.DecodeError` (``too large``) for a page of more than
    :data:`MAX_ELEMENTS` tags.

    >>> bounded('<!DOCTYPE html><p class=a ID="b" class=c>1 < 2<script>if (a<b) x()</script></p>')
    '<p class="a" id="b">1 &lt; 2<script></script></p>'
    """
    written, depth = _written(html)
    return _shallow(written) if depth > MAX_DEPTH - _IMPLIED else written


# Elements a parser adds around a page's own (html, body, and a p for text at the top).
_IMPLIED = 4


def _written(html: str) -> tuple[str, int]:
    """The page written out again (:func:`bounded`), and how deep its elements nest at most, as
    libxml2 nests them or deeper (its implied end tags, which only close, are not followed)."""
    html = holdable(html)
    pieces: list[str] = []
    elements = 0
    nesting = _Nesting()
    position, end = 0, len(html)
    while (opening := html.find("<", position)) >= 0:
        pieces.append(html[position:opening])
        if bogus := _BOGUS_COMMENT.match(html, opening):
            if bogus.group() == "<!--":
                found = _COMMENT_END.search(html, opening + 2)  # from `--`: `<!-->` ends at once
                position = found.end() if found else end
            else:  # `<!...>`, `<?...>`, `</3...>`: up to the first `>`
                found_at = html.find(">", opening)
                position = end if found_at < 0 else found_at + 1
            continue
        tag = _TAG.match(html, opening)
        if tag is None:
            pieces.append("&lt;")  # a `<` that opens nothing is text
            position = opening + 1
            continue
        position = tag.end()
        closing, name, attributes, ended = tag.groups()
        name = _NOT_IN_NAMES.sub("", name).lower()
        if not ended or not name:
            continue  # a tag cut off by the end of the page is dropped, as the standard does
        if closing:
            pieces.append(f"</{name}>")
            nesting.close(name)
            continue
        elements += 1
        if len(attributes) <= 4 * MAX_ATTRIBUTES and _WRITTEN_AS_WE_WRITE.fullmatch(attributes):
            written, last_end = attributes, len(attributes)  # at most MAX_ATTRIBUTES: 4 characters each
        else:
            written, last_end = _attributes(attributes)
        # `/` before `>` closes the element at once (libxml2 honours it on any element), unless
        # it belongs to an unquoted value (`<a href=x/>`)
        closes = attributes.endswith("/") and last_end < len(attributes)
        pieces.append(f"<{name}{written}{'/' if closes else ''}>")
        if name not in _VOID:  # `<div/>` too: a parser may not honour the `/` on every element
            nesting.open(name)
        if name in _RAW_TEXT:
            close = _script_end(html, position, end) if name == "script" else _raw_end(html, name, position)
            if name in _TEXT_KEPT:  # a title's or a textarea's text is text, escaped
                pieces.append(html[position:close].replace("<", "&lt;"))
            position = close
    pieces.append(html[position:])
    if elements > MAX_ELEMENTS:
        raise DecodeError(TOO_LARGE, f"{elements:,} tags in one page, more than {MAX_ELEMENTS:,}")
    return "".join(pieces), nesting.deepest


class _Nesting:
    """The open elements as the tags are read, never fewer than libxml2 holds open: a start tag
    opens one (libxml2 may first close others, which only makes it nest less), an end tag closes
    only the innermost open element, and only when it names it (libxml2 closes that one too, and
    ignores an end tag of an element it closed already: the ones it closes by itself, when
    another starts, stay open here). Counted up to past :data:`MAX_DEPTH` only (deeper, the page
    is parsed to know)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.deepest = 0

    def open(self, name: str) -> None:
        if self.deepest <= MAX_DEPTH:
            self.names.append(name)
            self.deepest = max(self.deepest, len(self.names))

    def close(self, name: str) -> None:
        if self.names and self.names[-1] == name and name not in ("html", "head", "body"):
            self.names.pop()  # libxml2 keeps html, head and body open to the end


def _shallow(html: str) -> str:
    """The page as lxml parses it, with the descendants of elements :data:`MAX_DEPTH` deep
    stripped of their tags (their text and order kept), written out again; the page itself if
    nothing nests that deep. Checked on what is written: parsed again, a page written out can
    nest a level deeper (an `<li>` among `<div>`), and is then cut again."""
    import lxml.html
    from lxml import etree

    for _ in range(_CUTS):
        try:
            tree = lxml.html.document_fromstring(html)
        except (etree.ParserError, ValueError):  # nothing a parser keeps: the extractors say so
            return html
        deepest = tree.xpath("/*" + "/*" * (MAX_DEPTH - 1) + "[*]")
        if not deepest:
            return html
        for element in deepest:
            etree.strip_tags(element, "*")
        html = str(lxml.html.tostring(tree, encoding="unicode"))
    return html


# Cuts tried before the page is taken as it is (one has always been enough but for a level or two).
_CUTS = 4


def _attributes(written: str) -> tuple[str, int]:
    """A tag's attributes written out again: the first :data:`MAX_ATTRIBUTES`, the first of each
    name, names reduced to what every parser takes as a name, values in double quotes; and where
    the last attribute read ends in ``written``."""
    kept: dict[str, str] = {}
    last_end = -1
    for found in _ATTRIBUTE_PARTS.finditer(written):
        if len(kept) == MAX_ATTRIBUTES:
            break
        last_end = found.end()
        name = _NOT_IN_NAMES.sub("", found.group(1)).lower()
        if not name or not name[0].isalpha() or name in kept:
            continue
        value = next((part for part in found.groups()[1:] if part is not None), "")
        kept[name] = value.replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join(f' {name}="{value}"' for name, value in kept.items()), last_end


def _raw_end(html: str, name: str, start: int) -> int:
    found = _RAW_TEXT[name].search(html, start)
    return found.start() if found else len(html)


def _script_end(html: str, start: int, end: int) -> int:
    """Where a script's text that begins at ``start`` ends: at its end tag outside a double-escaped
    part (``<script><!--<script></script>`` has not ended; a `"` after it opened a quote to this
    pass that hid a tag of any number of attributes from it), else at ``end``."""
    escaped = double = False
    position = start
    while found := _SCRIPT_STATES.search(html, position, end):
        token, closing = found.group(), found.group(1)
        if token == "<!--":
            escaped = escaped or not double
            position = found.start() + 2  # `<!-->` ends the part it opens at once
        elif token == "-->":
            escaped = double = False
            position = found.end()
        elif not closing:  # `<script`
            double = double or escaped
            position = found.end() - 1
        elif double:  # `</script` inside the double-escaped part
            double = False
            position = found.end() - 1
        else:
            return found.start()
    return end
