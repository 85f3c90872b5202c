-- simhash.near_many, version 2: version 1 (near_many.v1.sql) labelled PARALLEL UNSAFE, from revision
-- 0015 on (it sets enable_seqscan when it scans, which PostgreSQL refuses in parallel mode).
-- What follows is the earlier version's text.
-- simhash.near for a batch of fingerprints in one statement.
CREATE OR REPLACE FUNCTION simhash.near_many(fingerprints bigint[], max_distance integer DEFAULT 11, method text DEFAULT 'auto',
                                  max_results integer DEFAULT NULL)
RETURNS TABLE (query_index integer, id bigint, key text, fingerprint bigint, distance integer)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
ROWS 1000
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
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

    IF k IS NULL OR k < 0 OR k > 64 THEN
        RAISE EXCEPTION 'max_distance must be between 0 and 64, not %', k USING ERRCODE = '22023';
    END IF;
    IF method IS NULL OR method NOT IN ('auto', 'probe', 'scan') THEN
        RAISE EXCEPTION 'method must be auto, probe or scan, not %', method USING ERRCODE = '22023';
    END IF;
    IF wanted IS NOT NULL AND wanted < 1 THEN
        RAISE EXCEPTION 'max_results must be at least 1 (or NULL for all), not %', wanted USING ERRCODE = '22023';
    END IF;

    stage := k;

        radii := (ARRAY[0, -1, -1, -1, 0, 0, -1, -1, 0, 0, 0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 2, 1, 1, 1, 2, 2, 1, 1, 2, 2, 2, 1, 2, 2, 2, 2, 3, 2, 2, 2, 3, 3, 2, 2, 3, 3, 3, 2, 3, 3, 3, 3, 4, 3, 3, 3, 4, 4, 3, 3, 4, 4, 4, 3, 4, 4, 4, 4, 5, 4, 4, 4, 5, 5, 4, 4, 5, 5, 5, 4, 5, 5, 5, 5, 6, 5, 5, 5, 6, 6, 5, 5, 6, 6, 6, 5, 6, 6, 6, 6, 16, 3, 3, 3, 16, 4, 3, 3, 16, 4, 4, 3, 16, 4, 4, 4, 16, 5, 4, 4, 16, 5, 5, 4, 16, 5, 5, 5, 16, 6, 5, 5, 16, 6, 6, 5, 16, 6, 6, 6, 16, 7, 6, 6, 16, 16, 2, 2, 16, 16, 3, 2, 16, 16, 3, 3, 16, 16, 4, 3, 16, 16, 4, 4, 16, 16, 5, 4, 16, 16, 5, 5, 16, 16, 6, 5, 16, 16, 6, 6, 16, 16, 7, 6, 16, 16, 7, 7, 16, 16, 8, 7, 16, 16, 16, 0, 16, 16, 16, 1, 16, 16, 16, 2, 16, 16, 16, 3, 16, 16, 16, 4, 16, 16, 16, 5, 16, 16, 16, 6, 16, 16, 16, 7, 16, 16, 16, 8, 16, 16, 16, 9, 16, 16, 16, 10, 16, 16, 16, 11, 16, 16, 16, 12, 16, 16, 16, 13])[stage * 4 + 1 : stage * 4 + 4];
        probes := (ARRAY[1, 2, 3, 4, 20, 36, 52, 68, 188, 308, 428, 548, 1108, 1668, 2228, 2788, 4608, 6428, 8248, 10068, 14436, 18804, 23172, 27540, 35548, 43556, 51564, 59572, 67627, 69447, 71267, 73087, 77455, 81823, 86191, 94199, 102207, 110215, 121655, 131346, 131906, 132466, 134286, 136106, 140474, 144842, 152850, 160858, 172298, 183738, 196608, 196609, 196625, 196745, 197305, 199125, 203493, 211501, 222941, 235811, 247251, 255259, 259627, 261447, 262007])[stage + 1];


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
