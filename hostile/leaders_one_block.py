"""Fingerprints > k apart that all share one 16-bit block: every one lands in one pigeonhole bucket."""

import sys
import time

import numpy as np

from simhash_store import clusters

n = int(sys.argv[1])
k = int(sys.argv[2]) if len(sys.argv) > 2 else 11
rng = np.random.default_rng(1)
values = rng.integers(0, 1 << 48, size=n, dtype=np.uint64)  # top 16 bits all zero
start = time.perf_counter()
reps = clusters.leaders(values, k)
print(n, "values", len(np.unique(reps)), "representatives", f"{time.perf_counter() - start:.1f} s")
