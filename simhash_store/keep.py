"""Keep policies: which copy of near-duplicates represents its cluster (pure, no database).

A policy ranks documents; the lower rank is the better copy, and every rank ends with the
document's arrival (input order, then the order of storing), so no two documents tie:

* ``first``: the earliest arrival;
* ``longest`` / ``shortest``: the most / fewest characters (an unknown length ranks last);
* ``field:NAME[:asc|desc]``: the value of the record's field NAME, ascending by default.
  Numbers compare numerically and come before strings; strings compare by code point, so ISO
  dates and times (``2024-05-01``, ``2024-05-01T08:00:00Z``) compare as dates when written alike.
  A missing field, ``null``, ``true``/``false``, an object or a list ranks last, in both directions,
  and so does a string of over 1,000 characters or an integer of over 1,000 digits (:func:`comparable`).
  A Parquet date or time compares as the text outputs write for it (``2024-05-01 08:00:00``; one
  with a time zone in UTC), a Parquet decimal as the number it is (:func:`keep_form`).

>>> policy = KeepPolicy.parse("field:published_at:asc")
>>> sorted(["b", "a", None], key=lambda v: policy.rank(0, None, v)) == ["a", "b", None]
True

Leader clustering with a policy (:func:`leaders_keeping`): documents are taken in arrival order;
each joins the nearest representative within k (ties: the earliest-arriving representative),
else founds a cluster; a newcomer that the policy ranks better than its cluster's representative
becomes the representative (the cluster keeps its id). Later documents compare with the
representatives as they are when they arrive, so a store that grows batch by batch and a fresh
run over the same input in one go end with the same clusters.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidValueError
from .leaders import max_pairs, sequential_leaders_keeping
from .pairs import TooManyPairs, near_pairs
from .validation import text_problem

Rank = tuple[Any, ...]  # a policy's sort key: the lower, the better copy

POLICIES = ("first", "longest", "shortest", "field:NAME[:asc|desc]")
# The longest string, and the most digits of an integer, that a keep value compares by: past them it
# ranks as missing and is not stored. Every write into a clustered store reads the values of the
# representatives it compares with, and another role may store any jsonb there: 40 values of 20 MB
# made a one-document add take 1.8 GB.
KEEP_TEXT_MAX = 1_000
_KEEP_INTEGER_BOUND = 10**KEEP_TEXT_MAX
# What the store sends of a stored value (its JSON text) at most: a string of KEEP_TEXT_MAX
# characters, each escaped as six, fits; anything longer could not compare, and is read as none.
KEEP_VALUE_READ_BYTES = 8_192
_LAST = (2,)  # after every number (0, ...) and string (1, ...)


@dataclass(frozen=True)
class KeepPolicy:
    """A parsed ``--keep`` value: ``kind`` first, longest, shortest or field; ``field`` and ``descending`` for field."""

    kind: str = "first"
    field: str | None = None
    descending: bool = False

    @classmethod
    def parse(cls, text: str | KeepPolicy | None) -> KeepPolicy:
        """The policy ``text`` names; ValueError saying what is allowed for anything else."""
        if isinstance(text, KeepPolicy):
            return text
        if text is None or text == "first":
            return cls()
        if text in ("longest", "shortest"):
            return cls(text)
        if isinstance(text, str) and text.startswith("field:"):
            name, _, direction = text[len("field:") :].partition(":")
            if name and direction in ("", "asc", "desc"):
                problem = text_problem(name)
                if problem is not None:  # it is stored: a NUL was the driver's DataError
                    raise InvalidValueError(f"keep field {name!r} {problem}")
                return cls("field", name, direction == "desc")
        allowed = ", ".join(POLICIES)
        raise InvalidValueError(f"keep must be one of {allowed} (for example field:published_at:asc), not {text!r}")

    def __str__(self) -> str:
        if self.kind != "field":
            return self.kind
        return f"field:{self.field}:{'desc' if self.descending else 'asc'}"

    @property
    def needs_every_record(self) -> bool:
        """Whether a later copy can replace a representative (so verdicts wait for the whole input)."""
        return self.kind != "first"

    def value_of(self, record: Any) -> Any:
        """What the policy stores of a record (a mapping): the field's value, or None."""
        if self.kind != "field" or not hasattr(record, "get"):
            return None
        value = keep_form(record.get(self.field))
        return value if comparable(value) else None

    def rank(self, arrival: int, length: int | None, value: Any) -> Rank:
        """The sort key of a document (lower: the better copy); ``arrival`` breaks every tie."""
        if self.kind == "first":
            return (arrival,)
        if self.kind in ("longest", "shortest"):
            if length is None:
                return (1, 0, arrival)
            return (0, -length if self.kind == "longest" else length, arrival)
        return (*_value_rank(value, self.descending), arrival)


