"""Cost of a temporary staging table made afresh in each write (ON COMMIT DROP) against one kept for the
session (ON COMMIT DELETE ROWS): one-document adds through one Store, the two alternating."""

import statistics
import time

from simhash_store.store import NewDocument, Store, writes

DB = "h19r_db3"
KEEP = "ON COMMIT DELETE ROWS"
DROP = "ON COMMIT DROP"
original = writes._stage


def staged_with(clause: str, switch: list[bool]):
    def stage(cursor, documents):
        if switch:  # the first (untimed) add after a switch: a kept table of the other variant dropped
            switch.clear()
            cursor.execute("DROP TABLE IF EXISTS pg_temp.simhash_incoming")
        cursor.execute(
            "CREATE TEMP TABLE IF NOT EXISTS pg_temp.simhash_incoming "
            "(key pg_catalog.text, fingerprint bigint, digest pg_catalog.bytea, length integer, metadata pg_catalog.jsonb, "
            f"stamp pg_catalog.text, keep_value pg_catalog.jsonb, position bigserial) {clause}"
        )
        writes.copy_documents(cursor, "pg_temp.simhash_incoming", documents)

    return stage


results = {KEEP: [], DROP: []}
with Store(f"postgresql://h19r_owner@127.0.0.1:5432/{DB}") as store:
    store.add([NewDocument("warm", 1)])
    for round_ in range(8):
        for clause in (KEEP, DROP) if round_ % 2 == 0 else (DROP, KEEP):
            writes._stage = staged_with(clause, [True])
            store.add([NewDocument(f"switch{round_}{clause}", round_)])
            start = time.perf_counter()
            for i in range(200):
                store.add([NewDocument(f"{clause[10:12]}{round_}-{i}-{time.time()}", i * 7919 + round_)])
            results[clause].append((time.perf_counter() - start) / 200 * 1000)
for clause, values in results.items():
    print(
        f"{clause}: median {statistics.median(values):.2f} ms a one-document add, rounds {[f'{v:.2f}' for v in values]}"
    )
