"""Requests of 16 MiB bodies of many small JSON values ({"texts": [{}, {}, ...]}) to serve --http:
each is parsed whole before its members are checked, about 30 bytes of memory a body byte, and
up to 100 requests are answered at once. Measures the service's resident memory (VmHWM) around
N concurrent such requests, with the read-only token.

Run: python hostile/http_many_small_values.py URL TOKEN SERVICE_PID [N]
"""

import sys
import threading
import urllib.request

url, token, pid = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 1
body = b'{"texts": [' + b",".join([b"{}"] * ((16 << 20) // 3 - 10)) + b"]}"


def rss() -> str:
    with open(f"/proc/{pid}/status") as status:
        return " ".join(line.split(None, 1)[1].strip() for line in status if line.startswith(("VmRSS", "VmHWM")))


def one() -> None:
    request = urllib.request.Request(
        url + "/fingerprint", body, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            print(answer.status, answer.read()[:200])
    except urllib.error.HTTPError as exc:
        print(exc.code, exc.read()[:200])


print("body", len(body), "before", rss())
threads = [threading.Thread(target=one) for _ in range(n)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("after (RSS, peak)", rss())
