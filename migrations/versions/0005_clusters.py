"""Persistent clusters: documents.cluster, the representative of each cluster, cluster_of() and the clusters view

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22

Leader clustering (see docs/dedup.md): a new document joins the cluster of the nearest
representative within ``store_info.cluster_max_distance`` bits, else it starts a cluster
of its own, whose id is its document id and whose representative it is. Ids never change
when documents arrive, so other applications may keep them. Clustering costs a radius
search per document written, so a store keeps clusters only once asked to
(``recluster``, or ``dedup`` into an empty store): the distance is NULL until then.

"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: Union[str, Sequence[str], None] = "0004"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

SCHEMA = "simhash"

CLUSTER_OF = """
CREATE FUNCTION simhash.cluster_of(key text) RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT d.cluster FROM simhash.documents d WHERE d.key OPERATOR(pg_catalog.=) cluster_of.key $$;
COMMENT ON FUNCTION simhash.cluster_of(text) IS
  'The stable cluster id of the stored document with this key (NULL: no such document, or not clustered yet)';
"""

# A representative removed from the store leaves its cluster without one in cluster_heads:
# the view then names the oldest member, so every cluster shows a representative.
CLUSTERS_VIEW = """
CREATE VIEW simhash.clusters AS
SELECT m.cluster, coalesce(r.key, f.key) AS representative_key, m.size
FROM (
    SELECT d.cluster, count(*) AS size, min(d.id) AS first_id
    FROM simhash.documents d WHERE d.cluster IS NOT NULL GROUP BY d.cluster
) m
LEFT JOIN simhash.cluster_heads h ON h.cluster = m.cluster
LEFT JOIN simhash.documents r ON r.id = h.representative_id AND r.cluster = m.cluster
JOIN simhash.documents f ON f.id = m.first_id;
COMMENT ON VIEW simhash.clusters IS
  'Every cluster of near-duplicates: its stable id, the key of its representative, and how many documents it holds';
"""


def upgrade() -> None:
    op.add_column(
        "documents",
        sa.Column("cluster", sa.BigInteger(), nullable=True, comment="stable cluster id (NULL: not clustered yet)"),
        schema=SCHEMA,
    )
    op.create_index(op.f("ix_documents_cluster"), "documents", ["cluster"], unique=False, schema=SCHEMA)
    op.create_table(
        "cluster_heads",
        sa.Column("cluster", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("representative_id", sa.BigInteger(), nullable=False, comment="documents.id of the representative"),
        sa.PrimaryKeyConstraint("cluster", name=op.f("pk_cluster_heads")),
        sa.UniqueConstraint("representative_id", name=op.f("uq_cluster_heads_representative_id")),
        schema=SCHEMA,
    )
    op.add_column(
        "store_info",
        sa.Column(
            "cluster_max_distance", sa.Integer(), nullable=True,
            comment="distance (bits) at which new documents join clusters; NULL: the store keeps no clusters",
        ),
        schema=SCHEMA,
    )
    op.add_column(
        "store_info",
        sa.Column("recommended_max_distance", sa.Integer(), nullable=True, comment="k chosen by calibrate --apply"),
        schema=SCHEMA,
    )
    op.execute(CLUSTER_OF)
    op.execute(CLUSTERS_VIEW)


def downgrade() -> None:
    op.execute("DROP VIEW simhash.clusters")
    op.execute("DROP FUNCTION simhash.cluster_of(text)")
    op.drop_column("store_info", "recommended_max_distance", schema=SCHEMA)
    op.drop_column("store_info", "cluster_max_distance", schema=SCHEMA)
    op.drop_table("cluster_heads", schema=SCHEMA)
    op.drop_index(op.f("ix_documents_cluster"), table_name="documents", schema=SCHEMA)
    op.drop_column("documents", "cluster", schema=SCHEMA)
