-- simhash.containment_pairs, version 2 (revision 0013): version 1's answers, without its cost
-- on repeated segments. Version 1 joined each copy of a repeated segment with each copy in the
-- other document: time grew with the copies squared. Where some document repeats a fingerprint
-- more than 8 times, each document's segments are grouped by fingerprint first, the links are
-- between those groups, and the copies are added back as counts; elsewhere version 1's statement.
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
    -- A fingerprint repeated more than 8 times in one document: its copies grouped first (each
    -- link between two groups once). Otherwise version 1's statement, which the planner serves
    -- from the table's statistics (about half the time of the grouped one where nothing repeats).
    IF EXISTS (SELECT FROM simhash.segments s GROUP BY s.document_id, s.fingerprint HAVING count(*) > 8) THEN
        RETURN QUERY
            WITH g AS MATERIALIZED (  -- each document's distinct segment fingerprints, with their copies
                SELECT s.document_id, s.fingerprint, count(*)::integer AS copies,
                       min(s.block0) AS block0, min(s.block1) AS block1, min(s.block2) AS block2, min(s.block3) AS block3
                FROM simhash.segments s GROUP BY s.document_id, s.fingerprint
            ),
            links AS (  -- a before b: each pair once; each side's copies carried along
                SELECT a.document_id AS da, a.fingerprint AS fa, a.copies AS ca,
                       b.document_id AS db, b.fingerprint AS fb, b.copies AS cb
                FROM g a JOIN g b ON b.block0 = a.block0 AND b.document_id > a.document_id
                WHERE bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= k
                UNION
                SELECT a.document_id, a.fingerprint, a.copies, b.document_id, b.fingerprint, b.copies
                FROM g a JOIN g b ON b.block1 = a.block1 AND b.document_id > a.document_id
                WHERE bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= k
                UNION
                SELECT a.document_id, a.fingerprint, a.copies, b.document_id, b.fingerprint, b.copies
                FROM g a JOIN g b ON b.block2 = a.block2 AND b.document_id > a.document_id
                WHERE bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= k
                UNION
                SELECT a.document_id, a.fingerprint, a.copies, b.document_id, b.fingerprint, b.copies
                FROM g a JOIN g b ON b.block3 = a.block3 AND b.document_id > a.document_id
                WHERE bit_count((a.fingerprint # b.fingerprint)::bit(64)) <= k
            ),
            pairs AS (  -- each side's segments near one in the other: the copies of each distinct fingerprint linked
                SELECT x.da, x.db, x.matched_a, y.matched_b
                FROM (SELECT m.da, m.db, sum(m.ca)::integer AS matched_a
                      FROM (SELECT DISTINCT l.da, l.db, l.fa, l.ca FROM links l) m GROUP BY m.da, m.db) x
                JOIN (SELECT m.da, m.db, sum(m.cb)::integer AS matched_b
                      FROM (SELECT DISTINCT l.da, l.db, l.fb, l.cb FROM links l) m GROUP BY m.da, m.db) y
                  ON y.da = x.da AND y.db = x.db
            ),
            sizes AS (
                SELECT s.document_id, count(*)::integer AS segments FROM simhash.segments s
                WHERE s.document_id IN (SELECT da FROM pairs UNION SELECT db FROM pairs)
                GROUP BY s.document_id
            )
            SELECT p.da, p.db, p.matched_a, sa.segments, p.matched_b, sb.segments
            FROM pairs p JOIN sizes sa ON sa.document_id = p.da JOIN sizes sb ON sb.document_id = p.db
            ORDER BY 1, 2;
        RETURN;
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
