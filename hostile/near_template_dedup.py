"""Hostile input: N records of one short template (50 words), each with five words of its own:
distinct fingerprints, most within 11 bits of one another. JSONL to argv[2].

    python hostile/near_template_dedup.py 10000 /tmp/t.jsonl
    simhash-store dedup /tmp/t.jsonl -o /tmp/out.jsonl --db URL   # into an empty store
"""

import json
import random
import sys

n = int(sys.argv[1])
rng = random.Random(7)
base = " ".join(f"w{rng.randrange(100000)}" for _ in range(50))
with open(sys.argv[2], "w") as out:
    for i in range(n):
        own = " ".join(f"u{i}x{j}" for j in range(5))
        out.write(json.dumps({"key": f"r{i}", "text": f"{base} {own}"}) + "\n")
