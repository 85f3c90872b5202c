-- simhash.from_hex, version 1 (revision 0008).
CREATE OR REPLACE FUNCTION simhash.from_hex(hex text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    digits text := hex;
BEGIN
    IF left(digits, 2) IN ('0x', '0X') THEN
        digits := substr(digits, 3);
    END IF;
    -- No spaces, signs or other digits: a fingerprint that is not one is an error, not a guess.
    IF digits !~ '^[0-9A-Fa-f]{1,16}$' THEN
        -- Quoted as a JSON string: a newline or other control character in the input stays visible
        -- and the message stays one line.
        RAISE EXCEPTION 'invalid fingerprint %: expected 1 to 16 hex digits, optionally after 0x', to_json(left(hex, 40))
            USING ERRCODE = '22P02';
    END IF;
    -- 64 bits in two's complement: the unsigned value as a signed bigint, as the store keeps it.
    RETURN ('x' || lpad(digits, 16, '0'))::bit(64)::bigint;
END
$$;
COMMENT ON FUNCTION simhash.from_hex(text) IS
  'A fingerprint in hex (1 to 16 digits, optional 0x, any case) as the bigint the store keeps (two''s complement)';
