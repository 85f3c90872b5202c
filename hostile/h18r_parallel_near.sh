#!/bin/sh
# simhash.near and near_many are declared PARALLEL SAFE but their scan path calls set_config
# (parallel unsafe): in any query that runs in parallel mode they fail with
# "parameter "enable_seqscan" cannot be set during a parallel operation".
# 1. the database's owner sets force_parallel_mode for every session: the store owner's `query` of a
#    small store (the scan path) ends in a traceback;
# 2. any application's LATERAL join of near over a table large enough for a parallel scan fails.
O=postgresql://h18r_owner@127.0.0.1:5432/h18r_db
psql -h 127.0.0.1 -U h18r_dbowner h18r_db -qc "ALTER DATABASE h18r_db SET force_parallel_mode = on"
simhash-store --db $O query examples/query/library-repost.txt 2>&1 | tail -4
psql -h 127.0.0.1 -U h18r_dbowner h18r_db -qc "ALTER DATABASE h18r_db RESET ALL"
psql -h 127.0.0.1 -U root h18r_db -qc "CREATE SCHEMA IF NOT EXISTS h18r_app; DROP TABLE IF EXISTS h18r_app.crawl; CREATE TABLE h18r_app.crawl AS SELECT g AS id, (random()*9e18)::bigint AS fp FROM generate_series(1,400000) g; ANALYZE h18r_app.crawl" \
  -c "SELECT count(*) FROM h18r_app.crawl c CROSS JOIN LATERAL simhash.near(c.fp, 20) n WHERE c.id % 1000 = 0"
