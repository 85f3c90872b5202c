-- simhash.near_many for a store of layout wide3, version 2: near_many.wide3.v1.sql labelled PARALLEL
-- UNSAFE, from revision 0015 on (it sets enable_seqscan when it scans, refused in parallel mode).
-- What follows is the earlier version's text.
-- simhash.near for a batch of fingerprints in one statement: probes of the three block indexes
-- of 21, 21 and 22 bits up to max_distance 17, a scan beyond (whatever the method).
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

    IF k <= 17 THEN
        -- The radii of simhash.near (wide3): blocks of 21, 21 and 22 bits, -1 not probed.
        radii := (ARRAY[-1, -1, 0,  -1, 0, 0,  0, 0, 0,  0, 0, 1,  0, 1, 1,  1, 1, 1,
                        1, 1, 2,  1, 2, 2,  2, 2, 2,  2, 2, 3,  2, 3, 3,  3, 3, 3,
                        3, 3, 4,  3, 4, 4,  4, 4, 4,  4, 4, 5,  4, 5, 5,  5, 5, 5])[k * 3 + 1 : k * 3 + 3];
        probes := (ARRAY[1, 2, 3, 25, 46, 67, 298, 508, 718, 2258, 3588, 4918,
                         12233, 18218, 24203, 50537, 70886, 91235])[k + 1];
    END IF;

    IF k > 17 THEN
        chosen := 'scan';  -- radii past 5 bits: simhash.wide_masks holds none
    ELSIF method = 'auto' AND probes <= 3 THEN
        chosen := 'probe';  -- at most three exact lookups: always cheaper than a scan
    -- A probe (an index descent) costs about as much as scanning 20 rows, an index entry 3.
    ELSIF method = 'auto' AND 3 * probes < 2097152
          AND pg_relation_size('simhash.documents'::regclass) / current_setting('block_size')::integer
              >= 20.0 * probes / (1 - 3.0 * probes / 2097152) THEN
        chosen := 'probe';
    ELSIF method = 'auto' THEN
        SELECT CASE WHEN c.reltuples > 0 AND c.relpages > 0 THEN c.reltuples / c.relpages ELSE 80 END
               * (pg_relation_size(c.oid) / current_setting('block_size')::integer)
        INTO estimated_rows FROM pg_class c WHERE c.oid = 'simhash.documents'::regclass;
        chosen := CASE WHEN probes * (3.0 * estimated_rows / 2097152 + 20) > estimated_rows THEN 'scan' ELSE 'probe' END;
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
    -- joined to the block's expression index: index-only scans in a nested loop, keys read
    -- for matches only.
    RETURN QUERY
        WITH q AS MATERIALIZED (
            SELECT u.n::integer AS i, u.f,
                   ((u.f >> 43) & 2097151)::integer AS b0, ((u.f >> 22) & 2097151)::integer AS b1,
                   (u.f & 4194303)::integer AS b2
            FROM unnest(fingerprints) WITH ORDINALITY AS u(f, n)
            WHERE u.f IS NOT NULL
        ),
        hits AS (
            SELECT q.i, c.id, bit_count((c.fingerprint # q.f)::bit(64))::integer AS distance
            FROM q JOIN simhash.wide_masks m ON m.weight <= radii[1] AND m.mask < 2097152
            JOIN simhash.documents c ON ((c.fingerprint >> 43) & 2097151)::integer = q.b0 # m.mask
            WHERE bit_count((c.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.i, c.id, bit_count((c.fingerprint # q.f)::bit(64))::integer
            FROM q JOIN simhash.wide_masks m ON m.weight <= radii[2] AND m.mask < 2097152
            JOIN simhash.documents c ON ((c.fingerprint >> 22) & 2097151)::integer = q.b1 # m.mask
            WHERE bit_count((c.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.i, c.id, bit_count((c.fingerprint # q.f)::bit(64))::integer
            FROM q JOIN simhash.wide_masks m ON m.weight <= radii[3]
            JOIN simhash.documents c ON (c.fingerprint & 4194303)::integer = q.b2 # m.mask
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
