-- simhash.containment_pairs, version 1 (revision 0009).
-- Every pair of stored documents (id_a < id_b) with segments within max_distance (0 to 3) bits
-- of each other (simhash.segments): how many of a's segments have a near segment in b
-- (matched_a, of segments_a), and how many of b's have one in a (matched_b, of segments_b).
-- matched_a / segments_a is the share of a inside b. Exact, from one statement's snapshot.
CREATE OR REPLACE FUNCTION simhash.containment_pairs(max_distance integer DEFAULT 3)
RETURNS TABLE (id_a bigint, id_b bigint, matched_a integer, segments_a integer, matched_b integer, segments_b integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE
ROWS 1000
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    k integer := containment_pairs.max_distance;
BEGIN
    IF k IS NULL OR k < 0 OR k > 3 THEN
        RAISE EXCEPTION 'max_distance of segments must be between 0 and 3, not %', k USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        WITH links AS (
            SELECT a.document_id AS da, a.segment AS sa, b.document_id AS db, b.segment AS sb
            FROM simhash.segments a JOIN simhash.segments b ON b.block0 = a.block0 AND b.document_id <> a.document_id
            WHERE bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= k
            UNION
            SELECT a.document_id, a.segment, b.document_id, b.segment
            FROM simhash.segments a JOIN simhash.segments b ON b.block1 = a.block1 AND b.document_id <> a.document_id
            WHERE bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= k
            UNION
            SELECT a.document_id, a.segment, b.document_id, b.segment
            FROM simhash.segments a JOIN simhash.segments b ON b.block2 = a.block2 AND b.document_id <> a.document_id
            WHERE bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= k
            UNION
            SELECT a.document_id, a.segment, b.document_id, b.segment
            FROM simhash.segments a JOIN simhash.segments b ON b.block3 = a.block3 AND b.document_id <> a.document_id
            WHERE bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= k
        ),
        pairs AS (
            SELECT l.da, l.db, count(DISTINCT l.sa)::integer AS matched_a, count(DISTINCT l.sb)::integer AS matched_b
            FROM links l WHERE l.da < l.db GROUP BY l.da, l.db
        ),
        sizes AS (
            SELECT s.document_id, count(*)::integer AS segments FROM simhash.segments s
            WHERE s.document_id IN (SELECT da FROM pairs UNION SELECT db FROM pairs)
            GROUP BY s.document_id
        )
        SELECT p.da, p.db, p.matched_a, sa.segments, p.matched_b, sb.segments
        FROM pairs p JOIN sizes sa ON sa.document_id = p.da JOIN sizes sb ON sb.document_id = p.db
        ORDER BY 1, 2;
END
$$;
COMMENT ON FUNCTION simhash.containment_pairs(integer) IS
  'Pairs of stored documents (id_a < id_b) sharing segments within max_distance (0-3) bits: (id_a, id_b, matched_a, segments_a, matched_b, segments_b)';
