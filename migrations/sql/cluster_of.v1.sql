-- simhash.cluster_of, version 1: revision 0005's text.
CREATE OR REPLACE FUNCTION simhash.cluster_of(key text) RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT d.cluster FROM simhash.documents d WHERE d.key OPERATOR(pg_catalog.=) cluster_of.key $$;
COMMENT ON FUNCTION simhash.cluster_of(text) IS
  'The stable cluster id of the stored document with this key (NULL: no such document, or not clustered yet)';
