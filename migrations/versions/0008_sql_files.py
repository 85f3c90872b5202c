"""SQL functions from files (migrations/sql), simhash.from_hex and simhash.to_hex (branch sqlfiles)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26

* Every function of the schema is created again from its file in ``migrations/sql`` (see
  ``migrations/sqlfiles.py``): ``near.v3``, ``near_many.v1``, ``distance.v2`` and
  ``cluster_of.v1`` hold the very text revisions 0001 to 0007 left installed, so nothing
  changes in a store but where the SQL can be read. On a Citus store the ``.citus.sql``
  variant of a version is created instead: the text the coordinator ran at 0007, written out.
* ``simhash.to_hex(bigint) -> text`` and ``simhash.from_hex(text) -> bigint``: fingerprints
  as simhash-store prints them (16 lower-case hex digits of the unsigned value) and back,
  for applications that have no 64-bit unsigned arithmetic at hand. They get the grants
  ``near`` has (an administrator who took EXECUTE on ``near`` away from PUBLIC keeps that).
"""

from collections.abc import Sequence

from alembic import op

from simhash_store.migrations import sqlfiles

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The versions installed at 0007, in files; CREATE OR REPLACE keeps their grants.
CURRENT = ("distance.v2", "near.v3", "near_many.v1", "cluster_of.v1")
NEW = {"simhash.to_hex(bigint)": "to_hex.v1", "simhash.from_hex(text)": "from_hex.v1"}
NEAR = "simhash.near(bigint, integer, text, integer)"


def upgrade() -> None:
    sqlfiles.create(*CURRENT)
    grantees = sqlfiles.revision("0004")._grants_of(NEAR)
    sqlfiles.create(*NEW.values())
    sqlfiles.revision("0004")._grant(list(NEW), grantees)


def downgrade() -> None:
    # The functions of 0007 are as 0007 left them (the files hold their text: the migration
    # test compares every definition before and after), so only the new ones go.
    for signature in NEW:
        op.execute(f"DROP FUNCTION {signature}")
