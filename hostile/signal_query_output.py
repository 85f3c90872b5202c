"""SIGINT and SIGTERM to `simhash-store query IN -o OUT` at several moments: OUT must be the old file
or the complete answer, no `.OUT.*.partial` or `.OUT.lock` may stay behind, stderr one line.
Usage: python hostile/signal_query_output.py RECORDS.jsonl WORKDIR  (SIMHASH_STORE_URL set)"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

records, work = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
work.mkdir(exist_ok=True)
exe = str(Path(sys.executable).with_name("simhash-store"))
total = sum(1 for _ in records.open())
for name in ("q.jsonl", "q.csv"):
    for number in (signal.SIGINT, signal.SIGTERM):
        for delay in (1.0, 1.5, 2.0, 2.5):
            out = work / name
            out.write_text("old\n")
            process = subprocess.Popen(
                [exe, "query", str(records), "-o", str(out), "-k", "3", "-j", "1"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                cwd=work,
            )
            time.sleep(delay)
            process.send_signal(number)
            _, stderr = process.communicate()
            lines = out.read_text().splitlines()
            state = "old" if lines == ["old"] else ("complete" if len(lines) >= total else f"{len(lines)} lines")
            left = sorted(p.name for p in work.iterdir() if p.name.startswith(f".{name}"))
            print(
                f"{name} {signal.Signals(number).name} {delay}s: exit {process.returncode}, out {state}, "
                f"left {left}, stderr {stderr.strip().splitlines()[-1:] if stderr.strip() else ''} "
                f"({len(stderr.strip().splitlines())} lines)"
            )
            for p in left:
                os.unlink(work / p)
