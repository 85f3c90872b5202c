"""Fingerprinting speed on one core, per MB: the default scheme beside the previous one and the peers.

On the shared Chinese corpus (600 laws, 1,104 Wikipedia paragraphs) and on English news
(the BBC articles of crawl_quality.py, when present), CPU seconds of one process for:

* the segmenters alone on normalised text: jieba, jieba-fast (when installed) and rjieba,
  with the share of texts each cuts exactly as jieba does;
* ``fingerprint()`` under zh-jieba-v1, zh-rjieba-v1 and multi-v2;
* the PyPI ``simhash`` 2.1.2 package (``Simhash(text).value``, timed inside its own environment,
  see quality.py) and a datasketch MinHash signature (128 permutations over 5-character
  shingles, what MinHashLSH needs per document).

Best of ``--repeat`` passes; every figure comes from the same run.

    python benchmarks/crawl_speed.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from simhash_store import fingerprint, normalize  # noqa: E402

from crawl_quality import load_en  # noqa: E402
from quality import _markdown, pypi_python  # noqa: E402
from shared_corpus import load_laws, load_wiki, shingles  # noqa: E402

_PYPI_TIMER = """
import json, sys, time
from simhash import Simhash
texts = json.load(sys.stdin)
best = None
for _ in range(int(sys.argv[1])):
    started = time.process_time()
    for text in texts:
        Simhash(text).value
    seconds = time.process_time() - started
    best = seconds if best is None else min(best, seconds)
print(best)
"""


def cpu_seconds(work, texts: list[str], repeat: int) -> float:
    work(texts[0])  # dictionaries and tables loaded outside the clock
    best = None
    for _ in range(repeat):
        started = time.process_time()
        for text in texts:
            work(text)
        seconds = time.process_time() - started
        best = seconds if best is None else min(best, seconds)
    return best


def pypi_seconds(texts: list[str], repeat: int) -> float:
    result = subprocess.run(
        [str(pypi_python()), "-c", _PYPI_TIMER, str(repeat)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout)


def minhash(text: str) -> None:
    from datasketch import MinHash

    signature = MinHash(num_perm=128)
    signature.update_batch([s.encode("utf-8") for s in shingles(text)])


def segmenters() -> dict:
    import jieba
    import rjieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    found = {"jieba.lcut": jieba.lcut}
    try:
        import jieba_fast

        jieba_fast.setLogLevel(logging.WARNING)
        jieba_fast.initialize()
        found["jieba_fast.lcut"] = jieba_fast.lcut
    except ImportError:
        print("  jieba-fast not installed: not measured", file=sys.stderr)
    found["rjieba.cut"] = rjieba.cut
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--english", type=Path, default=Path(__file__).resolve().parent / ".cache" / "en-bbc" / "bbc")
    args = parser.parse_args()

    collections = {"Chinese corpus": [d.text for d in load_laws() + load_wiki()]}
    if args.english.is_dir():
        collections["English news"] = [d.text for d in load_en(args.english)]
    split = segmenters()
    print(
        f"Fingerprinting speed on one core: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; best of {args.repeat}; load average at start {os.getloadavg()[0]:.1f}\n"
    )
    rows, agreement = [], []
    for name, texts in collections.items():
        megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        normalised = [normalize(t) for t in texts]
        reference = [split["jieba.lcut"](t) for t in normalised]
        measured = {}
        for label, cut in split.items():
            measured[f"segmenter alone: {label}"] = cpu_seconds(cut, normalised, args.repeat)
            same = sum(cut(t) == r for t, r in zip(normalised, reference))
            agreement.append([label, name, f"{same / len(texts):.3f}"])
        for scheme in ("zh-jieba-v1", "zh-rjieba-v1", "multi-v2"):
            measured[f"fingerprint {scheme}"] = cpu_seconds(lambda t, s=scheme: fingerprint(t, s), texts, args.repeat)
        measured["simhash 2.1.2 (PyPI), Simhash(text)"] = pypi_seconds(texts, args.repeat)
        measured["datasketch MinHash, 128 permutations"] = cpu_seconds(minhash, texts, args.repeat)
        baseline = measured["fingerprint zh-jieba-v1"]
        for label, seconds in measured.items():
            rows.append([label, name, f"{megabytes / seconds:.2f}", f"{baseline / seconds:.1f}x"])
        print(f"  done: {name} ({megabytes:.1f} MB)", file=sys.stderr, flush=True)
    print(_markdown(["what", "texts", "MB/s (one core)", "speed against zh-jieba-v1"], rows))
    print("\nShare of texts segmented exactly as jieba does (normalised text):\n")
    print(_markdown(["segmenter", "texts", "identical"], agreement))


if __name__ == "__main__":
    main()
