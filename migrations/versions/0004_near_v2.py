"""simhash.near v2 (generalised pigeonhole, max_results inside, ROWS, table size from reltuples) and simhash.near_many

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

* **Generalised pigeonhole** (Qin, Wang, Xiao et al., TKDE 2019): with four 16-bit blocks,
  if d(x, y) <= k then some block i has d_i <= t_i for any integer thresholds with
  t_0 + t_1 + t_2 + t_3 >= k - 3 (t_i = -1: block i is not probed). The function uses, for
  every k, the thresholds with the fewest index probes (``THRESHOLDS`` below): k = 8 probes
  (2,1,1,1), 188 values instead of 548; k = 10 (2,2,2,1), 428; k = 0 probes one block only.
  The thresholds are fixed per k, not chosen per query from bucket fullness: counting the
  buckets a query would probe costs as much as probing them.
* **max_results**, applied inside the function, nearest first. The search runs in stages
  of increasing radius (3, 7, 11, ... then max_distance) and stops at the first stage that
  finds max_results matches: those are then the nearest within max_distance, so
  ``near(fp, 16, max_results => 10)`` never builds the answer at 16 bits when 11 bits
  already hold ten matches.
* ``ROWS 10`` (``near``) and ``ROWS 1000`` (``near_many``) instead of the default 1,000
  rows per call, for the plans of statements that join on them.
* The scan/probe switch estimates the rows from ``reltuples / relpages`` times the table's
  current pages (the planner's own estimate), not file size / 100 bytes.
* **simhash.near_many(fingerprints bigint[], max_distance, method, max_results)** returns
  (query_index, id, key, fingerprint, distance): one set-based statement for a batch, the
  probes of every query joined to the block indexes, instead of one ``near`` call per query.
* Both keep 0003's pinned search_path and planner settings, and run without JIT: the generic
  plan of the batch statement is costed in the millions (it cannot know that a radius
  selects one mask), and compiling it took 500 ms of a 570 ms call.

``near`` gains a fourth parameter, so its old three-parameter version is dropped and the
new one created (PostgreSQL cannot tell two versions with defaults apart); calls with
one to three arguments work as before. Grants on the old function are copied to the new
one and to ``near_many``. A view of another application that depends on
``simhash.near(bigint, integer, text)`` stops the upgrade with PostgreSQL's dependency error.
"""

from math import comb
from pathlib import Path
from typing import Sequence, Union

from alembic import op
from sqlalchemy import text

revision: str = "0004"
down_revision: Union[str, Sequence[str], None] = "0003"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

BLOCKS = 4
# Values within r bits of a 16-bit block (r = -1: none, the block is not probed).
PROBES = {r: sum(comb(16, j) for j in range(r + 1)) for r in range(-1, 17)}


def cheapest_thresholds() -> list[tuple[int, int, int, int]]:
    """For k = 0..64: per-block radii, largest first, with sum >= k - 3 and the fewest probes."""
    from itertools import combinations_with_replacement

    candidates = [
        (sum(PROBES[r] for r in radii), tuple(sorted(radii, reverse=True)))
        for radii in combinations_with_replacement(range(-1, 17), BLOCKS)
    ]
    return [min(c for c in candidates if sum(c[1]) >= k - BLOCKS + 1)[1] for k in range(65)]


PINNED = """SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off"""

# Shared by both functions (declared there: k, wanted, method, radii, probes, estimated_rows).
# Validation, then the thresholds of radius `stage`, then the method for them.
VALIDATE = """
    IF k IS NULL OR k < 0 OR k > 64 THEN
        RAISE EXCEPTION 'max_distance must be between 0 and 64, not %', k USING ERRCODE = '22023';
    END IF;
    IF method IS NULL OR method NOT IN ('auto', 'probe', 'scan') THEN
        RAISE EXCEPTION 'method must be auto, probe or scan, not %', method USING ERRCODE = '22023';
    END IF;
    IF wanted IS NOT NULL AND wanted < 1 THEN
        RAISE EXCEPTION 'max_results must be at least 1 (or NULL for all), not %', wanted USING ERRCODE = '22023';
    END IF;
"""

THRESHOLDS = """
        radii := (ARRAY[{radii}])[stage * 4 + 1 : stage * 4 + 4];
        probes := (ARRAY[{probes}])[stage + 1];
"""

