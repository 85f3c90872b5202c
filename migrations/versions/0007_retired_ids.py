"""store_info.highest_retired_id: ids of removed documents are never given again (branch misc)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26

In a store that keeps clusters, a write numbers its new documents itself, under the cluster
lock: one more than the largest id stored or used by a cluster (``clusters.allocate_ids``).
Removing the newest documents took their ids out of that maximum, so they were given again,
although applications are told they may keep ids. ``Store.remove`` now records the largest id
it removes here, in its own transaction, and the numbering starts above it too.

Why a column and not the identity sequence: a sequence is not rolled back, so numbering from it
would let a write killed inside its transaction push every later id (and cluster id) up, and a
rerun of ``dedup`` would no longer write what an uninterrupted run writes. A column moves with
the transactions that commit.

An existing store starts from its identity sequence's last value: every id given out before
this revision, and perhaps removed since, lies at or below it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "simhash"
COMMENT = "no new document takes an id at or below this: the largest id of a removed document"

# The sequence's last value, when it has given one (is_called); its name read from the catalogue.
_SEQUENCE_START = """
DO $$
DECLARE
    sequence_name pg_catalog.regclass := pg_catalog.pg_get_serial_sequence('simhash.documents', 'id');
    given bigint;
BEGIN
    EXECUTE pg_catalog.format('SELECT CASE WHEN is_called THEN last_value END FROM %s', sequence_name) INTO given;
    UPDATE simhash.store_info SET highest_retired_id = given;
END
$$
"""


def upgrade() -> None:
    op.add_column("store_info", sa.Column("highest_retired_id", sa.BigInteger(), nullable=True, comment=COMMENT), schema=SCHEMA)
    op.execute(_SEQUENCE_START)


def downgrade() -> None:
    op.drop_column("store_info", "highest_retired_id", schema=SCHEMA)
