"""Initial store: documents with generated 16-bit blocks, scheme record, block masks, distance() and near()

Revision ID: 0001
Revises:
Create Date: 2026-11-21

"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: Union[str, Sequence[str], None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

SCHEMA = "simhash"

# Number of 16-bit masks with at most r bits set, r = 0..16 (sums of binomial coefficients).
PROBES_PER_BLOCK = [1, 17, 137, 697, 2517, 6885, 14893, 26333, 39203, 50643, 58651, 63019, 64839, 65399, 65519, 65535, 65536]

DISTANCE = """
CREATE FUNCTION simhash.distance(a bigint, b bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT bit_count((a # b)::bit(64))::integer $$;
COMMENT ON FUNCTION simhash.distance(bigint, bigint) IS
  'Hamming distance between two 64-bit SimHash fingerprints stored as bigint';
"""

MATCH_TYPE = """
CREATE TYPE simhash.match AS (id bigint, key text, fingerprint bigint, distance integer);
"""

# Exact radius search. Pigeonhole: if two fingerprints differ in at most k bits, one of
# their four 16-bit blocks differs in at most k/4 bits. So probe each block index with
# every value within k/4 bits of the query's block, keep candidates whose full distance
# is at most k, and fall back to a scan when the probes would read more than a scan.
# For k < 4 the probes are the query's own four blocks: built without any SQL, and
# always cheaper than a scan.
# plan_cache_mode: the generic plan of each statement is costed above the custom ones
# (it cannot see that a probe array holds 1 value, not 10), so PostgreSQL would plan the
# four-way probe afresh on every call: about 150 us of a 250 us query. The generic plan
# is the same plan, so keep it.
# The default max distance is the project's (simhash_store.scheme.DEFAULT_MAX_DISTANCE when
# this revision was written, chosen by benchmarks/quality.py). It is written out, not
# imported: a revision must create the same function whatever the code says later.
NEAR = """
CREATE FUNCTION simhash.near(fingerprint bigint, max_distance integer DEFAULT 11, method text DEFAULT 'auto')
RETURNS SETOF simhash.match
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    query bigint := near.fingerprint;
    k integer := near.max_distance;
    radius integer;
    estimated_rows double precision;
    probes integer;
    probes0 integer[];
    probes1 integer[];
    probes2 integer[];
    probes3 integer[];
BEGIN
    IF query IS NULL THEN
        RETURN;
    END IF;
    IF k IS NULL OR k < 0 OR k > 64 THEN
        RAISE EXCEPTION 'max_distance must be between 0 and 64, not %', k USING ERRCODE = '22023';
    END IF;
    IF method IS NULL OR method NOT IN ('auto', 'probe', 'scan') THEN
        RAISE EXCEPTION 'method must be auto, probe or scan, not %', method USING ERRCODE = '22023';
    END IF;
    radius := least(k / 4, 16);
    IF method = 'auto' AND radius = 0 THEN
        method := 'probe';
    ELSIF method = 'auto' THEN
        -- About 100 bytes a row; the file size is always current, unlike reltuples.
        estimated_rows := pg_relation_size('simhash.documents'::regclass) / 100.0;
        probes := (ARRAY[{probes}])[radius + 1];
        method := CASE WHEN 4.0 * probes * (3.0 * estimated_rows / 65536 + 2) > estimated_rows
                       THEN 'scan' ELSE 'probe' END;
    END IF;
    IF method = 'scan' THEN
        RETURN QUERY
            SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
            FROM simhash.documents d
            WHERE bit_count((d.fingerprint # query)::bit(64)) <= k
            ORDER BY 4, 1;
        RETURN;
    END IF;
    IF radius = 0 THEN
        probes0 := ARRAY[((query >> 48) & 65535)::integer];
        probes1 := ARRAY[((query >> 32) & 65535)::integer];
        probes2 := ARRAY[((query >> 16) & 65535)::integer];
        probes3 := ARRAY[(query & 65535)::integer];
    ELSE
        SELECT array_agg(((query >> 48) & 65535)::integer # m.mask), array_agg(((query >> 32) & 65535)::integer # m.mask),
               array_agg(((query >> 16) & 65535)::integer # m.mask), array_agg((query & 65535)::integer # m.mask)
        INTO probes0, probes1, probes2, probes3
        FROM simhash.block_masks m WHERE m.weight <= radius;
    END IF;
    -- Each branch is an index-only scan (the block indexes INCLUDE fingerprint and id).
    RETURN QUERY
        WITH hits AS (
            SELECT c.id FROM simhash.documents c
            WHERE c.block0 = ANY (probes0) AND bit_count((c.fingerprint # query)::bit(64)) <= k
            UNION
            SELECT c.id FROM simhash.documents c
            WHERE c.block1 = ANY (probes1) AND bit_count((c.fingerprint # query)::bit(64)) <= k
            UNION
            SELECT c.id FROM simhash.documents c
            WHERE c.block2 = ANY (probes2) AND bit_count((c.fingerprint # query)::bit(64)) <= k
            UNION
            SELECT c.id FROM simhash.documents c
            WHERE c.block3 = ANY (probes3) AND bit_count((c.fingerprint # query)::bit(64)) <= k
        )
        SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
        FROM hits JOIN simhash.documents d ON d.id = hits.id
        ORDER BY 4, 1;
END
$$;
COMMENT ON FUNCTION simhash.near(bigint, integer, text) IS
  'Every stored document within max_distance bits of a fingerprint, nearest first (exact)';
""".replace("{probes}", ", ".join(map(str, PROBES_PER_BLOCK)))


def upgrade() -> None:
    op.create_table(
        "documents",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.BigInteger(), nullable=False, comment="unsigned 64-bit SimHash as two's complement"),
        sa.Column("block0", sa.Integer(), sa.Computed("((fingerprint >> 48) & 65535)::integer", persisted=True), nullable=False, comment="bits 63..48"),
        sa.Column("block1", sa.Integer(), sa.Computed("((fingerprint >> 32) & 65535)::integer", persisted=True), nullable=False, comment="bits 47..32"),
        sa.Column("block2", sa.Integer(), sa.Computed("((fingerprint >> 16) & 65535)::integer", persisted=True), nullable=False, comment="bits 31..16"),
        sa.Column("block3", sa.Integer(), sa.Computed("((fingerprint >> 0) & 65535)::integer", persisted=True), nullable=False, comment="bits 15..0"),
        sa.Column("digest", sa.LargeBinary(), nullable=True, comment="content digest, for change detection"),
        sa.Column("stamp", sa.Text(), nullable=True, comment="size:mtime_ns of the file read, to skip unchanged files"),
        sa.Column("length", sa.Integer(), nullable=True, comment="characters of decoded text"),
        sa.Column("metadata", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("added_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_documents")),
        sa.UniqueConstraint("key", name=op.f("uq_documents_key")),
        schema=SCHEMA,
    )
    for n in range(4):
        op.create_index(
            op.f(f"ix_documents_block{n}"), "documents", [f"block{n}"],
            unique=False, schema=SCHEMA, postgresql_include=["fingerprint", "id"],
        )
    op.create_table(
        "store_info",
        sa.Column("singleton", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("scheme_name", sa.Text(), nullable=False),
        sa.Column("scheme", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("singleton", name=op.f("ck_store_info_one_row")),
        sa.PrimaryKeyConstraint("singleton", name=op.f("pk_store_info")),
        schema=SCHEMA,
    )
    op.create_table(
        "block_masks",
        sa.Column("mask", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("weight", sa.SmallInteger(), nullable=False),
        sa.PrimaryKeyConstraint("mask", name=op.f("pk_block_masks")),
        schema=SCHEMA,
    )
    op.create_index(
        op.f("ix_block_masks_weight"), "block_masks", ["weight"],
        unique=False, schema=SCHEMA, postgresql_include=["mask"],
    )
    op.execute(
        "INSERT INTO simhash.block_masks (mask, weight) "
        "SELECT m, bit_count(m::bit(16)) FROM generate_series(0, 65535) AS m"
    )
    op.execute(DISTANCE)
    op.execute(MATCH_TYPE)
    op.execute(NEAR)


def downgrade() -> None:
    op.execute("DROP FUNCTION simhash.near(bigint, integer, text)")
    op.execute("DROP TYPE simhash.match")
    op.execute("DROP FUNCTION simhash.distance(bigint, bigint)")
    op.drop_index(op.f("ix_block_masks_weight"), table_name="block_masks", schema=SCHEMA)
    op.drop_table("block_masks", schema=SCHEMA)
    op.drop_table("store_info", schema=SCHEMA)
    for n in range(4):
        op.drop_index(op.f(f"ix_documents_block{n}"), table_name="documents", schema=SCHEMA)
    op.drop_table("documents", schema=SCHEMA)
