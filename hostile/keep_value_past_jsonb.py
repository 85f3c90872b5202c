"""A keep field (or a metadata field) of a string past jsonb's 256 MiB limit, between two good records.
Usage: python hostile/keep_value_past_jsonb.py DB_URL FOLDER"""

import json
import subprocess
import sys
from pathlib import Path

url, folder = sys.argv[1], Path(sys.argv[2])
folder.mkdir(exist_ok=True)
text = "The harbour town of Westmere voted on Tuesday to rebuild its old stone pier. " * 10
path = folder / "in.jsonl"
with path.open("w") as out:
    out.write(json.dumps({"key": "a", "text": text + " one", "x": "2024"}) + "\n")
    out.write('{"key": "big", "text": ' + json.dumps(text + " two") + ', "x": "' + "y" * 270_000_000 + '"}\n')
    out.write(
        json.dumps(
            {"key": "c", "text": "Another text entirely about the mountains and rivers of the north " * 5, "x": "2023"}
        )
        + "\n"
    )
subprocess.run(["simhash-store", "--db", url, "init"], capture_output=True)
for args in (
    ["dedup", str(path), "-o", str(folder / "out.jsonl"), "--keep", "field:x"],
    ["add", "--jsonl", str(path), "--metadata-field", "x"],
):
    run = subprocess.run(
        ["prlimit", "--as=5000000000", "simhash-store", "--db", url, *args], capture_output=True, text=True
    )
    print(run.returncode, run.stdout[-500:], run.stderr[-1500:])
