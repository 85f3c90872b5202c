"""Run as h15mallory: keep /tmp/h15m/in.jsonl a regular file of records half the time and a FIFO
the other half, swapping every few milliseconds (rename is atomic). A victim reading it
(``simhash-store add /tmp/h15m/in.jsonl``, ``dedup``) that checks it is a regular file and then
opens it by name, blocking, waits for ever on the FIFO once the swap falls between the two."""

import os
import sys
import time

directory = "/tmp/h15m"
target = os.path.join(directory, "in.jsonl")
regular = os.path.join(directory, ".regular")
fifo = os.path.join(directory, ".fifo")
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
records = "".join(
    f'{{"key": "k{n}", "text": "record number {n} of some words to fingerprint here"}}\n' for n in range(50)
)
end = time.monotonic() + seconds
while time.monotonic() < end:
    with open(regular, "w") as handle:
        handle.write(records)
    os.replace(regular, target)
    time.sleep(0.004)
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo, 0o644)
    os.replace(fifo, target)
    time.sleep(0.004)
with open(regular, "w") as handle:
    handle.write(records)
os.replace(regular, target)
