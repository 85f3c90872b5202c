"""What one web page may cost the HTML parser, checked before lxml sees it. No files, no database.

lxml's parser (libxml2) spends time that grows with the square of the number of attributes on
one tag (32,000 attributes, 341 KB, took seconds a parse, and a page is parsed several times),
and about a kilobyte of memory an element. :func:`bounded` reads a page's tags the way the
HTML standard's tokenizer does (the one libxml2 2.14 and later follow: lxml 6 bundles it) in
one linear pass, keeps the first :data:`MAX_ATTRIBUTES` attributes of a tag and drops the rest,
and refuses a page of more than :data:`MAX_ELEMENTS` tags. Scripts, styles and comments are read
as text by the standard, and also scanned here as markup: a page cannot hide a tag from this
pass behind a comment or a quote that the parser reads differently.

>>> bounded('<p class="a" id=b>text</p>')
'<p class="a" id=b>text</p>'
>>> len(bounded("<div " + " ".join(f"a{i}" for i in range(1000)) + ">x</div>")) < 2000
True
"""

from __future__ import annotations

import itertools
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

# A start or end tag as the standard's tokenizer reads it: the name, then attributes (a name,
# optionally `=` and a value, quoted or not) and separators, up to `>` or the end of the page.
# Every part of the loop starts on a different character class and the end is optional, so the
# match never backtracks over the loop: one pass, linear in the tag's length.
_VALUE = r"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*"?|'[^']*'?|[^\t\n\f\r >]*))?"""
_ATTRIBUTE = re.compile(r"[^\t\n\f\r />][^\t\n\f\r /=>]*" + _VALUE)
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
    """The page as every parser is to read it: what an lxml tree cannot hold replaced
    (:func:`holdable`), and every tag cut to :data:`MAX_ATTRIBUTES` attributes (the same page
    when there is nothing to do). Raises :class:`~simhash_store.decoding.DecodeError` (``too
    large``) for a page of more than :data:`MAX_ELEMENTS` tags."""
    html = holdable(html)
    cuts: list[tuple[int, int, str]] = []
    elements = _scan(html, 0, len(html), cuts, markup=True)
    if elements > MAX_ELEMENTS:
        raise DecodeError(TOO_LARGE, f"{elements:,} tags in one page, more than {MAX_ELEMENTS:,}")
    if not cuts:
        return html
    pieces: list[str] = []
    copied = 0
    for start, end, replacement in cuts:
        pieces += (html[copied:start], replacement)
        copied = end
    pieces.append(html[copied:])
    return "".join(pieces)


def _scan(html: str, start: int, end: int, cuts: list[tuple[int, int, str]], *, markup: bool) -> int:
    """Reads the tags of ``html[start:end]`` in order, adding a cut for each that has too many
    attributes; returns the number of start tags read. In ``markup``, comments and raw-text
    elements are recognised and their content scanned once more as plain tags, bounded by where
    the standard ends them; inside them (``markup`` false) every ``<`` is taken as it comes."""
    elements = 0
    position = start
    while (position := html.find("<", position, end)) >= 0:
        if markup and (bogus := _BOGUS_COMMENT.match(html, position, end)):
            if bogus.group() == "<!--":
                found = _COMMENT_END.search(html, position + 2, end)  # from `--`: `<!-->` ends at once
                close = found.end() if found else end
            else:  # `<!...>`, `<?...>`, `</3...>`: up to the first `>`
                found_at = html.find(">", position, end)
                close = end if found_at < 0 else found_at + 1
            _scan(html, position + 2, close, cuts, markup=False)  # scanned as markup too
            position = close
            continue
        tag = _TAG.match(html, position, end)
        if tag is None:
            position += 1  # a `<` that opens nothing is text
            continue
        closing, name, attributes, _ = tag.groups()
        if len(attributes) > 2 * MAX_ATTRIBUTES:  # an attribute takes two characters at least
            kept = [match.group() for match in itertools.islice(_ATTRIBUTE.finditer(attributes), MAX_ATTRIBUTES + 1)]
            if len(kept) > MAX_ATTRIBUTES:
                attributes = "" if closing else " " + " ".join(kept[:MAX_ATTRIBUTES])
                cuts.append((position, tag.end(), f"<{closing}{name}{attributes}>"))
        position = tag.end()
        if closing:
            continue
        elements += 1
        raw_end = _RAW_TEXT.get(name.lower()) if markup and name.isascii() else None
        if raw_end is not None:
            if name.lower() == "script":
                close = _script_end(html, position, end)
            else:
                found = raw_end.search(html, position, end)
                close = found.start() if found else end
            _scan(html, position, close, cuts, markup=False)  # the parser may read it as markup
            position = close
    return elements


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
