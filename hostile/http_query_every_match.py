"""POST /query of N random fingerprints at k = 64 (read-only token): every stored document matches
every query. Before the bound, 200 fingerprints over 20,000 documents (a 14 KB request) grew the
service past 2.5 GB. Usage: http_query_every_match.py N, with R set to the read-only token below."""

import json, urllib.request, time, random

R = "ZgVgOZKWZ7z8zns9rVv5Z0Nl-vS1BLbB"
body = {"fingerprints": ["%016x" % random.getrandbits(64) for _ in range(int(__import__("sys").argv[1]))], "k": 64}
r = urllib.request.Request(
    "http://127.0.0.1:18613/query",
    data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + R, "Content-Type": "application/json"},
)
t = time.time()
try:
    with urllib.request.urlopen(r, timeout=300) as f:
        data = f.read()
        print(f.status, len(data), "bytes in", round(time.time() - t, 1), "s")
except urllib.error.HTTPError as e:
    print(e.code, e.read()[:300], round(time.time() - t, 1))
