"""dedup --keep field:published_at:desc over Parquet timestamps in different time zones.

Two files from two crawlers: the same page, one with published_at in UTC, the other in New York
time. The New York copy is later in real time (12:00 UTC against 10:00 UTC) but its text
(2024-06-03 08:00:00-04:00) sorts before the UTC one's: the older copy is kept. Within one column in
Europe/Berlin, the hour clocks fall back repeats: 02:45+02:00 is earlier than 02:15+01:00.
Usage: python hostile/parquet_keep_time_zones.py DB_URL
"""

import datetime
import subprocess
import sys
import tempfile
import zoneinfo
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

url = sys.argv[1]
text = "The harbour town of Westmere voted on Tuesday to rebuild its old stone pier, " * 20
with tempfile.TemporaryDirectory() as folder:
    d = Path(folder)
    utc, ny = datetime.timezone.utc, zoneinfo.ZoneInfo("America/New_York")
    for name, zone, moment in (
        ("utc", "UTC", datetime.datetime(2024, 6, 3, 10, tzinfo=utc)),
        ("ny", "America/New_York", datetime.datetime(2024, 6, 3, 8, tzinfo=ny)),
    ):
        pq.write_table(
            pa.table({"key": [name], "text": [text], "published_at": pa.array([moment], pa.timestamp("us", tz=zone))}),
            d / f"{name}.parquet",
        )
    subprocess.run(["simhash-store", "--db", url, "init"], check=False, capture_output=True)
    run = subprocess.run(
        [
            "simhash-store",
            "--db",
            url,
            "dedup",
            str(d / "utc.parquet"),
            str(d / "ny.parquet"),
            "-o",
            str(d / "out.jsonl"),
            "--keep",
            "field:published_at:desc",
        ],
        capture_output=True,
        text=True,
    )
    print(run.returncode, run.stderr.strip()[-300:])
    print("kept:", (d / "out.jsonl").read_text()[:120], "(the later copy in real time is 'ny')")
