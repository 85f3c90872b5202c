"""sequential_leaders against a brute force: 1,500 random cases near one template, copies, exact-match
layouts forced, k 0-21, batches and levels of 1-9 (held: 0 mismatches). Also prints the copies case."""

import random

import numpy as np

from simhash_store import leaders as L
from simhash_store import pairs as ps
from simhash_store.clusters import leaders, leaders_with_copies


def brute(values, k):
    reps = []
    out = []
    for i, v in enumerate(values):
        best = None
        for r in reps:
            d = bin(v ^ values[r]).count("1")
            if d <= k and (best is None or (d, r) < best):
                best = (d, r)
        if best is None:
            reps.append(i)
            out.append(i)
        else:
            out.append(best[1])
    return out


# crafted case: copies
k = 2
vals = [0, 0b11, 0b111, 0b11]
print(
    "brute",
    brute(vals, k),
    "leaders",
    leaders(np.array(vals, dtype=np.uint64), k).tolist(),
    "lwc",
    leaders_with_copies(np.array(vals, dtype=np.uint64), k).tolist(),
    "seq",
    L.sequential_leaders(np.array(vals, dtype=np.uint64), k).tolist(),
)
rng = random.Random(1)
orig = ps._layout
bad = 0
for _trial in range(1500):
    k = rng.choice([0, 1, 2, 3, 4, 5, 6, 8, 11, 13, 17, 21])
    base = rng.getrandbits(64)
    n = rng.randint(1, 80)
    vals = []
    for _ in range(n):
        if vals and rng.random() < 0.2:
            vals.append(rng.choice(vals))
            continue
        v = base
        for _ in range(rng.randint(0, k + 2)):
            v ^= 1 << rng.randrange(64)
        if rng.random() < 0.1:
            v = rng.getrandbits(64)
        vals.append(v)
    forced = rng.choice([None, "exact"])
    if forced:
        best, _ = ps._cheapest_exact(n, k)
        if best is None:
            forced = None
        else:
            ps._layout = lambda c, m, b=best: b
    try:
        got = L.sequential_leaders(
            np.array(vals, dtype=np.uint64), k, batch=rng.randint(1, 9), recent=rng.randint(1, 9)
        ).tolist()
    finally:
        ps._layout = orig
    exp = brute(vals, k)
    if got != exp:
        bad += 1
        if bad < 5:
            print("MISMATCH", k, forced, vals, got, exp)
print("bad", bad)
