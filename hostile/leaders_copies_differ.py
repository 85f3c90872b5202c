"""A copy of a non-representative whose nearest representative arrived after its first copy.

k = 2: 0 represents; 0b11 joins it (2 bits); 0b111 is 3 bits from 0, so it represents; a second
0b11 is 1 bit from 0b111 and 2 from 0. The definition (and ``leaders``, used by ``recluster``,
and ``sequential_leaders``) puts it with 0b111; ``leaders_with_copies`` (``dedup``'s decisions
in memory: ``dedup --ray``, ``dedup_dataset``) with 0, where its first copy went. Open.
"""

import numpy as np

from simhash_store.clusters import leaders, leaders_with_copies
from simhash_store.leaders import sequential_leaders

values = np.array([0, 0b11, 0b111, 0b11], dtype=np.uint64)
print("leaders", leaders(values, 2).tolist())  # [0, 0, 2, 2]
print("sequential_leaders", sequential_leaders(values, 2).tolist())  # [0, 0, 2, 2]
print("leaders_with_copies", leaders_with_copies(values, 2).tolist())  # [0, 0, 2, 0]
