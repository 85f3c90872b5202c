-- simhash.contained, version 2 (revision 0013): version 1's answers, with every distinct
-- fingerprint counted once. Version 1 joined each copy of a repeated segment (a paragraph
-- repeated 2,000 times in a text and in a stored document) with each copy on the other side:
-- time grew with the copies squared. Here the given fingerprints are grouped first, and each
-- (given fingerprint, document, stored fingerprint) is kept once; the copies are added back as
-- counts, so repeated segments cost time in proportion to their number.
-- For the segment fingerprints of one text (simhash.segments, scheme seg-v1), every stored
-- document that has a segment within max_distance (0 to 3) bits of one of them: how many of the
-- given segments have such a near segment in it (matched), of how many (segments), and how many
-- of its own segments are near one of the given (stored_matched), of how many (stored_segments).
-- Exact: within 3 bits, two 64-bit fingerprints agree on one of their four 16-bit blocks.
CREATE OR REPLACE FUNCTION simhash.contained(fingerprints bigint[], max_distance integer DEFAULT 3)
RETURNS TABLE (id bigint, key text, matched integer, segments integer, stored_matched integer, stored_segments integer)
LANGUAGE plpgsql STABLE PARALLEL SAFE
ROWS 10
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    k integer := contained.max_distance;
BEGIN
    IF k IS NULL OR k < 0 OR k > 3 THEN
        RAISE EXCEPTION 'max_distance of segments must be between 0 and 3, not %', k USING ERRCODE = '22023';
    END IF;
    IF fingerprints IS NULL OR cardinality(fingerprints) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
        WITH q AS MATERIALIZED (  -- each distinct given fingerprint once, with its copies
            SELECT u.f, count(*)::integer AS copies,
                   ((u.f >> 48) & 65535)::integer AS b0, ((u.f >> 32) & 65535)::integer AS b1,
                   ((u.f >> 16) & 65535)::integer AS b2, (u.f & 65535)::integer AS b3
            FROM unnest(fingerprints) AS u(f)
            WHERE u.f IS NOT NULL
            GROUP BY u.f
        ),
        hits AS MATERIALIZED (  -- (given fingerprint, document, stored fingerprint), each once
            SELECT q.f AS qf, s.document_id, s.fingerprint AS sf FROM q JOIN simhash.segments s ON s.block0 = q.b0
            WHERE bit_count((s.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.f, s.document_id, s.fingerprint FROM q JOIN simhash.segments s ON s.block1 = q.b1
            WHERE bit_count((s.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.f, s.document_id, s.fingerprint FROM q JOIN simhash.segments s ON s.block2 = q.b2
            WHERE bit_count((s.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.f, s.document_id, s.fingerprint FROM q JOIN simhash.segments s ON s.block3 = q.b3
            WHERE bit_count((s.fingerprint # q.f)::bit(64)) <= k
        ),
        given AS (  -- the given segments near a segment of each document: their copies
            SELECT m.document_id, sum(q.copies)::integer AS matched
            FROM (SELECT DISTINCT h.document_id, h.qf FROM hits h) m JOIN q ON q.f = m.qf
            GROUP BY m.document_id
        ),
        stored AS (  -- each document's segments near a given one: the copies of each stored fingerprint hit
            SELECT s.document_id, count(*)::integer AS stored_matched
            FROM (SELECT DISTINCT h.document_id, h.sf FROM hits h) m
            JOIN simhash.segments s ON s.document_id = m.document_id AND s.fingerprint = m.sf
            GROUP BY s.document_id
        ),
        sizes AS (
            SELECT s.document_id, count(*)::integer AS stored_segments FROM simhash.segments s
            WHERE s.document_id IN (SELECT g.document_id FROM given g)
            GROUP BY s.document_id
        )
        SELECT d.id, d.key, g.matched, (SELECT sum(q.copies)::integer FROM q), st.stored_matched, z.stored_segments
        FROM given g JOIN stored st ON st.document_id = g.document_id JOIN sizes z ON z.document_id = g.document_id
        JOIN simhash.documents d ON d.id = g.document_id
        ORDER BY g.matched DESC, d.id;
END
$$;
COMMENT ON FUNCTION simhash.contained(bigint[], integer) IS
  'Stored documents sharing segments within max_distance (0-3) bits with the given segment fingerprints: (id, key, matched, segments, stored_matched, stored_segments)';
