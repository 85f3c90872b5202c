"""Lean layout: the four 16-bit block indexes without INCLUDE columns, for init --layout lean

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26

A third block layout a store may choose (``simhash-store init --layout lean``):

* ``lean``: the four 16-bit block columns, each indexed without ``INCLUDE (fingerprint, id)``
  (``ix_documents_lean0..3``). Without INCLUDE columns B-tree deduplication packs the rows of
  one block value into a posting list: about 8 bytes a row an index against about 41, so a
  document costs about 203 bytes instead of about 331 at 1M (docs/store_speed.md). A probe
  reads each candidate's fingerprint from the table (an index scan, not an index-only one):
  2-2.6x the time at k = 3, 2.5-4x at k = 11 at 1M and 8.7x at 2M (measured). The store runs four16's functions, ``near.v3`` and
  ``near_many.v1``: they name the block columns, which every layout keeps.

This revision only lets ``store_info.layout`` record ``lean`` and changes no store's layout.
The downgrade gives a lean store four16's covering block indexes back first.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "simhash"
BEFORE = "block layout of the search indexes: four16 (four 16-bit blocks) or wide3 (21, 21 and 22 bits)"
AFTER = (
    "block layout of the search indexes: four16 (four 16-bit blocks), wide3 (21, 21 and 22 bits) "
    "or lean (four 16-bit blocks, indexes without INCLUDE columns)"
)


def upgrade() -> None:
    op.drop_constraint(op.f("ck_store_info_layout"), "store_info", schema=SCHEMA)
    op.create_check_constraint(
        op.f("ck_store_info_layout"), "store_info", "layout IN ('four16', 'wide3', 'lean')", schema=SCHEMA
    )
    op.alter_column("store_info", "layout", comment=AFTER, existing_comment=BEFORE, schema=SCHEMA)


def downgrade() -> None:
    layout = op.get_bind().execute(sa.text("SELECT layout FROM simhash.store_info")).scalar()
    if layout == "lean":
        # four16's indexes; its functions (near.v3, near_many.v1) are the ones a lean store runs.
        for n in range(4):
            op.create_index(
                op.f(f"ix_documents_block{n}"), "documents", [f"block{n}"],
                unique=False, schema=SCHEMA, postgresql_include=["fingerprint", "id"],
            )  # fmt: skip
        for n in range(4):
            op.drop_index(op.f(f"ix_documents_lean{n}"), table_name="documents", schema=SCHEMA)
        op.execute("UPDATE simhash.store_info SET layout = 'four16'")
    op.drop_constraint(op.f("ck_store_info_layout"), "store_info", schema=SCHEMA)
    op.create_check_constraint(op.f("ck_store_info_layout"), "store_info", "layout IN ('four16', 'wide3')", schema=SCHEMA)
    op.alter_column("store_info", "layout", comment=BEFORE, existing_comment=AFTER, schema=SCHEMA)
