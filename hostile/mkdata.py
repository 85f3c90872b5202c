"""Records for the hostile pass: near-duplicate groups, and pages repeating one paragraph more than 8 times."""

import json
import random
import sys

random.seed(13)
words = [f"w{i}" for i in range(3000)]
out = open(sys.argv[1], "w")
for g in range(20):
    base = [random.choice(words) for _ in range(120)]
    for v in range(3):
        t = list(base)
        for _ in range(v * 2):
            t[random.randrange(len(t))] = random.choice(words)
        out.write(json.dumps({"id": f"g{g}v{v}", "text": " ".join(t)}) + "\n")
para = " ".join(random.choice(words) for _ in range(60))
out.write(json.dumps({"id": "rep1", "text": "\n\n".join([para] * 12)}) + "\n")
out.write(json.dumps({"id": "rep2", "text": "\n\n".join([para] * 10 + ["other " * 50])}) + "\n")
