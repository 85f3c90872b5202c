"""A wide3 store's simhash.near / near_many against brute force (run on an empty store made by
`simhash-store --db URL init --layout wide3`): 200 base points with 40 neighbours each at 0-20
bits and 20,000 random rows; queries within 4 bits of a base, k from 0 to 20, every method,
with and without max_results. Usage: python hostile/wide3_exact.py URL"""

import random
import sys

import psycopg

random.seed(7)
conn = psycopg.connect(sys.argv[1], autocommit=True)
MASK = (1 << 64) - 1


def s64(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def flip(f, n):
    for bit in random.sample(range(64), n):
        f ^= 1 << bit
    return f


def dist(a, b):
    return bin((a ^ b) & MASK).count("1")


rows, bases = [], []
for b in range(200):
    f = random.getrandbits(64)
    bases.append(f)
    rows += [(f"b{b}-{j}", s64(flip(f, random.randint(0, 20)))) for j in range(40)]
rows += [(f"r{i}", s64(random.getrandbits(64))) for i in range(20000)]
with conn.cursor() as c:
    with c.copy("COPY simhash.documents (key, fingerprint) FROM STDIN") as cp:
        for r in rows:
            cp.write_row(r)
    c.execute("VACUUM ANALYZE simhash.documents")
    ids = dict(c.execute("SELECT key, id FROM simhash.documents").fetchall())
    fps = [(ids[key], fp) for key, fp in rows]

    def brute(g, k, mr):
        w = sorted((dist(fp, g), i) for i, fp in fps if dist(fp, g) <= k)
        return [(i, d) for d, i in (w[:mr] if mr else w)]

    bad = checked = 0
    for q in range(40):
        g = s64(flip(bases[q], random.randint(0, 4)))
        for k in (0, 1, 2, 3, 5, 7, 11, 13, 17, 18, 20):
            for method in ("auto", "probe", "scan"):
                for mr in (None, 3):
                    got = c.execute(
                        "SELECT id, distance FROM simhash.near(%s, %s, %s, %s)", (g, k, method, mr)
                    ).fetchall()
                    checked += 1
                    if got != brute(g, k, mr):
                        bad += 1
                        print("MISMATCH near", q, k, method, mr, len(got), len(brute(g, k, mr)))
    qs = [s64(flip(bases[q], 2)) for q in range(40, 80)]
    for k in (0, 3, 7, 11, 17, 19):
        for method in ("auto", "probe", "scan"):
            for mr in (None, 2):
                got = c.execute(
                    "SELECT query_index, id, distance FROM simhash.near_many(%s, %s, %s, %s)", (qs, k, method, mr)
                ).fetchall()
                want = [(qi, i, d) for qi, g in enumerate(qs, 1) for i, d in brute(g, k, mr)]
                checked += 1
                if got != want:
                    bad += 1
                    print("MISMATCH near_many", k, method, mr, len(got), len(want))
    print("checked", checked, "mismatches", bad)
