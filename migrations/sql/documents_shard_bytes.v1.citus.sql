-- simhash.documents_shard_bytes, version 1, on Citus stores only (created by init --distributed):
-- what near's and near_many's scan/probe switch weighs there.
CREATE OR REPLACE FUNCTION simhash.documents_shard_bytes() RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (citus_relation_size('simhash.documents'::regclass) / greatest(count(*), 1))::bigint
    FROM pg_dist_shard WHERE logicalrelid = 'simhash.documents'::regclass
$$;
COMMENT ON FUNCTION simhash.documents_shard_bytes() IS
  'Average size of one shard of simhash.documents (Citus): what the scan/probe switch of near weighs';
