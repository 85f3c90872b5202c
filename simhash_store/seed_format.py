"""The ``token^weight`` line of the seed C++ SimHash program, read exactly as that program reads it.

The program splits the line at every single space, splits each item at every ``^``,
takes the first piece as the token and converts the second with C's ``atof``; any
further pieces are ignored. ``atof`` reads the longest number at the start of the
piece and ignores the rest, so ``2x`` weighs 2 and ``x`` weighs 0.

>>> parse_seed_line("中国^2 知乎^1.5e0 读者^2x 的^")
[('中国', 2.0), ('知乎', 1.5), ('读者', 2.0), ('的', 0.0)]

Where the program's behaviour is undefined there is no fingerprint to reproduce, and
:class:`SchemeError` says so: an empty item (an empty line, two spaces in a row, a
space at either end), an item without ``^`` (the program reads a second piece that
does not exist), and a weight too large for a double (``atof`` does not define it).
"""

from __future__ import annotations

import math
import re

from .errors import SchemeError

# What strtod accepts at the start of a string in the "C" locale (the program never calls
# setlocale): C whitespace, a sign, then a decimal or hexadecimal number, INF[INITY] or
# NAN[(chars)]. An exponent without digits is not part of the number, nor is "0x" without
# hex digits (strtod then reads just the "0").
_C_NUMBER_PREFIX = re.compile(
    r"""[ \t\n\v\f\r]*
    (?P<number>[+-]?(?:
        (?P<hex>0x(?:[0-9a-f]+(?:\.[0-9a-f]*)?|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?)
      | (?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?
      | (?P<special>inf(?:inity)?|nan(?:\([0-9a-z_]*\))?)
    ))""",
    re.VERBOSE | re.IGNORECASE | re.ASCII,
)


def c_atof(text: str) -> float:
    """C's ``atof`` in the "C" locale: the number at the start of ``text``, or 0.0 if there is none.

    Decimal and hexadecimal forms are rounded correctly, as glibc does. An overflow
    raises :class:`SchemeError`, because the C standard leaves ``atof`` undefined there.

    >>> c_atof(" 3.25abc"), c_atof("0x1p-2"), c_atof("1e"), c_atof("abc")
    (3.25, 0.25, 1.0, 0.0)
    """
    match = _C_NUMBER_PREFIX.match(text)
    if match is None:
        return 0.0
    number = match.group("number")
    if match.group("special"):
        # float() understands inf, infinity and nan but not nan's "(chars)" payload.
        return float(number.split("(")[0])
    try:
        value = float.fromhex(number) if match.group("hex") else float(number)
    except OverflowError:
        value = math.inf
    if math.isinf(value):
        raise SchemeError(f"weight {number!r} is too large for a double: the seed program's atof is undefined there")
    return value


def parse_seed_line(line: str) -> list[tuple[str, float]]:
    """The ``(token, weight)`` items of a seed-program line, in order, repeats kept.

    The order matters: the program adds the weights in this order in floating point.
    """
    items: list[tuple[str, float]] = []
    for position, item in enumerate(line.split(" "), 1):
        pieces = item.split("^", 2)
        if len(pieces) < 2:
            if not line:
                problem = "the line is empty"
            elif not item:
                problem = f"item {position} is empty (two spaces in a row, or a space at an end)"
            else:
                problem = f"item {position} ({item[:40]!r}) has no '^weight'"
            raise SchemeError(
                f"{problem}: the seed program's behaviour is undefined there, so it has no "
                "fingerprint to reproduce; items are 'token^weight' separated by single spaces"
            )
        items.append((pieces[0], c_atof(pieces[1])))
    return items
