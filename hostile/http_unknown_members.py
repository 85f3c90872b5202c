"""Members serve --http does not take were ignored: a misspelt option changed the answer silently.

Usage: http_unknown_members.py BASE_URL READ_WRITE_TOKEN. Before the fix: "K": 3 answered at the
default k, "skip_near_duplicate": true stored a near-duplicate, a document's "meta" was dropped.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request

base, token = sys.argv[1], sys.argv[2]
text = "中华人民共和国保护人民的合法权益，维护社会秩序，保障公民的基本权利和自由。"


def post(path: str, body: dict) -> tuple[int, str]:
    request = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()[:300]
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()[:300]


print(post("/query", {"texts": [text], "K": 3}))
print(post("/add", {"documents": [{"key": "hostile-u0", "text": text}], "skip_near_duplicate": True}))
print(post("/add", {"documents": [{"key": "hostile-u1", "text": text, "meta": {"source": "x"}}]}))
