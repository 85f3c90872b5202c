"""A charset value of many spaces: `charset=` then N spaces and no name.

In a <meta> tag (first 16 KB of a page) and in a WARC record's HTTP Content-Type header
(up to MAX_HEADER_LINE = 1 MiB): the pattern charset\\s*=\\s*["']?\\s*(...) backtracks over
every split of the spaces between its two \\s*, quadratic in N at each start.
Usage: python hostile/charset_spaces.py [OUTDIR]   (times the lookups, writes spaces.warc)
"""

import sys
import time
from pathlib import Path

from simhash_store.html import charset_of_header, charset_of_meta

for n in (2000, 4000, 8000):
    page = b"<meta charset=" + b" " * n + b">"
    started = time.perf_counter()
    charset_of_meta(page)
    meta = time.perf_counter() - started
    started = time.perf_counter()
    charset_of_header("text/html; charset=" + " " * n)
    header = time.perf_counter() - started
    print(f"{n:>6} spaces: meta {meta:.3f} s, header {header:.3f} s")

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
body = (
    b"<html><body><article><p>" + b"Some words of a page that is long enough. " * 40 + b"</p></article></body></html>"
)
http = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset="
    + b" " * 20000
    + b"\r\n"
    + b"Content-Length: "
    + str(len(body)).encode()
    + b"\r\n\r\n"
    + body
)
record = (
    b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.com/\r\n"
    b"WARC-Date: 2026-11-26T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:12345678-1234-1234-1234-123456789abc>\r\n"
    b"Content-Type: application/http; msgtype=response\r\nContent-Length: "
    + str(len(http)).encode()
    + b"\r\n\r\n"
    + http
    + b"\r\n\r\n"
)
(out / "spaces.warc").write_bytes(record)
print("wrote", out / "spaces.warc")
