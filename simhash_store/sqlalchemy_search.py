"""``simhash.near`` and ``simhash.near_many`` as SQLAlchemy table-valued functions, to join, filter and limit.

The search runs in the database exactly as ``Store.query`` runs it; these only build the
SQL. Fingerprints may be Python integers (unsigned, converted to PostgreSQL's signed
bigint here) or SQL expressions such as a column of another table.

>>> from sqlalchemy import select
>>> from simhash_store.sqlalchemy_search import near
>>> found = near(0x1A9FFED40A667204, max_distance=3)
>>> statement = select(found.c.key, found.c.distance).where(found.c.key.like("news/%"))
>>> print(statement)  # doctest: +NORMALIZE_WHITESPACE
SELECT anon_1.key, anon_1.distance
FROM simhash.near(:param_1, :param_2, :param_3) AS anon_1
WHERE anon_1.key LIKE :key_1

Against the rows of your own table (one search per row, as a LATERAL join)::

    hits = near(Crawl.fingerprint, max_distance=3, max_results=5).lateral()
    select(Crawl.url, hits.c.key, hits.c.distance).join(hits, true())
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, Integer, Text, column, func, literal
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.selectable import TableValuedAlias

from .bits import to_signed
from .scheme import DEFAULT_MAX_DISTANCE

_MATCH = (column("id", BigInteger), column("key", Text), column("fingerprint", BigInteger), column("distance", Integer))


def _fingerprint(value: int | ColumnElement[Any]) -> ColumnElement[Any]:
    return literal(to_signed(value), BigInteger) if isinstance(value, int) else value


def _options(max_distance: int, method: str, max_results: int | None) -> list[ColumnElement[Any]]:
    options: list[ColumnElement[Any]] = [literal(max_distance, Integer), literal(method, Text)]
    if max_results is not None:
        options.append(literal(max_results, Integer))
    return options


def near(
    fingerprint: int | ColumnElement[Any],
    max_distance: int = DEFAULT_MAX_DISTANCE,
    *,
    method: str = "auto",
    max_results: int | None = None,
) -> TableValuedAlias:
    """``simhash.near(...)`` with columns id, key, fingerprint, distance (nearest first when selected as is)."""
    return func.simhash.near(_fingerprint(fingerprint), *_options(max_distance, method, max_results)).table_valued(
        *_MATCH
    )


def near_many(
    fingerprints: Sequence[int] | ColumnElement[Any],
    max_distance: int = DEFAULT_MAX_DISTANCE,
    *,
    method: str = "auto",
    max_results: int | None = None,
) -> TableValuedAlias:
    """``simhash.near_many(...)``: query_index (1-based position in ``fingerprints``) and the columns of :func:`near`."""
    if not isinstance(fingerprints, ColumnElement):
        fingerprints = literal([to_signed(f) for f in fingerprints], ARRAY(BigInteger))
    return func.simhash.near_many(fingerprints, *_options(max_distance, method, max_results)).table_valued(
        column("query_index", Integer), *_MATCH
    )


__all__ = ["near", "near_many"]
