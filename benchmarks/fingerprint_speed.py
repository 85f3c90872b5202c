"""Fingerprint speed beside the segmenter alone, on the shared Chinese corpus.

For the default scheme (jieba) and its rjieba twin, on the 600 laws and the 1,104
Wikipedia paragraphs, the script prints:

* throughput (MB of UTF-8 and documents per second) of ``fingerprint()`` on one core and
  on all cores, beside the raw segmenter (``jieba.lcut`` / ``rjieba.cut``) on the same
  texts in the same run;
* where one core's time goes: normalising, segmenting, and the rest (features, weights,
  hashes, bit sums), as CPU time measured document by document, interleaved so that load
  from other processes hits every stage alike. The target: everything but segmentation
  under 15% of segmentation.

    python benchmarks/fingerprint_speed.py              # both tokenizers, both collections
    python benchmarks/fingerprint_speed.py --repeat 3   # best of three passes
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simhash_store import SCHEMES, fingerprint, normalize  # noqa: E402
from simhash_store.fingerprint import fingerprint_segmented, segment  # noqa: E402
from simhash_store.scheme import DEFAULT, Scheme  # noqa: E402

from shared_corpus import load_laws, load_wiki  # noqa: E402


def _raw_segmenter(tokenizer: str):
    """The segmenter by itself, as a user would call it on raw text."""
    if tokenizer in ("rjieba", "multi-rjieba"):
        import rjieba

        return lambda text: rjieba.cut(text)
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.lcut


def stage_times(texts: list[str], scheme: Scheme) -> dict[str, float]:
    """CPU seconds per stage over all texts, timed text by text."""
    tokenizer_only = replace(scheme, name=f"{scheme.name}/tokenizer-only", normalizer="none")
    raw = _raw_segmenter(scheme.tokenizer)
    fingerprint(texts[0], scheme)  # load dictionaries and tables outside the clock
    raw(texts[0])
    totals = dict.fromkeys(["raw segmenter", "normalise", "segment", "features, hashes, sums"], 0.0)
    clock = time.process_time
    for text in texts:
        t0 = clock()
        raw(text)
        t1 = clock()
        normalised = normalize(text, scheme.normalizer)
        t2 = clock()
        pieces = segment(normalised, tokenizer_only)
        t3 = clock()
        fingerprint_segmented(pieces, scheme)
        t4 = clock()
        totals["raw segmenter"] += t1 - t0
        totals["normalise"] += t2 - t1
        totals["segment"] += t3 - t2
        totals["features, hashes, sums"] += t4 - t3
    return totals


_worker_scheme: Scheme | None = None


def _start_worker(scheme: Scheme) -> None:
    global _worker_scheme
    _worker_scheme = scheme
    fingerprint("预热", scheme)
    _raw_segmenter(scheme.tokenizer)("预热")


def _fingerprint_in_worker(text: str) -> int:
    return fingerprint(text, _worker_scheme)


def _segment_in_worker(text: str) -> int:
    return len(_raw_segmenter(_worker_scheme.tokenizer)(text))


def wall_seconds(texts: list[str], scheme: Scheme, processes: int, raw: bool) -> float:
    """Wall time for all texts: in this process, or in a pool of warmed-up workers."""
    if processes == 1:
        work = _raw_segmenter(scheme.tokenizer) if raw else (lambda text: fingerprint(text, scheme))
        work(texts[0])
        started = time.perf_counter()
        for text in texts:
            work(text)
        return time.perf_counter() - started
    context = multiprocessing.get_context("fork")
    with context.Pool(processes, initializer=_start_worker, initargs=(scheme,)) as pool:
        pool.map(_start_worker, [scheme] * processes)  # every worker loaded before the clock starts
        started = time.perf_counter()
        pool.map(_segment_in_worker if raw else _fingerprint_in_worker, texts, chunksize=4)
        return time.perf_counter() - started


def _table(header: list[str], rows: list[list]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|",
    ]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--schemes", nargs="*", default=None, help="scheme names (default: the default and its rjieba twin)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="passes per measurement; the fastest counts")
    parser.add_argument("--processes", type=int, default=os.cpu_count(), help="workers for the all-cores rows")
    args = parser.parse_args()

    names = args.schemes or ["zh-jieba-v1", "zh-rjieba-v1", DEFAULT.name]
    schemes = [SCHEMES[name] for name in names]
    collections = {"laws": [d.text for d in load_laws()], "wiki": [d.text for d in load_wiki()]}

    print(
        f"Fingerprint speed: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; best of {args.repeat}; load average at start "
        f"{os.getloadavg()[0]:.1f}\n"
    )
    throughput, stages = [], []
    for scheme in schemes:
        for collection, texts in collections.items():
            megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
            for processes in (1, args.processes):
                for raw in (True, False):
                    seconds = min(wall_seconds(texts, scheme, processes, raw) for _ in range(args.repeat))
                    label = (
                        ("raw jieba.lcut" if scheme.tokenizer == "jieba" else "raw rjieba.cut")
                        if raw
                        else f"fingerprint {scheme.name}"
                    )
                    throughput.append(
                        [label, collection, processes, f"{megabytes / seconds:.2f}", f"{len(texts) / seconds:,.0f}"]
                    )
            times = min((stage_times(texts, scheme) for _ in range(args.repeat)), key=lambda t: sum(t.values()))
            rest = times["normalise"] + times["features, hashes, sums"]
            stages.append(
                [
                    scheme.name,
                    collection,
                    f"{times['raw segmenter']:.2f}",
                    f"{times['segment']:.2f}",
                    f"{times['normalise']:.2f}",
                    f"{times['features, hashes, sums']:.2f}",
                    f"{rest / times['segment']:.1%}",
                ]
            )
            print(f"  done: {scheme.name} on {collection}", file=sys.stderr, flush=True)

    print("### Throughput (wall clock)\n")
    print(_table(["what", "texts", "processes", "MB/s", "documents/s"], throughput))
    print("\n### One core, CPU seconds by stage\n")
    print(
        _table(
            [
                "scheme",
                "texts",
                "raw segmenter",
                "segment",
                "normalise",
                "features, hashes, sums",
                "not segmenting / segmenting",
            ],
            stages,
        )
    )


if __name__ == "__main__":
    main()
