"""near and near_many labelled PARALLEL UNSAFE: near v4, near_many v2 (and their wide3 versions)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27

``simhash.near`` and ``simhash.near_many`` were labelled ``PARALLEL SAFE``, but when they scan
the table (a small store, a large k, ``method => 'scan'``) they set ``enable_seqscan`` for the
call, which PostgreSQL refuses during a parallel operation: another application's statement that
ran them beside a parallel scan (a ``LATERAL`` join over a table of a few hundred thousand rows)
failed with ``cannot set parameters during a parallel operation``, and so did every search of the
store where the database's owner forced parallel mode (``force_parallel_mode``,
``debug_parallel_query``). ``PARALLEL RESTRICTED`` would not do: the leader is in parallel mode
too. The new versions are the same text labelled ``PARALLEL UNSAFE`` (a statement that calls them
is planned without parallel workers); signatures, results, settings and grants are the earlier
versions' (``CREATE OR REPLACE`` keeps the grants). Each store gets the versions of its layout;
the downgrade puts the earlier ones back.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from simhash_store.migrations import sqlfiles

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NEW = {"four16": ("near.v4", "near_many.v2"), "wide3": ("near.wide3.v2", "near_many.wide3.v2")}
OLD = {"four16": ("near.v3", "near_many.v1"), "wide3": ("near.wide3.v1", "near_many.wide3.v1")}


def _layout() -> str:
    layout = op.get_bind().execute(sa.text("SELECT layout FROM simhash.store_info")).scalar()
    return "wide3" if layout == "wide3" else "four16"  # lean runs four16's functions; no row: four16


def upgrade() -> None:
    sqlfiles.create(*NEW[_layout()])


def downgrade() -> None:
    sqlfiles.create(*OLD[_layout()])