def keep_form(value: Any) -> Any:
    """A field value in the form the policy compares and the store keeps: a date or time (a Parquet
    ``timestamp``, ``date32``, ``time64``) as the text every output writes for it, which compares as
    the values do within a column (``2024-05-01 08:00:00``, ``2024-05-01``), one with a time zone
    in UTC (``2024-05-01 06:00:00+00:00`` for 08:00 in Berlin), so that moments of any zones compare
    as moments; a decimal (Parquet
    ``decimal128``/``decimal256``) as an integer when it is whole, else as a float. Any other value as
    it is. Such values ranked as missing before, so ``field:published_at:desc`` over a Parquet
    timestamp column kept the first copy, not the newest.

    >>> keep_form(datetime.datetime(2024, 5, 1, 8)), keep_form(datetime.date(2024, 5, 1))
    ('2024-05-01 08:00:00', '2024-05-01')
    >>> keep_form(datetime.datetime(2024, 6, 3, 8, tzinfo=datetime.timezone(datetime.timedelta(hours=-4))))
    '2024-06-03 12:00:00+00:00'
    >>> keep_form(decimal.Decimal("2.50")), keep_form(decimal.Decimal("1E+30")), keep_form("x")
    (2.5, 1000000000000000000000000000000, 'x')
    """
    if isinstance(value, datetime.datetime):
        if value.utcoffset() is not None:
            # In UTC: the same moment in two zones (two crawlers' files), or either side of the hour
            # a clock falls back, wrote texts in another order than the moments' (08:00:00-04:00, the
            # later, sorted before 10:00:00+00:00), and the older copy was kept.
            value = value.astimezone(datetime.timezone.utc)
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return None
        whole = value == value.to_integral_value()
        return int(value) if whole and value.adjusted() < 4300 else float(value)
    return value


def comparable(value: Any) -> bool:
    """Whether a field value takes part in the comparison (a finite number or a string), and so is
    stored: a string PostgreSQL cannot hold (NUL, a lone surrogate) counts as missing, as in the
    store, where its value is NULL (jsonb refuses it, which failed the whole batch); so does a
    string of over :data:`KEEP_TEXT_MAX` characters or an integer of over as many digits, which
    the store never reads back (:func:`keep_value_text`).

    >>> comparable("2024-05-01"), comparable("x" * 1001), comparable(10**999), comparable(10**1000)
    (True, False, True, False)
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return bool(-_KEEP_INTEGER_BOUND < value < _KEEP_INTEGER_BOUND)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str) and len(value) <= KEEP_TEXT_MAX and text_problem(value) is None


def keep_value_text(column: str) -> str:
    """SQL for a stored keep value ``column`` (jsonb) as JSON text, NULL where it is longer than
    :data:`KEEP_VALUE_READ_BYTES` (no such value compares: it ranks as missing): another role's
    values of megabytes are never sent. Its size on disk is asked first, which reads no value; a
    small one that decompresses large is measured in the server."""
    limit = KEEP_VALUE_READ_BYTES
    return (
        f"CASE WHEN pg_catalog.pg_column_size({column}) > {2 * limit} THEN NULL "
        f"WHEN pg_catalog.octet_length({column}::pg_catalog.text) > {limit} THEN NULL "
        f"ELSE {column}::pg_catalog.text END"
    )


def stored_value(text: str | None) -> Any:
    """A document's keep value as the store holds it (``documents.keep_value``, read as JSON text).
    Another application may store JSON no input of this library gives and Python cannot read: an
    integer of more than 4,300 digits, nesting past the recursion limit (such a value in a
    representative ended every write into the store and every recluster in a traceback). It ranks
    as a missing value, as a list or an object does.

    >>> stored_value('"2024-05-01"'), stored_value("9" * 5000), stored_value("[" * 5000 + "]" * 5000)
    ('2024-05-01', None, None)
    """
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _value_rank(value: Any, descending: bool) -> Rank:
    if not comparable(value):
        return _LAST
    if isinstance(value, str):
        return (1, _Reversed(value) if descending else value)
    return (0, -value if descending else value)


class _Reversed:
    """A string that sorts after every string it would sort before ("abc" before "ab" before "a"),
    holding only the string: a tuple of its negated code points took about 40 bytes a character
    (a keep field of 60 values of 1 MB each: 2.6 GB in `recluster --keep field:x:desc`)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __lt__(self, other: _Reversed) -> bool:
        return other.text < self.text

    def __le__(self, other: _Reversed) -> bool:
        return other.text <= self.text

    def __gt__(self, other: _Reversed) -> bool:
        return other.text > self.text

    def __ge__(self, other: _Reversed) -> bool:
        return other.text >= self.text

    def __reduce__(self) -> tuple[type[_Reversed], tuple[str]]:
        return (_Reversed, (self.text,))

    def __repr__(self) -> str:
        return f"_Reversed({self.text!r})"


