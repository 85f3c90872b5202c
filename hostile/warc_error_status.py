"""A WARC response whose HTTP status is an error (404, 500, 503) is read as the page of its URI: a
recrawl in which a page answered 503 replaces that page's stored fingerprint with the error page's.

Run: SIMHASH_STORE_URL=... python hostile/warc_error_status.py
Prints `add`'s summary for a crawl with the page, then for a recrawl in which it answered 503.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

article = b"<html><body><article><p>" + b"The harbour town voted on Tuesday to rebuild its old stone pier. " * 30
error = b"<html><body><article><p>" + b"Service unavailable: our servers are busy, please try again later. " * 30


def response(uri: str, status: bytes, body: bytes) -> bytes:
    http = (
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        + body
        + b"</p></article></body></html>"
    )
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Record-ID: <urn:uuid:{uri}>\r\n"
        f"WARC-Date: 2020-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {len(http)}\r\n\r\n"
    ).encode()
    return head + http + b"\r\n\r\n"


with tempfile.TemporaryDirectory() as folder:
    for name, status, body in (("crawl", b"200 OK", article), ("recrawl", b"503 Service Unavailable", error)):
        path = Path(folder) / f"{name}.warc"
        path.write_bytes(response("http://e/pier", status, body))
        done = subprocess.run([sys.executable, "-m", "simhash_store", "add", str(path)], capture_output=True, text=True)
        print(name, done.returncode, done.stdout.strip(), done.stderr.strip())