# Probing costs a B-tree descent and about 3 times the work of a scanned row for each
# entry read: P * (3 * rows / 65536 + 2) against rows for a scan, so probing wins from
# rows >= 2P / (1 - 3P / 65536). A scan reads every page, so a table with at least that
# many pages is probed whatever its rows (no catalog lookup: a file size is a simple
# expression, a pg_class row a query); else rows = reltuples / relpages * current pages
# (the planner's own estimate, current even right after a load), or 80 rows a page for a
# table never vacuumed.
CHOOSE = """
        IF method = 'auto' AND probes <= 4 THEN
            chosen := 'probe';  -- at most four exact lookups: always cheaper than a scan
        ELSIF method = 'auto' AND 3 * probes < 65536
              AND pg_relation_size('simhash.documents'::regclass) / current_setting('block_size')::integer
                  >= 2.0 * probes / (1 - 3.0 * probes / 65536) THEN
            chosen := 'probe';
        ELSIF method = 'auto' THEN
            SELECT CASE WHEN c.reltuples > 0 AND c.relpages > 0 THEN c.reltuples / c.relpages ELSE 80 END
                   * (pg_relation_size(c.oid) / current_setting('block_size')::integer)
            INTO estimated_rows FROM pg_class c WHERE c.oid = 'simhash.documents'::regclass;
            chosen := CASE WHEN probes * (3.0 * estimated_rows / 65536 + 2) > estimated_rows THEN 'scan' ELSE 'probe' END;
        ELSE
            chosen := method;
        END IF;
"""


def _literals() -> tuple[str, str]:
    table = cheapest_thresholds()
    radii = ", ".join(str(r) for thresholds in table for r in thresholds)
    probes = ", ".join(str(sum(PROBES[r] for r in thresholds)) for thresholds in table)
    return radii, probes


def _shared(snippet: str) -> str:
    radii, probes = _literals()
    return snippet.replace("{radii}", radii).replace("{probes}", probes)


NEAR = """
CREATE FUNCTION simhash.near(fingerprint bigint, max_distance integer DEFAULT 11, method text DEFAULT 'auto',
                             max_results integer DEFAULT NULL)
RETURNS SETOF simhash.match
LANGUAGE plpgsql STABLE PARALLEL SAFE
ROWS 10
{pinned}
AS $$
DECLARE
    query bigint := near.fingerprint;
    k integer := near.max_distance;
    wanted integer := near.max_results;
    stage integer;
    radii integer[];
    probes integer;
    chosen text;
    estimated_rows double precision;
    probes0 integer[];
    probes1 integer[];
    probes2 integer[];
    probes3 integer[];
    found bigint[];
BEGIN
    IF query IS NULL THEN
        RETURN;
    END IF;
{validate}
    -- Without max_results, one stage at max_distance; with it, radii 3, 7, 11, ... until a
    -- stage holds max_results matches (then they are the nearest), or max_distance.
    stage := CASE WHEN wanted IS NULL THEN k ELSE least(k, 3) END;
    LOOP
{thresholds}
{choose}
        IF chosen = 'scan' THEN
            PERFORM set_config('enable_seqscan', 'on', true);  -- until the call returns
            RETURN QUERY
                SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
                FROM simhash.documents d
                WHERE bit_count((d.fingerprint # query)::bit(64)) <= k
                ORDER BY 4, 1
                LIMIT wanted;
            RETURN;
        END IF;
        IF greatest(radii[1], radii[2], radii[3], radii[4]) <= 0 THEN
            probes0 := CASE WHEN radii[1] = 0 THEN ARRAY[((query >> 48) & 65535)::integer] ELSE '{}' END;
            probes1 := CASE WHEN radii[2] = 0 THEN ARRAY[((query >> 32) & 65535)::integer] ELSE '{}' END;
            probes2 := CASE WHEN radii[3] = 0 THEN ARRAY[((query >> 16) & 65535)::integer] ELSE '{}' END;
            probes3 := CASE WHEN radii[4] = 0 THEN ARRAY[(query & 65535)::integer] ELSE '{}' END;
        ELSE
            SELECT coalesce(array_agg(((query >> 48) & 65535)::integer # m.mask) FILTER (WHERE m.weight <= radii[1]), '{}'),
                   coalesce(array_agg(((query >> 32) & 65535)::integer # m.mask) FILTER (WHERE m.weight <= radii[2]), '{}'),
                   coalesce(array_agg(((query >> 16) & 65535)::integer # m.mask) FILTER (WHERE m.weight <= radii[3]), '{}'),
                   coalesce(array_agg((query & 65535)::integer # m.mask) FILTER (WHERE m.weight <= radii[4]), '{}')
            INTO probes0, probes1, probes2, probes3
            FROM simhash.block_masks m WHERE m.weight <= greatest(radii[1], radii[2], radii[3], radii[4]);
        END IF;
        -- Each branch is an index-only scan (the block indexes INCLUDE fingerprint and id);
        -- keys are read for the matches kept only.
        SELECT array_agg(h.id ORDER BY h.distance, h.id) INTO found
        FROM (
            SELECT u.id, bit_count((u.fingerprint # query)::bit(64)) AS distance
            FROM (
                SELECT c.id, c.fingerprint FROM simhash.documents c
                WHERE c.block0 = ANY (probes0) AND bit_count((c.fingerprint # query)::bit(64)) <= stage
                UNION
                SELECT c.id, c.fingerprint FROM simhash.documents c
                WHERE c.block1 = ANY (probes1) AND bit_count((c.fingerprint # query)::bit(64)) <= stage
                UNION
                SELECT c.id, c.fingerprint FROM simhash.documents c
                WHERE c.block2 = ANY (probes2) AND bit_count((c.fingerprint # query)::bit(64)) <= stage
                UNION
                SELECT c.id, c.fingerprint FROM simhash.documents c
                WHERE c.block3 = ANY (probes3) AND bit_count((c.fingerprint # query)::bit(64)) <= stage
            ) u
            ORDER BY 2, 1
            LIMIT wanted
        ) h;
        IF stage = k OR cardinality(found) >= wanted THEN
            RETURN QUERY
                SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
                FROM unnest(found) WITH ORDINALITY AS f(id, position)
                JOIN simhash.documents d ON d.id = f.id
                ORDER BY f.position;
            RETURN;
        END IF;
        stage := least(k, stage + 4);
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash.near(bigint, integer, text, integer) IS
  'Stored documents within max_distance bits of a fingerprint, nearest first (exact); at most max_results of them';
"""

