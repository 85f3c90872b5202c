-- simhash.near, version 4: version 3 (near.v3.sql) labelled PARALLEL UNSAFE, from revision 0015 on.
-- Version 3 was labelled PARALLEL SAFE but sets enable_seqscan when it scans, which PostgreSQL
-- refuses in parallel mode: a statement that ran it beside a parallel scan failed.
-- What follows is the earlier version's text.
-- Every stored document within max_distance bits of a fingerprint, nearest first, exact:
-- probes of the four 16-bit block indexes (generalised pigeonhole), or a scan when cheaper.
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
    probes3 integer[];
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

    IF wanted IS NULL AND k = 3 AND method <> 'scan' THEN
        RETURN QUERY
            WITH hits AS (
                SELECT c.id FROM simhash.documents c
                WHERE c.block0 = ((query >> 48) & 65535)::integer AND bit_count((c.fingerprint # query)::bit(64)) <= k
                UNION
                SELECT c.id FROM simhash.documents c
                WHERE c.block1 = ((query >> 32) & 65535)::integer AND bit_count((c.fingerprint # query)::bit(64)) <= k
                UNION
                SELECT c.id FROM simhash.documents c
                WHERE c.block2 = ((query >> 16) & 65535)::integer AND bit_count((c.fingerprint # query)::bit(64)) <= k
                UNION
                SELECT c.id FROM simhash.documents c
                WHERE c.block3 = (query & 65535)::integer AND bit_count((c.fingerprint # query)::bit(64)) <= k
            )
            SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
            FROM hits JOIN simhash.documents d ON d.id = hits.id
            ORDER BY 4, 1;
        RETURN;
    END IF;
    -- Without max_results, one stage at max_distance; with it, radii 3, 7, 11, ... until a
    -- stage holds max_results matches (then they are the nearest), or max_distance.
    stage := CASE WHEN wanted IS NULL THEN k ELSE least(k, 3) END;
    LOOP

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
        IF wanted IS NULL THEN
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
            RETURN;
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
