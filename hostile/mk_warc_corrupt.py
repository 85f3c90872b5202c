# ruff: noqa
"""A .warc.gz of three page records, the second's gzip member damaged in the middle of its deflate data."""

import gzip, sys


def rec(uri, n):
    body = (
        "<html><body><p>" + "今天天气很好我们去公园散步吧，这是第%d个正常的页面内容。" % n * 200 + "</p></body></html>"
    ).encode()
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + body
    head = (
        b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:%d>\r\nWARC-Target-URI: %s\r\n"
        b"Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n" % (n, uri.encode(), len(http))
    )
    return gzip.compress(head + http + b"\r\n\r\n")


a, b, c = rec("http://a/", 1), bytearray(rec("http://b/", 2)), rec("http://c/", 3)
mid = len(b) // 2
for i in range(mid, mid + 8):
    b[i] ^= 0xFF
open(sys.argv[1], "wb").write(a + bytes(b) + c)