NEAR_MANY = """
CREATE FUNCTION simhash.near_many(fingerprints bigint[], max_distance integer DEFAULT 11, method text DEFAULT 'auto',
                                  max_results integer DEFAULT NULL)
RETURNS TABLE (query_index integer, id bigint, key text, fingerprint bigint, distance integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE
ROWS 1000
{pinned}
AS $$
DECLARE
    k integer := near_many.max_distance;
    wanted integer := near_many.max_results;
    stage integer;
    radii integer[];
    probes integer;
    chosen text;
    estimated_rows double precision;
BEGIN
    IF fingerprints IS NULL OR cardinality(fingerprints) = 0 THEN
        RETURN;
    END IF;
{validate}
    stage := k;
{thresholds}
{choose}
    IF chosen = 'scan' THEN
        PERFORM set_config('enable_seqscan', 'on', true);  -- until the call returns
        RETURN QUERY
            SELECT r.i, r.id, r.key, r.fingerprint, r.distance
            FROM (
                SELECT q.n::integer AS i, d.id, d.key, d.fingerprint,
                       bit_count((d.fingerprint # q.f)::bit(64))::integer AS distance,
                       row_number() OVER (PARTITION BY q.n ORDER BY bit_count((d.fingerprint # q.f)::bit(64)), d.id) AS rank
                FROM unnest(fingerprints) WITH ORDINALITY AS q(f, n)
                JOIN simhash.documents d ON bit_count((d.fingerprint # q.f)::bit(64)) <= k
            ) r
            WHERE wanted IS NULL OR r.rank <= wanted
            ORDER BY 1, 5, 2;
        RETURN;
    END IF;
    -- Every query's probes (block value # mask, for the masks within that block's radius)
    -- joined to the block index: index-only scans in a nested loop, keys read for matches only.
    RETURN QUERY
        WITH q AS MATERIALIZED (
            SELECT u.n::integer AS i, u.f,
                   ((u.f >> 48) & 65535)::integer AS b0, ((u.f >> 32) & 65535)::integer AS b1,
                   ((u.f >> 16) & 65535)::integer AS b2, (u.f & 65535)::integer AS b3
            FROM unnest(fingerprints) WITH ORDINALITY AS u(f, n)
            WHERE u.f IS NOT NULL
        ),
        hits AS (
            SELECT q.i, c.id, bit_count((c.fingerprint # q.f)::bit(64))::integer AS distance
            FROM q JOIN simhash.block_masks m ON m.weight <= radii[1]
            JOIN simhash.documents c ON c.block0 = q.b0 # m.mask
            WHERE bit_count((c.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.i, c.id, bit_count((c.fingerprint # q.f)::bit(64))::integer
            FROM q JOIN simhash.block_masks m ON m.weight <= radii[2]
            JOIN simhash.documents c ON c.block1 = q.b1 # m.mask
            WHERE bit_count((c.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.i, c.id, bit_count((c.fingerprint # q.f)::bit(64))::integer
            FROM q JOIN simhash.block_masks m ON m.weight <= radii[3]
            JOIN simhash.documents c ON c.block2 = q.b2 # m.mask
            WHERE bit_count((c.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.i, c.id, bit_count((c.fingerprint # q.f)::bit(64))::integer
            FROM q JOIN simhash.block_masks m ON m.weight <= radii[4]
            JOIN simhash.documents c ON c.block3 = q.b3 # m.mask
            WHERE bit_count((c.fingerprint # q.f)::bit(64)) <= k
        ),
        ranked AS (
            SELECT h.i, h.id, h.distance, row_number() OVER (PARTITION BY h.i ORDER BY h.distance, h.id) AS rank
            FROM hits h
        )
        SELECT r.i, d.id, d.key, d.fingerprint, r.distance
        FROM ranked r JOIN simhash.documents d ON d.id = r.id
        WHERE wanted IS NULL OR r.rank <= wanted
        ORDER BY r.i, r.distance, r.id;
END
$$;
COMMENT ON FUNCTION simhash.near_many(bigint[], integer, text, integer) IS
  'simhash.near for many fingerprints in one statement: (query_index, id, key, fingerprint, distance), query_index from 1';
"""

