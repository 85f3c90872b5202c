"""Reading records through the format registry beside the readers it replaced, in the same run.

Builds a JSONL file (and a CSV and a Parquet copy) of the shared corpus's zh-wiki paragraphs,
repeated with fresh keys, then reads each to documents (key, text) in a child process per
reader: ``formats.read_documents`` of this tree, and the readers of a baseline tree given with
``--baseline`` (a checkout of main before the registry: ``records.read_jsonl`` for JSONL,
``formats.read_records`` for CSV and Parquet). The best of ``--repeat`` wall times is shown,
with the ratio to the baseline.

    python benchmarks/format_readers.py --baseline /work/main --copies 20
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from shared_corpus import CORPUS

HERE = Path(__file__).resolve().parent.parent
WIKI = CORPUS / "zh-wiki" / "cmrc2018-contexts.jsonl"

# JSONL to documents (what add --jsonl reads); CSV and Parquet to records (what dedup reads).
NEW = {
    "jsonl": "from simhash_store import formats; items = formats.read_documents([path])",
    "csv": "from simhash_store import formats; items = formats.read_records(path)",
    "parquet": "from simhash_store import formats; items = formats.read_records(path)",
}
_OLD_RECORDS = (
    "from simhash_store import formats; items = formats.read_records(path, {!r}, key_field='key', text_field='text')"
)
OLD = {
    "jsonl": "from simhash_store.records import read_jsonl; items = read_jsonl(open(path, 'rb'), path)",
    "csv": _OLD_RECORDS.format("csv"),
    "parquet": _OLD_RECORDS.format("parquet"),
}
CHILD = """
import sys, time
# The tree under test, not the editable install's: its finder is dropped, the tree put first.
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, sys.argv[2])
path = sys.argv[1]
started = time.perf_counter()
{setup}
count = sum(1 for _ in items)
print(count, time.perf_counter() - started)
"""


def build(directory: Path, copies: int) -> dict[str, Path]:
    records = [json.loads(line) for line in WIKI.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [{"key": f"{n}/{r['id']}", "text": r["text"], "title": r["title"]} for n in range(copies) for r in records]
    sys.path.insert(0, str(HERE))
    from simhash_store import formats

    paths = {}
    for form in ("jsonl", "csv", "parquet"):
        paths[form] = directory / f"wiki.{form}"
        writer = formats.open_writer(str(paths[form]))
        for row in rows:
            writer.write(row)
        writer.close()
    return paths


def timed(tree: Path, setup: str, path: Path, repeat: int) -> tuple[int, float]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        result = subprocess.run(
            [sys.executable, "-c", CHILD.format(setup=setup), str(path), str(tree)],
            capture_output=True,
            text=True,
            check=True,
        )
        count_text, seconds = result.stdout.split()
        count, best = int(count_text), min(best, float(seconds))
    return count, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of main before the registry")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        paths = build(Path(scratch), options.copies)
        print(f"{options.copies} copies of {WIKI.name}; best of {options.repeat}; child processes, imports included")
        print("| format | MB | records | baseline s | registry s | ratio |")
        print("|---|---|---|---|---|---|")
        for form, path in paths.items():
            old_count, old = timed(options.baseline, OLD[form], path, options.repeat)
            new_count, new = timed(HERE, NEW[form], path, options.repeat)
            assert old_count == new_count, (form, old_count, new_count)
            size = path.stat().st_size / 1e6
            print(f"| {form} | {size:.1f} | {new_count:,} | {old:.2f} | {new:.2f} | {new / old:.2f} |")


if __name__ == "__main__":
    main()
