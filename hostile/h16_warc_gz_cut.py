"""A .warc.gz gzipped per record, cut inside its last gzip member (a download cut short): warcio
ended quietly there, the records of that member lost, exit 0 (argv: OUT.warc.gz)."""

import gzip
import sys

body = (
    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body><p>"
    + "上海的新闻今天很好。" * 30
    + "</p></body></html>"
).encode()


def record(uri: str) -> bytes:
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body + b"\r\n\r\n"


first, second = gzip.compress(record("http://y/1")), gzip.compress(record("http://y/2"))
with open(sys.argv[1], "wb") as out:
    out.write(first + second[: len(second) // 2])
print("now: simhash-store add", sys.argv[1], "(before the fix: added 1, failed 0, exit 0)")
