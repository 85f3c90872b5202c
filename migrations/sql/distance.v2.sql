-- simhash.distance, version 2: revision 0002's text (an SQL-standard body, so it stays inlinable).
CREATE OR REPLACE FUNCTION simhash.distance(a bigint, b bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.bit_count((a OPERATOR(pg_catalog.#) b)::bit(64))::integer;
COMMENT ON FUNCTION simhash.distance(bigint, bigint) IS
  'Hamming distance between two 64-bit SimHash fingerprints stored as bigint';
