"""Many /add requests at once over the same keys in opposite orders (and with --skip-near-duplicates):
every answer must be 200 and each key stored once. Usage: python hostile/http_concurrent_same_keys.py URL TOKEN"""

import json
import random
import sys
import threading
import urllib.error
import urllib.request

url, token = sys.argv[1], sys.argv[2]
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()
statuses: list[tuple[int, str]] = []


def post(documents, skip):
    body = json.dumps({"documents": documents, "skip_near_duplicates": skip, "k": 3}).encode()
    request = urllib.request.Request(url.rstrip("/") + "/add", data=body, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            statuses.append((answer.status, answer.read().decode()[:200]))
    except urllib.error.HTTPError as exc:
        statuses.append((exc.code, exc.read().decode()[:300]))


def documents(seed):
    rng = random.Random(seed)
    keys = [f"cc{i:03d}" for i in range(200)]
    if seed % 2:
        keys.reverse()
    return [{"key": k, "text": " ".join(rng.choice(words) for _ in range(60))} for k in keys]


threads = [threading.Thread(target=post, args=(documents(s), s % 3 == 0)) for s in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sorted({s for s, _ in statuses}), [b for s, b in statuses if s != 200][:3])
