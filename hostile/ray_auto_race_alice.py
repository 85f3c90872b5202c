"""Run as the victim: what `dedup --ray auto` does before ray.init, many times: resolve the
address from the victim's own address file (a cluster of theirs that stopped left it), refuse
it if another user listens on its port, then connect (simhash_store.ray_data). Counts the runs
that passed the check and then connected (to whoever listened at that moment).

    RAY_TMPDIR=DIR python3 ray_auto_race_alice.py RUNS
"""

import sys

from simhash_store.errors import InputError
from simhash_store.ray_data import _check_reachable, resolved_address

passed = refused_by_check = refused_by_connect = 0
for _ in range(int(sys.argv[1])):
    try:
        address = resolved_address("auto")
    except InputError:
        refused_by_check += 1
        continue
    try:
        _check_reachable(address)
    except InputError:
        refused_by_connect += 1
        continue
    passed += 1
print(
    f"passed the check and connected: {passed}; refused by the check: {refused_by_check}; nothing listening: {refused_by_connect}"
)
