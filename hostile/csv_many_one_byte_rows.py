"""import / add of a CSV of a header then N rows of one byte ("a"), and N empty lines: time, memory, output.
Usage: python hostile/csv_many_one_byte_rows.py DB_URL FOLDER N"""

import subprocess
import sys
from pathlib import Path

url, folder, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
folder.mkdir(exist_ok=True)
(folder / "rows.csv").write_bytes(b"key,fingerprint\n" + b"a\n" * n + b"k1,0x1234\n")
(folder / "empty.csv").write_bytes(b"key,fingerprint\n" + b"\n" * n + b"k2,0x1234\n")
(folder / "docs.csv").write_bytes(b"key,text\n" + b"a\n" * n + b"k3,some text here about piers\n")
subprocess.run(["simhash-store", "--db", url, "init"], capture_output=True)
for args in (
    ["import", str(folder / "rows.csv")],
    ["import", str(folder / "empty.csv")],
    ["add", str(folder / "docs.csv")],
):
    run = subprocess.run(
        ["/usr/bin/time", "-f", "%e s %M KB", "prlimit", "--as=3000000000", "simhash-store", "--db", url, *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = run.stdout.splitlines() + run.stderr.splitlines()
    print(args[0], run.returncode, len(lines), "lines;", lines[:2], lines[-3:])
