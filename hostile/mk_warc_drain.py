# ruff: noqa
"""A .warc.gz whose records are gzip members that inflate ~1000:1 (zeros), in record types that are
not pages (metadata), or HTML responses over the page bound: everything is decompressed to skip it."""

import gzip, sys, zlib

kind, mb_out, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
size = mb_out << 20


def member(header: bytes, body_len: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [c.compress(header)]
    chunk = b"\0" * (1 << 20) if kind != "html" else b"<p>" + b"a" * ((1 << 20) - 3)
    left = body_len
    while left:
        n = min(left, len(chunk))
        parts.append(c.compress(chunk[:n]))
        left -= n
    parts.append(c.compress(b"\r\n\r\n"))
    parts.append(c.flush())
    return b"".join(parts)


if kind == "meta":
    head = (
        b"WARC/1.0\r\nWARC-Type: metadata\r\nWARC-Record-ID: <urn:uuid:1>\r\nWARC-Target-URI: http://x/\r\n"
        b"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % size
    )
    data = member(head, size)
else:
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    head = (
        b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:1>\r\nWARC-Target-URI: http://x/\r\n"
        b"Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n" % (size + len(http))
    )
    data = member(head + http, size)
good = (
    b"<html><body><p>" + "今天天气很好我们去公园散步吧，这是一个正常的页面内容。".encode() * 20 + b"</p></body></html>"
)
http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + good
rec = (
    (
        b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:2>\r\nWARC-Target-URI: http://good/\r\n"
        b"Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n" % len(http)
    )
    + http
    + b"\r\n\r\n"
)
open(out, "wb").write(data + gzip.compress(rec))
print(out, len(data), "bytes ->", size, "inflated")
