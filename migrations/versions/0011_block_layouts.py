"""Block layouts: store_info.layout and simhash.wide_masks, for the wide3 layout of init --layout

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26

A store searches block indexes (multi-index hashing). Its layout says which:

* ``four16``, every store so far and the default: the four 16-bit block columns' indexes,
  searched by ``near.v3`` and ``near_many.v1``;
* ``wide3``: three blocks of 21, 21 and 22 bits, as expression indexes on the fingerprint
  (``ix_documents_wide0..2``, INCLUDE (fingerprint, id)) in place of the four block indexes,
  searched by ``near.wide3.v1`` and ``near_many.wide3.v1`` (docs/store_speed.md: faster from
  about 30M documents a node). ``simhash-store init --layout wide3`` switches a store to it.

This revision adds what the layouts need and changes no store's layout:

* ``store_info.layout``: ``four16`` or ``wide3`` (what every existing store has: ``four16``);
* ``simhash.wide_masks(mask, weight)``: every mask of 22 bits with at most 5 bits set (35,443),
  what wide3 flips in a block value (radii of up to 5 bits: k <= 17).

The downgrade gives a wide3 store its four 16-bit block indexes and functions back first.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from simhash_store.migrations import sqlfiles

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "simhash"
LAYOUT = "block layout of the search indexes: four16 (four 16-bit blocks) or wide3 (21, 21 and 22 bits)"
WIDE_MASKS = """
INSERT INTO simhash.wide_masks (mask, weight)
WITH RECURSIVE masks (mask, weight, highest) AS (
    SELECT 0, 0, -1
    UNION ALL
    SELECT m.mask | (1 << b.bit), m.weight + 1, b.bit
    FROM masks m CROSS JOIN generate_series(0, 21) AS b(bit)
    WHERE b.bit > m.highest AND m.weight < 5
)
SELECT mask, weight FROM masks
"""


def upgrade() -> None:
    op.add_column(
        "store_info",
        sa.Column("layout", sa.Text(), server_default=sa.text("'four16'"), nullable=False, comment=LAYOUT),
        schema=SCHEMA,
    )
    op.create_check_constraint(op.f("ck_store_info_layout"), "store_info", "layout IN ('four16', 'wide3')", schema=SCHEMA)
    op.create_table(
        "wide_masks",
        sa.Column("mask", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("weight", sa.SmallInteger(), nullable=False),
        sa.PrimaryKeyConstraint("mask", name=op.f("pk_wide_masks")),
        schema=SCHEMA,
    )
    op.create_index(
        op.f("ix_wide_masks_weight"), "wide_masks", ["weight"], unique=False, schema=SCHEMA, postgresql_include=["mask"]
    )
    op.execute(WIDE_MASKS)


def downgrade() -> None:
    layout = op.get_bind().execute(sa.text("SELECT layout FROM simhash.store_info")).scalar()
    if layout == "wide3":
        for n in range(4):
            op.create_index(
                op.f(f"ix_documents_block{n}"), "documents", [f"block{n}"],
                unique=False, schema=SCHEMA, postgresql_include=["fingerprint", "id"],
            )
        for n in range(3):
            op.drop_index(op.f(f"ix_documents_wide{n}"), table_name="documents", schema=SCHEMA)
        sqlfiles.create("near.v3", "near_many.v1")
    op.drop_index(op.f("ix_wide_masks_weight"), table_name="wide_masks", schema=SCHEMA)
    op.drop_table("wide_masks", schema=SCHEMA)
    op.drop_constraint(op.f("ck_store_info_layout"), "store_info", schema=SCHEMA)
    op.drop_column("store_info", "layout", schema=SCHEMA)
