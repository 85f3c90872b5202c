"""Hostile pass 8: a reader in pg_read_all_stats (pg_monitor) polls pg_stat_activity for SCRAM verifiers
sent by other sessions (ALTER ROLE ... PASSWORD of serve --listen and grant-read --password)."""

import site
import sys
import time

site.addsitedir("/work/wt-hostile8-roles/.venv/lib/python3.11/site-packages")
import psycopg  # noqa: E402 - after the venv is on the path (run by another OS user with the system Python)

url, seconds = sys.argv[1], float(sys.argv[2])
seen = set()
polls = 0
with psycopg.connect(url, autocommit=True) as connection:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        polls += 1
        for (query,) in connection.execute(
            "SELECT query FROM pg_catalog.pg_stat_activity WHERE pid <> pg_catalog.pg_backend_pid() "
            "AND query LIKE '%SCRAM-SHA-256$%'"
        ):
            if query not in seen:
                seen.add(query)
                print("caught:", query[:120], flush=True)
print("polls:", polls, "caught:", len(seen), flush=True)
