"""Counts in messages: "1 cluster", "2 clusters", never "1 clusters"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``count`` followed by ``noun`` in the number it takes (``grouped``: 2,000 rather than 2000).

    >>> counted(1, "cluster"), counted(0, "cluster"), counted(2000, "byte", grouped=True)
    ('1 cluster', '0 clusters', '2,000 bytes')
    """
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun if count == 1 else plural or noun + 's'}"
