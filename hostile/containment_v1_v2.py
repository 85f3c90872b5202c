"""Differential check: simhash.contained / containment_pairs (v2, revision 0013) against version 1 loaded
beside them (schema h13r_v1), on documents whose segments repeat (> 8 copies: v2's grouped path) and lie
within a few bits of one another. Run as a superuser against a scratch store database."""

import random
import sys

import psycopg

url = sys.argv[1]
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 13)
with psycopg.connect(url, autocommit=True) as c:
    c.execute("DELETE FROM simhash.documents WHERE key LIKE 'cx%'")
    base = [random.getrandbits(64) - (1 << 63) for _ in range(12)]
    for d in range(60):
        (doc_id,) = c.execute(
            "INSERT INTO simhash.documents (key, fingerprint) VALUES (%s, 1) RETURNING id", (f"cx{d}",)
        ).fetchone()
        segs = []
        for _ in range(random.randint(1, 30)):
            f = random.choice(base)
            for _ in range(random.choice([0, 0, 1, 2, 3, 4])):
                f ^= 1 << random.randrange(63)
            segs += [f] * random.choice([1, 1, 2, 9, 12])
        with c.cursor().copy("COPY simhash.segments (document_id, segment, fingerprint) FROM STDIN") as cp:
            for i, f in enumerate(segs):
                cp.write_row((doc_id, i, f))
    bad = 0
    for k in range(4):
        q = "SELECT array_agg(x::text ORDER BY x::text) FROM {}.containment_pairs(%s) x"
        a = c.execute(q.format("simhash"), (k,)).fetchone()[0]
        b = c.execute(q.format("h13r_v1"), (k,)).fetchone()[0]
        bad += a != b
        for _ in range(10):
            given = [
                random.choice(base) ^ (1 << random.randrange(63)) for _ in range(random.randint(1, 5))
            ] * random.randint(1, 12)
            q = "SELECT array_agg(x::text ORDER BY x::text) FROM {}.contained(%s::bigint[], %s) x"
            a = c.execute(q.format("simhash"), (given, k)).fetchone()[0]
            b = c.execute(q.format("h13r_v1"), (given, k)).fetchone()[0]
            bad += a != b
    c.execute("DELETE FROM simhash.documents WHERE key LIKE 'cx%'")
    print("differences:", bad)
