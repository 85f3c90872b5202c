-- simhash.contained, version 1 (revision 0009).
-- For the segment fingerprints of one text (simhash.segments, scheme seg-v1), every stored
-- document that has a segment within max_distance (0 to 3) bits of one of them: how many of the
-- given segments have such a near segment in it (matched), of how many (segments), and how many
-- of its own segments are near one of the given (stored_matched), of how many (stored_segments).
-- matched / segments is the share of the text inside the document; stored_matched /
-- stored_segments the share of the document inside the text. Exact: within 3 bits, two 64-bit
-- fingerprints agree on one of their four 16-bit blocks, so each block index is probed once.
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
        WITH q AS MATERIALIZED (
            SELECT u.n::integer AS i, u.f,
                   ((u.f >> 48) & 65535)::integer AS b0, ((u.f >> 32) & 65535)::integer AS b1,
                   ((u.f >> 16) & 65535)::integer AS b2, (u.f & 65535)::integer AS b3
            FROM unnest(fingerprints) WITH ORDINALITY AS u(f, n)
            WHERE u.f IS NOT NULL
        ),
        hits AS (
            SELECT q.i, s.document_id, s.segment FROM q JOIN simhash.segments s ON s.block0 = q.b0
            WHERE bit_count((s.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.i, s.document_id, s.segment FROM q JOIN simhash.segments s ON s.block1 = q.b1
            WHERE bit_count((s.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.i, s.document_id, s.segment FROM q JOIN simhash.segments s ON s.block2 = q.b2
            WHERE bit_count((s.fingerprint # q.f)::bit(64)) <= k
            UNION
            SELECT q.i, s.document_id, s.segment FROM q JOIN simhash.segments s ON s.block3 = q.b3
            WHERE bit_count((s.fingerprint # q.f)::bit(64)) <= k
        ),
        per_document AS (
            SELECT h.document_id, count(DISTINCT h.i)::integer AS matched,
                   count(DISTINCT h.segment)::integer AS stored_matched
            FROM hits h GROUP BY h.document_id
        )
        SELECT d.id, d.key, p.matched, (SELECT count(*)::integer FROM q), p.stored_matched,
               (SELECT count(*)::integer FROM simhash.segments s WHERE s.document_id = d.id)
        FROM per_document p JOIN simhash.documents d ON d.id = p.document_id
        ORDER BY p.matched DESC, d.id;
END
$$;
COMMENT ON FUNCTION simhash.contained(bigint[], integer) IS
  'Stored documents sharing segments within max_distance (0-3) bits with the given segment fingerprints: (id, key, matched, segments, stored_matched, stored_segments)';
