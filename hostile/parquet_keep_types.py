"""dedup --keep field:F over a Parquet timestamp[us], date32 or decimal column: the values ranked as
missing, so every copy tied and the first was kept whatever the direction.

Run: SIMHASH_STORE_URL=postgresql://.../EMPTY_DB python hostile/parquet_keep_types.py
Before the fix: kept ['a'] for every line; after: the newest / cheapest.
Then `add --metadata-field published_at` of the same file (into that store): before, every row
failed (`metadata value at published_at is a datetime, which JSON cannot hold`); after, stored as text.
"""

import datetime
import decimal
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

text = "The quick brown fox jumps over the lazy dog near the river bank today. " * 20
utc = datetime.timezone.utc
with tempfile.TemporaryDirectory() as folder:
    source = Path(folder) / "in.parquet"
    pq.write_table(
        pa.table(
            {
                "key": ["a", "b", "c"],
                "text": [text, text + " x", text + " y"],
                "published_at": pa.array(
                    [datetime.datetime(2024, 6, d, tzinfo=utc) for d in (2, 1, 3)], pa.timestamp("us", tz="UTC")
                ),
                "price": pa.array([decimal.Decimal(v) for v in ("10.50", "9.75", "2.00")], pa.decimal128(6, 2)),
            }
        ),
        source,
    )
    out = Path(folder) / "out.parquet"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "simhash_store",
            "dedup",
            str(source),
            "-o",
            str(out),
            "--keep",
            "field:published_at:desc",
        ]
    )
    print("kept (want ['c'], the newest):", [r["key"] for r in pq.read_table(out).to_pylist()])
    subprocess.run(
        [
            sys.executable,
            "-m",
            "simhash_store",
            "add",
            str(source),
            "--prefix",
            "m/",
            "--metadata-field",
            "published_at",
        ]
    )
