"""WARC target URIs: a response without WARC-Target-URI lost every record after it (warcio's
AttributeError counted as damage); a URI holding a space made warcio print a warning with the URI raw
(an OSC sequence here retitles the terminal) on stderr.

Run: SIMHASH_STORE_URL=... python hostile/warc_uris.py   (then look at stderr with cat -A)
Before: `failed: uris.warc: unreadable (not a readable WARC archive: 'NoneType' object has no attribute
'startswith')`, u3 not stored; `Replacing spaces in invalid WARC-Target-URI: ...^[]0;...` on stderr.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

body = (
    b"<html><body><article><p>"
    + b"The quick brown fox jumps over the lazy dog again. " * 40
    + b"</p></article></body></html>"
)


def response(uri: str | None) -> bytes:
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + body
    target = "" if uri is None else f"WARC-Target-URI: {uri}\r\n"
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\n{target}WARC-Record-ID: <urn:uuid:{uri}>\r\n"
        f"WARC-Date: 2020-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {len(http)}\r\n\r\n"
    ).encode()
    return head + http + b"\r\n\r\n"


with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "uris.warc"
    path.write_bytes(
        b"".join(response(u) for u in ("http://e/u1", None, "http://e/a b\x1b]0;pwned\x07", "http://e/u3"))
    )
    done = subprocess.run([sys.executable, "-m", "simhash_store", "add", str(path)], capture_output=True)
    print(done.returncode, done.stdout.decode(), repr(done.stderr.decode()))