NEW_NEAR = "simhash.near(bigint, integer, text, integer)"
OLD_NEAR = "simhash.near(bigint, integer, text)"
NEW_NEAR_MANY = "simhash.near_many(bigint[], integer, text, integer)"


def function_text(template: str) -> str:
    parts = {"{pinned}": PINNED, "{validate}": VALIDATE, "{thresholds}": _shared(THRESHOLDS), "{choose}": CHOOSE}
    for placeholder, value in parts.items():
        template = template.replace(placeholder, value)
    return template


def _revision(name: str):
    """An earlier revision's module, for its frozen text."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"simhash_store_revision_{name[:4]}", Path(__file__).with_name(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _grants_of(function: str) -> list[str] | None:
    """Who may execute ``function`` (role names, "PUBLIC"), or None for PostgreSQL's default (everyone)."""
    rows = op.get_bind().execute(
        text(
            "SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END "
            "FROM pg_catalog.pg_proc p CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a "
            "LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee "
            "WHERE p.oid = CAST(:function AS regprocedure) AND a.privilege_type = 'EXECUTE'"
        ),
        {"function": function},
    ).scalars().all()
    has_acl = op.get_bind().execute(
        text("SELECT proacl IS NOT NULL FROM pg_catalog.pg_proc WHERE oid = CAST(:function AS regprocedure)"),
        {"function": function},
    ).scalar()
    return rows if has_acl else None


def _grant(functions: list[str], grantees: list[str] | None) -> None:
    if grantees is None:
        return
    for function in functions:
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        for grantee in grantees:
            op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {grantee}")


def upgrade() -> None:
    grantees = _grants_of(OLD_NEAR)
    op.execute(f"DROP FUNCTION {OLD_NEAR}")
    op.execute(function_text(NEAR))
    op.execute(function_text(NEAR_MANY))
    _grant([NEW_NEAR, NEW_NEAR_MANY], grantees)


def downgrade() -> None:
    grantees = _grants_of(NEW_NEAR)
    op.execute(f"DROP FUNCTION {NEW_NEAR_MANY}")
    op.execute(f"DROP FUNCTION {NEW_NEAR}")
    op.execute(_revision("0003_near_plans_without_statistics.py").near().replace("CREATE OR REPLACE", "CREATE", 1))
    _grant([OLD_NEAR], grantees)
