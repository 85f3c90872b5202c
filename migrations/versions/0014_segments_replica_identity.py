"""simhash.segments keeps working under a publication of every table: a unique key as replica identity

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27

``simhash.segments`` had no primary key (revision 0009: an index on the document alone). Under a
publication ``FOR ALL TABLES`` or ``FOR TABLES IN SCHEMA simhash`` that publishes deletes, which a
superuser may create for logical replication or change capture, PostgreSQL refuses every delete
from a table without a replica identity: ``remove`` and an ``add`` that changes a stored document
stopped with ``cannot delete from table "segments" because it does not have a replica identity and
publishes deletes``. ``REPLICA IDENTITY FULL`` is refused too on PostgreSQL 18 (the table's block
columns are generated ones, which such a publication leaves out).

This revision replaces the index on ``document_id`` with a unique index on ``(document_id,
segment)`` (a document's segments are numbered from 0 and written all at once, so the pair is
unique; the index still serves the lookups by document) and makes it the replica identity. It
costs about 22 bytes a segment more than the deduplicated index it replaces (31.6 against 9.5
bytes a row, measured with ten segments a document), and only in stores that keep segments.
The downgrade puts back the index on the document and the default identity.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA = "simhash"


def upgrade() -> None:
    op.create_index("ux_segments_document_id_segment", "segments", ["document_id", "segment"], unique=True, schema=SCHEMA)
    op.execute("ALTER TABLE simhash.segments REPLICA IDENTITY USING INDEX ux_segments_document_id_segment")
    op.drop_index("ix_segments_document_id", table_name="segments", schema=SCHEMA)


def downgrade() -> None:
    op.create_index("ix_segments_document_id", "segments", ["document_id"], schema=SCHEMA)
    op.execute("ALTER TABLE simhash.segments REPLICA IDENTITY DEFAULT")
    op.drop_index("ux_segments_document_id_segment", table_name="segments", schema=SCHEMA)
