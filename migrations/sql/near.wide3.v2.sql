-- simhash.near for a store of layout wide3, version 2: near.wide3.v1.sql labelled PARALLEL UNSAFE,
-- from revision 0015 on (it sets enable_seqscan when it scans, refused in parallel mode).
-- What follows is the earlier version's text.
-- Every stored document within max_distance bits of a fingerprint, nearest first, exact:
-- probes of three block indexes of 21, 21 and 22 bits (expression indexes on the fingerprint,
-- generalised pigeonhole), or a scan when cheaper. Radii go up to 5 bits a block, so it
-- probes up to max_distance 17 and scans beyond (whatever the method).
CREATE OR REPLACE FUNCTION simhash.near(fingerprint bigint, max_distance integer DEFAULT 11, method text DEFAULT 'auto',
                             max_results integer DEFAULT NULL)
RETURNS SETOF simhash.match
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
ROWS 10
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
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
    found bigint[];
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
    IF wanted IS NOT NULL AND wanted < 1 THEN
        RAISE EXCEPTION 'max_results must be at least 1 (or NULL for all), not %', wanted USING ERRCODE = '22023';
    END IF;

    -- Without max_results, one stage at max_distance; with it, radii 3, 7, 11, ... until a
    -- stage holds max_results matches (then they are the nearest), or max_distance.
    stage := CASE WHEN wanted IS NULL THEN k ELSE least(k, 3) END;
    LOOP
        IF stage <= 17 THEN
            -- Radii of blocks 21, 21 and 22 bits wide (-1: not probed), the fewest probes with
            -- (r1 + 1) + (r2 + 1) + (r3 + 1) = stage + 1: two fingerprints within stage bits are
            -- within r bits on at least one block.
            radii := (ARRAY[-1, -1, 0,  -1, 0, 0,  0, 0, 0,  0, 0, 1,  0, 1, 1,  1, 1, 1,
                            1, 1, 2,  1, 2, 2,  2, 2, 2,  2, 2, 3,  2, 3, 3,  3, 3, 3,
                            3, 3, 4,  3, 4, 4,  4, 4, 4,  4, 4, 5,  4, 5, 5,  5, 5, 5])[stage * 3 + 1 : stage * 3 + 3];
            probes := (ARRAY[1, 2, 3, 25, 46, 67, 298, 508, 718, 2258, 3588, 4918,
                             12233, 18218, 24203, 50537, 70886, 91235])[stage + 1];
        END IF;

        IF stage > 17 THEN
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
                SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
                FROM simhash.documents d
                WHERE bit_count((d.fingerprint # query)::bit(64)) <= k
                ORDER BY 4, 1
                LIMIT wanted;
            RETURN;
        END IF;
        -- The probes of each block: its value, with every mask of at most its radius flipped.
        SELECT coalesce(array_agg(((query >> 43) & 2097151)::integer # m.mask)
                        FILTER (WHERE m.weight <= radii[1] AND m.mask < 2097152), '{}'),
               coalesce(array_agg(((query >> 22) & 2097151)::integer # m.mask)
                        FILTER (WHERE m.weight <= radii[2] AND m.mask < 2097152), '{}'),
               coalesce(array_agg((query & 4194303)::integer # m.mask) FILTER (WHERE m.weight <= radii[3]), '{}')
        INTO probes0, probes1, probes2
        FROM simhash.wide_masks m WHERE m.weight <= greatest(radii[1], radii[2], radii[3]);
        -- Each branch is an index-only scan of one expression index (INCLUDE fingerprint, id).
        IF wanted IS NULL THEN
            RETURN QUERY
                WITH hits AS (
                    SELECT c.id FROM simhash.documents c
                    WHERE ((c.fingerprint >> 43) & 2097151)::integer = ANY (probes0)
                      AND bit_count((c.fingerprint # query)::bit(64)) <= k
                    UNION
                    SELECT c.id FROM simhash.documents c
                    WHERE ((c.fingerprint >> 22) & 2097151)::integer = ANY (probes1)
                      AND bit_count((c.fingerprint # query)::bit(64)) <= k
                    UNION
                    SELECT c.id FROM simhash.documents c
                    WHERE (c.fingerprint & 4194303)::integer = ANY (probes2)
                      AND bit_count((c.fingerprint # query)::bit(64)) <= k
                )
                SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
                FROM hits JOIN simhash.documents d ON d.id = hits.id
                ORDER BY 4, 1;
            RETURN;
        END IF;
        -- Keys are read for the matches kept only.
        SELECT array_agg(h.id ORDER BY h.distance, h.id) INTO found
        FROM (
            SELECT u.id, bit_count((u.fingerprint # query)::bit(64)) AS distance
            FROM (
                SELECT c.id, c.fingerprint FROM simhash.documents c
                WHERE ((c.fingerprint >> 43) & 2097151)::integer = ANY (probes0)
                  AND bit_count((c.fingerprint # query)::bit(64)) <= stage
                UNION
                SELECT c.id, c.fingerprint FROM simhash.documents c
                WHERE ((c.fingerprint >> 22) & 2097151)::integer = ANY (probes1)
                  AND bit_count((c.fingerprint # query)::bit(64)) <= stage
                UNION
                SELECT c.id, c.fingerprint FROM simhash.documents c
                WHERE (c.fingerprint & 4194303)::integer = ANY (probes2)
                  AND bit_count((c.fingerprint # query)::bit(64)) <= stage
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
