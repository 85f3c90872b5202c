"""A .warc whose header line never ends: 'WARC/1.0\\r\\nWARC-Type: response\\r\\nWARC-Target-URI: ' then
a sparse run of NUL bytes (truncate), no newline. Usage: python hostile/warc_endless_header.py DB_URL FOLDER SIZE"""

import subprocess
import sys
from pathlib import Path

url, folder, size = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
folder.mkdir(exist_ok=True)
path = folder / "endless.warc"
with path.open("wb") as out:
    out.write(b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://e/")
    out.truncate(size)
subprocess.run(["simhash-store", "--db", url, "init"], capture_output=True)
run = subprocess.run(
    ["prlimit", "--as=2000000000", "simhash-store", "--db", url, "add", str(path)],
    capture_output=True,
    text=True,
    timeout=600,
)
print(run.returncode, run.stdout[-400:], run.stderr[-1500:])
