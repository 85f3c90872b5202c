"""simhash.segments: fingerprints of each document's segments, for containment search (branch containment)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26

* ``simhash.segments(document_id, segment, fingerprint, block0..block3)``: the ``seg-v1``
  fingerprints of each document's segments (``simhash_store/segments.py``), with the four
  generated 16-bit block columns and block indexes of ``simhash.documents``; a document's
  segments go with it (``ON DELETE CASCADE``).
* ``store_info.segments``: whether writes keep segments (``init --segments``); false, and the
  table empty, in every store until it is switched on.
* ``simhash.contained(bigint[], integer)`` and ``simhash.containment_pairs(integer)`` from
  ``migrations/sql``, with the grants ``near`` has.

On a Citus store the table is created without its foreign key (a local table may not reference
a distributed one) and stays empty: ``--segments`` is refused there.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from simhash_store.migrations import sqlfiles

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "simhash"
NEW = {"simhash.contained(bigint[], integer)": "contained.v1", "simhash.containment_pairs(integer)": "containment_pairs.v1"}
NEAR = "simhash.near(bigint, integer, text, integer)"


def _block(shift: int) -> sa.Computed:
    return sa.Computed(f"((fingerprint >> {shift}) & 65535)::integer", persisted=True)


def upgrade() -> None:
    op.add_column(
        "store_info",
        sa.Column("segments", sa.Boolean(), server_default=sa.text("false"), nullable=False,
                  comment="whether writes keep the fingerprints of each document's segments (simhash.segments)"),
        schema=SCHEMA,
    )
    distributed = sqlfiles.is_distributed(op.get_bind())
    foreign_key = [] if distributed else [
        sa.ForeignKeyConstraint(
            ["document_id"], [f"{SCHEMA}.documents.id"], name="fk_segments_document_id_documents", ondelete="CASCADE"
        )
    ]
    op.create_table(
        "segments",
        sa.Column("document_id", sa.BigInteger(), nullable=False),
        sa.Column("segment", sa.Integer(), nullable=False, comment="the segment's number in its document, from 0"),
        sa.Column("fingerprint", sa.BigInteger(), nullable=False, comment="seg-v1 SimHash of the segment, two's complement"),
        *(
            sa.Column(f"block{n}", sa.Integer(), _block(shift), nullable=False, comment=f"bits {shift + 15}..{shift}")
            for n, shift in enumerate((48, 32, 16, 0))
        ),
        *foreign_key,
        schema=SCHEMA,
    )
    # No primary key: an index on the document alone, which B-tree deduplication packs into one
    # entry per document (a third of a key per segment: docs/containment.md); a write replaces all
    # of a document's segments at once, so nothing needs (document_id, segment) to be unique.
    op.create_index("ix_segments_document_id", "segments", ["document_id"], schema=SCHEMA)
    for n in range(4):
        # Without INCLUDE columns, unlike the documents' (measured: a third less space for the
        # segments, docs/containment.md); B-tree deduplication then packs repeated block values.
        op.create_index(f"ix_segments_block{n}", "segments", [f"block{n}"], schema=SCHEMA)
    grantees = sqlfiles.revision("0004")._grants_of(NEAR)
    sqlfiles.create(*NEW.values())
    sqlfiles.revision("0004")._grant(list(NEW), grantees)


def downgrade() -> None:
    for signature in NEW:
        op.execute(f"DROP FUNCTION {signature}")
    op.drop_table("segments", schema=SCHEMA)
    op.drop_column("store_info", "segments", schema=SCHEMA)
