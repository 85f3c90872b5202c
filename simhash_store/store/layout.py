"""The store's block layout (``store_info.layout``, revisions 0011 and 0012): which indexes a search probes.

* ``four16``, the default: the four 16-bit block columns' indexes, INCLUDE (fingerprint, id).
  A probe reads N / 65,536 index entries; right up to about 10-20M documents a node.
* ``wide3``: three blocks of 21, 21 and 22 bits as expression indexes on the fingerprint,
  INCLUDE (fingerprint, id) like the block indexes, in their place. A probe reads N / 2^21
  entries, for more probes (25 at k = 3 against 4, 4,918 at k = 11 against 548): faster from
  about 30M documents a node (docs/store_speed.md). Expression indexes leave the table as it
  is (no column added), so rows written in plain SQL are indexed as always.
* ``lean`` (revision 0012): the four16 blocks, their indexes without INCLUDE columns
  (``ix_documents_lean0..3``). B-tree deduplication packs the entries of one block value, about
  8 bytes a row an index against about 41: a document costs about 60% of four16's bytes. A probe
  reads each candidate's fingerprint from the table (an index scan, not index-only): 2-2.6x
  the time at k = 3, 2.5-4x at k = 11 at 1M and 8.7x at 2M (docs/store_speed.md). The block columns stay, so switching
  to and from lean only rebuilds indexes, and lean runs four16's functions unchanged.

Each layout has its own ``simhash.near`` and ``simhash.near_many`` (``migrations/sql``; lean shares four16's), all
exact for every k. :func:`switch` changes indexes, functions and the record in the caller's
transaction. Raw psycopg.

>>> validate_layout("wide3")
'wide3'
"""

from __future__ import annotations

import psycopg

from .. import maintenance
from ..distributed import NotDistributableError, is_distributed
from ..errors import InvalidValueError
from ..migrations import sqlfiles

DEFAULT_LAYOUT = "four16"
LAYOUTS = ("four16", "wide3", "lean")
# Each layout's search indexes on simhash.documents: name -> indexed column or expression. The
# expressions are the ones near.wide3.v1.sql probes, written the same way so the planner matches them.
INDEXES = {
    "four16": {f"ix_documents_block{n}": f"block{n}" for n in range(4)},
    "wide3": {
        "ix_documents_wide0": "(((fingerprint >> 43) & 2097151)::integer)",
        "ix_documents_wide1": "(((fingerprint >> 22) & 2097151)::integer)",
        "ix_documents_wide2": "((fingerprint & 4194303)::integer)",
    },
    "lean": {f"ix_documents_lean{n}": f"block{n}" for n in range(4)},
}
# The layouts whose search indexes carry the fingerprint and id (INCLUDE): index-only probes.
COVERING = frozenset({"four16", "wide3"})


def validate_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise InvalidValueError(f"layout must be {', '.join(LAYOUTS[:-1])} or {LAYOUTS[-1]}, not {layout!r}")
    return layout


def stored_layout(cursor: psycopg.Cursor) -> str:
    """The layout the store records (four16 before its first write: the indexes revision 0001 made)."""
    row = cursor.execute("SELECT layout FROM simhash.store_info").fetchone()
    return row[0] if row else DEFAULT_LAYOUT


def switch(cursor: psycopg.Cursor, layout: str, lock_timeout: float) -> bool:
    """Give the store ``layout``'s indexes and functions, in the caller's transaction; whether it changed.

    On a store that holds documents the new indexes are built under an exclusive lock of the
    table (readers and writers wait): minutes for tens of millions of rows.
    """
    if stored_layout(cursor) == layout:
        return False
    if layout != DEFAULT_LAYOUT and is_distributed(cursor):
        raise NotDistributableError(
            f"the {layout} layout is for one server: a distributed (Citus) store keeps the four16 layout"
        )
    cursor.execute("SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true)")
    maintenance.lock_exclusively(cursor, lock_timeout, f"a change of layout to {layout}")
    if stored_layout(cursor) == layout:  # another init changed it while this one waited for the lock
        return False
    # IF NOT EXISTS: the record may be wrong (any role that may update store_info can rewrite it), and
    # the indexes of the layout asked for already there; the switch then completes the store to it.
    include = " INCLUDE (fingerprint, id)" if layout in COVERING else ""
    for name, indexed in INDEXES[layout].items():
        cursor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON simhash.documents ({indexed}){include}")
    for other in LAYOUTS:
        if other != layout:
            for name in INDEXES[other]:
                cursor.execute(f"DROP INDEX IF EXISTS simhash.{name}")
    for version in sqlfiles.LAYOUT_FUNCTIONS[layout]:
        cursor.execute(sqlfiles.read(version))
    cursor.execute("UPDATE simhash.store_info SET layout = %s", (layout,))
    return True
