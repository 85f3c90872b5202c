"""Keep policy: documents.arrival and documents.keep_value, store_info.keep_policy

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26

A cluster's representative is the copy the store's keep policy prefers (``first``, ``longest``,
``shortest`` or ``field:NAME[:asc|desc]``; docs/dedup.md), and ``recluster`` must give what a
fresh ``dedup`` of the same input gives. Both need what the policy compares, per document:

* ``documents.arrival``: the order in which documents were stored, input order within a batch
  (ids are numbered in key order within a batch, so id order is not input order). Clustering
  and the policy's ties follow it. An existing store's documents arrive in id order, which is
  what ``recluster`` used before: ``arrival = id``, so upgraded clusters stay as they are.
* ``documents.keep_value``: the value of the policy's field, as JSON (NULL: missing).
* ``store_info.keep_policy``: the policy the clusters are kept by (NULL: ``first``, what every
  store kept before).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "simhash"
ARRIVAL = "order of storing (input order within a batch): clustering and the keep policy's ties follow it"
KEEP_VALUE = "value of the keep policy's field (NULL: missing)"
KEEP_POLICY = "first, longest, shortest or field:NAME:asc|desc: which copy represents a cluster; NULL: first"


def upgrade() -> None:
    op.add_column("documents", sa.Column("arrival", sa.BigInteger(), nullable=True, comment=ARRIVAL), schema=SCHEMA)
    op.add_column(
        "documents", sa.Column("keep_value", postgresql.JSONB(), nullable=True, comment=KEEP_VALUE), schema=SCHEMA
    )
    op.add_column("store_info", sa.Column("keep_policy", sa.Text(), nullable=True, comment=KEEP_POLICY), schema=SCHEMA)
    op.execute("UPDATE simhash.documents SET arrival = id")
    op.create_index("ix_documents_arrival", "documents", ["arrival"], schema=SCHEMA)


def downgrade() -> None:
    op.drop_index("ix_documents_arrival", table_name="documents", schema=SCHEMA)
    op.drop_column("store_info", "keep_policy", schema=SCHEMA)
    op.drop_column("documents", "keep_value", schema=SCHEMA)
    op.drop_column("documents", "arrival", schema=SCHEMA)
