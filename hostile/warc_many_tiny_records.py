"""A .warc of N tiny records (metadata records of one byte, and every 1,000th a tiny HTML response).
Usage: python hostile/warc_many_tiny_records.py DB_URL FOLDER N"""

import subprocess
import sys
from pathlib import Path

url, folder, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
folder.mkdir(exist_ok=True)
path = folder / "tiny.warc"
with path.open("wb") as out:
    for i in range(n):
        if i % 1000 == 0:
            page = (
                f"<html><body><p>Page {i} about harbour piers and their stones, rebuilt in Westmere.</p></body></html>"
            )
            body = ("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + page).encode()
            kind = b"response"
        else:
            body, kind = b"x", b"metadata"
        out.write(
            b"WARC/1.0\r\nWARC-Type: "
            + kind
            + b"\r\nWARC-Target-URI: http://e/"
            + str(i).encode()
            + b"\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
            + b"\r\n\r\n"
        )
subprocess.run(["simhash-store", "--db", url, "init"], capture_output=True)
run = subprocess.run(
    ["/usr/bin/time", "-f", "%e s %M KB", "prlimit", "--as=3000000000", "simhash-store", "--db", url, "add", str(path)],
    capture_output=True,
    text=True,
    timeout=900,
)
print(run.returncode, run.stdout[-600:], run.stderr[-800:])