@dataclass(frozen=True)
class Representative:
    """A cluster's representative as the clustering sees it: where it is, its value and its rank."""

    cluster: int
    position: int  # the caller's index of the document (or of a stored representative)
    arrival: int
    value: int  # unsigned fingerprint
    rank: Rank


def leaders_keeping(values: np.ndarray, ranks: list[Rank], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Leader clustering in the given (arrival) order, with representatives chosen by ``ranks``.

    Returns (cluster, head): ``cluster[i]`` the position of the founder of document i's cluster,
    ``head[c]`` the position of the final representative of the cluster founded at ``c`` (-1
    for positions that founded nothing). Exact: built on the pairs within ``k``, or, past about
    4 of them a document, on a search of the representatives alone (:mod:`leaders`).
    """
    n = len(values)
    cluster = np.arange(n, dtype=np.int64)
    head = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return cluster, head
    try:
        left, right, distance = near_pairs(values, k, max_pairs(n))
    except TooManyPairs:  # many documents near one another: the representatives alone are searched
        return sequential_leaders_keeping(values, ranks, k)
    low, high = np.minimum(left, right), np.maximum(left, right)
    order = np.lexsort((low, distance, high))  # each later document's earlier neighbours, nearest then earliest
    low_list, distance_list = low[order].tolist(), distance[order].tolist()
    high_sorted = high[order]
    starts = np.searchsorted(high_sorted, np.arange(n)).tolist()
    ends = np.searchsorted(high_sorted, np.arange(n), side="right").tolist()
    heading = np.full(n, -1, dtype=np.int64)  # for a current representative: the founder of its cluster
    for position in range(n):
        joined = -1
        best: tuple[int, int] | None = None
        for index in range(starts[position], ends[position]):
            neighbour = low_list[index]
            if heading[neighbour] >= 0:
                # Nearest first, then the earliest-arriving representative (the neighbours are in that order).
                candidate = (distance_list[index], neighbour)
                if best is None or candidate < best:
                    best = candidate
                    break
        if best is not None:
            joined = best[1]
        if joined < 0:
            heading[position] = position
            head[position] = position
            continue
        founder = int(heading[joined])
        cluster[position] = founder
        if ranks[position] < ranks[joined]:
            heading[joined] = -1
            heading[position] = founder
            head[founder] = position
    return cluster, head


__all__ = [
    "KEEP_TEXT_MAX",
    "POLICIES",
    "KeepPolicy",
    "Rank",
    "Representative",
    "comparable",
    "keep_value_text",
    "leaders_keeping",
    "stored_value",
]
