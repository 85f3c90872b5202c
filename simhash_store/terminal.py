"""Text for people at a terminal: keys, paths and texts shown as they are, never acted on. Pure: no I/O.

Keys and file names are data from anyone: an ESC sequence in one retitles the terminal or
clears the screen, a line break splits a line that a script reads, U+202E shows what follows
backwards, a zero-width space makes two keys look the same. :func:`visible` writes each such
character as an escape a reader can see (``\\x1b``, ``\\n``, ``\\u202e``); the human output of
every command goes through it. JSON output stays exact instead (:func:`json_line`).

>>> visible("a\\x1b]0;owned\\x07b")
'a\\\\x1b]0;owned\\\\x07b'
>>> visible("invoice\\u202etxt.exe")
'invoice\\\\u202etxt.exe'
>>> visible("中文 key.txt")
'中文 key.txt'
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Any

# Unicode categories written as escapes: controls (C0, DEL, C1), format characters (the bidi
# embeddings, overrides, isolates and marks U+202A-202E, U+2066-2069, U+200E/200F, U+061C;
# zero-width spaces and joiners, soft hyphen, BOM, tags), the line and paragraph separators
# U+2028/2029, and lone surrogates (a file name that was not UTF-8, as Python reads it).
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(character: str) -> str:
    code = ord(character)
    if character in _NAMED:
        return _NAMED[character]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every control, format and separator character written as a visible escape.

    Backslashes are left as they are, so that paths read naturally: the escapes are for the
    eye, and ``--json`` is the exact form. Applying it twice changes nothing more.
    """
    if text.isprintable():  # the common case, checked in C: nothing to escape
        return text
    return "".join(_escape(c) if unicodedata.category(c) in ESCAPED_CATEGORIES else c for c in text)


# JSON escapes C0 controls itself; these it leaves raw, and terminals or line readers act on them:
# DEL and the C1 controls (U+009B is CSI on many terminals), U+0085, U+2028 and U+2029 (line breaks
# for str.splitlines, JavaScript and others). Escaped as \\u sequences, the decoded value is unchanged.
# Lone surrogates too (a file name that was not UTF-8): raw, they cannot be written out at all.
_JSON_ESCAPES = str.maketrans(
    {chr(code): f"\\u{code:04x}" for code in [*range(0x7F, 0xA0), 0x2028, 0x2029, *range(0xD800, 0xE000)]}
)


def json_line(record: object) -> str:
    """One JSON object on one line, exact for every consumer, inert on a terminal.

    Other non-ASCII characters, bidirectional controls included, are written as themselves
    (``ensure_ascii=False``): they are data, and a JSON reader gets them back either way.
    """
    return json_text(record, ensure_ascii=False).translate(_JSON_ESCAPES)


def json_text(value: object, **options: Any) -> str:
    """``json.dumps`` that every JSON reader takes: NaN and the infinities, which Python writes
    as ``NaN``/``Infinity`` (not JSON; JavaScript's ``JSON.parse`` and others refuse them), are
    written as ``null``, as JavaScript's ``JSON.stringify`` writes them. Values without them
    cost nothing more than ``json.dumps``: the walk runs only when the strict dump refuses.
    """
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
    return json.dumps(_finite(value), allow_nan=False, **options)


def _finite(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {name: _finite(member) for name, member in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


__all__ = ["ESCAPED_CATEGORIES", "json_line", "json_text", "visible"]
