# WARC responses whose HTTP Content-Encoding cannot be undone (br without brotli, zstd, a damaged
# or stacked gzip): counted as binary pages, exit 0, before the fix. Writes enc.warc; then
# `simhash-store --db URL add enc.warc`. mkwarc2-like damaged and cut gzip bodies: see tests/test_html.py.
import gzip
import random
import zlib

t = "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验及实际情况，制定本法。"
page = (
    "<html><head><meta charset=utf-8><title>t</title></head><body><article><p>"
    + t * 5
    + "</p><p>"
    + t[::-1] * 3
    + "</p></article></body></html>"
).encode()


def rec(uri, http_headers, body):
    http = ("HTTP/1.1 200 OK\r\n" + "".join(f"{k}: {v}\r\n" for k, v in http_headers) + "\r\n").encode() + body
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Record-ID: <urn:uuid:{abs(hash(uri))}>\r\n"
        f"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n"
    ).encode()
    return head + http + b"\r\n\r\n"


out = b""
out += rec("http://a/plain", [("Content-Type", "text/html")], page)
out += rec(
    "http://a/br",
    [("Content-Type", "text/html"), ("Content-Encoding", "br")],
    bytes(random.getrandbits(8) for _ in range(600)),
)
out += rec(
    "http://a/zstd",
    [("Content-Type", "text/html"), ("Content-Encoding", "zstd")],
    b"\x28\xb5\x2f\xfd" + bytes(random.getrandbits(8) for _ in range(600)),
)
out += rec(
    "http://a/gzbad",
    [("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
    gzip.compress(page)[:40] + b"garbage" * 20,
)
out += rec(
    "http://a/gzgz",
    [("Content-Type", "text/html"), ("Content-Encoding", "gzip, deflate")],
    zlib.compress(gzip.compress(page)),
)
out += rec("http://a/identity", [("Content-Type", "text/html"), ("Content-Encoding", "identity")], page)
out += rec("http://a/gzip-upper", [("Content-Type", "text/html"), ("Content-Encoding", "GZIP")], gzip.compress(page))
out += rec(
    "http://a/chunked-gz",
    [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")],
    (lambda b: f"{len(b):x}\r\n".encode() + b + b"\r\n0\r\n\r\n")(gzip.compress(page)),
)
out += rec(
    "http://a/chunked-upper",
    [("Content-Type", "text/html"), ("Transfer-Encoding", "Chunked")],
    (lambda b: f"{len(b):x}\r\n".encode() + b + b"\r\n0\r\n\r\n")(page),
)
open("enc.warc", "wb").write(out)
