"""explain of a 60 GB sparse file (and of it on standard input) under a 2 GB memory limit.
Usage: python hostile/explain_sparse_file.py FOLDER"""

import subprocess
import sys
from pathlib import Path

folder = Path(sys.argv[1])
folder.mkdir(exist_ok=True)
(folder / "a.txt").write_text("some text about harbour piers", encoding="utf-8")
with open(folder / "sparse.txt", "wb") as handle:
    handle.truncate(60 << 30)
limit = ["prlimit", "--as=2000000000", "simhash-store", "explain", str(folder / "a.txt")]
for last, stdin in ((str(folder / "sparse.txt"), None), ("-", folder / "sparse.txt")):
    with open(stdin or "/dev/null", "rb") as given:
        run = subprocess.run([*limit, last], stdin=given, capture_output=True, text=True, timeout=300)
    print(run.returncode, run.stderr.strip().splitlines()[-1:])
