"""/add with a good document and one whose key holds a lone surrogate: before the fix the good one
was stored and the answer was a 500. Usage: python hostile/http_surrogate_key.py URL TOKEN"""

import json
import sys
import urllib.error
import urllib.request

url, token = sys.argv[1], sys.argv[2]
body = {
    "documents": [
        {"key": "h11-good", "text": "The quick brown fox jumps over the lazy dog."},
        {"key": "h11-bad\ud800", "text": "The quick brown fox"},
    ]
}
request = urllib.request.Request(
    url.rstrip("/") + "/add", data=json.dumps(body).encode(), headers={"Authorization": f"Bearer {token}"}
)
try:
    with urllib.request.urlopen(request, timeout=30) as answer:
        print(answer.status, answer.read().decode())
except urllib.error.HTTPError as exc:
    print(exc.code, exc.read().decode())
