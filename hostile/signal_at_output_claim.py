"""SIGTERM or SIGINT to `query --jsonl - -o OUT` right as OUT is claimed: before the fix, about one
run in twelve hung at exit (workers forked, their manager thread not started).
Usage: python hostile/signal_at_output_claim.py SIGTERM|SIGINT DELAY WORKDIR  (SIMHASH_STORE_URL set)"""

import json
import os
import signal
import subprocess
import sys
import time

how, delay, work = getattr(signal, sys.argv[1]), float(sys.argv[2]), sys.argv[3]
out = os.path.join(work, "qq.jsonl")
for _ in range(12):
    before = set(os.listdir(work))
    p = subprocess.Popen(
        [sys.executable, "-m", "simhash_store.cli", "query", "--jsonl", "-", "-o", out],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    p.stdin.write(json.dumps({"key": "a", "text": "alpha beta gamma delta epsilon"}) + "\n")
    p.stdin.flush()
    while not any(n.endswith(".partial") for n in set(os.listdir(work)) - before):
        time.sleep(0.02)
    time.sleep(delay)
    p.send_signal(how)
    try:
        _, err = p.communicate(timeout=60)
        print(p.returncode, repr(err[-200:]), sorted(set(os.listdir(work)) - before))
    except subprocess.TimeoutExpired:
        print("HUNG", p.pid)
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
