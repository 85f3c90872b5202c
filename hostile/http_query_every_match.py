"""POST /query of N random fingerprints at k = 64 (read-only token): every stored document matches
every query. Before the bound, 200 fingerprints over 20,000 documents (a 14 KB request) grew the
service past 2.5 GB. Usage: http_query_every_match.py BASE_URL READ_ONLY_TOKEN N"""

from __future__ import annotations

import json
import random
import sys
import time
import urllib.error
import urllib.request

base, token, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
body = {"fingerprints": [f"{random.getrandbits(64):016x}" for _ in range(count)], "k": 64}
request = urllib.request.Request(
    base + "/query", json.dumps(body).encode(), {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
)
started = time.monotonic()
try:
    with urllib.request.urlopen(request, timeout=300) as answer:
        print(answer.status, len(answer.read()), "bytes in", round(time.monotonic() - started, 1), "s")
except urllib.error.HTTPError as error:
    print(error.code, error.read()[:300], round(time.monotonic() - started, 1), "s")
