-- simhash.to_hex, version 1 (revision 0008). to_hex(bigint) of pg_catalog prints a negative bigint
-- in two's complement already: only the padding to 16 digits is added.
CREATE OR REPLACE FUNCTION simhash.to_hex(fingerprint bigint) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.lpad(pg_catalog.to_hex(fingerprint), 16, '0');
COMMENT ON FUNCTION simhash.to_hex(bigint) IS
  'A stored fingerprint as simhash-store prints it: the unsigned 64-bit value in 16 lower-case hex digits';
