"""Fingerprint cost of this checkout beside an older revision, in one process, document by document.

The older revision's ``simhash_store`` is exported with ``git archive`` and imported as
``simhash_store_old``, so both run in the same process on the same texts. For every
document of the 600 laws and 1,104 Wikipedia paragraphs, each version (in alternating
order, so load from other processes hits both alike) normalises, segments and computes
the rest of the fingerprint (features, weights, hashes, sums) under the default scheme;
the CPU time of each stage is summed. Then both compute ``fingerprint()`` of every text
of the whole shared corpus (laws, Wikipedia, law revisions), alternating again, for the
wall-clock throughput and to check that every fingerprint is the same.

    python benchmarks/fingerprint_versions.py --old 1ea740e
    python benchmarks/fingerprint_versions.py --old 1ea740e --repeat 3   # fastest of three passes per stage
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import simhash_store as new  # noqa: E402
from simhash_store.fingerprint import fingerprint_segmented, segment  # noqa: E402

from shared_corpus import CORPUS, load_laws, load_wiki  # noqa: E402

REPOSITORY = Path(__file__).resolve().parent.parent


def import_old(revision: str, folder: Path):
    """``simhash_store`` as of ``revision``, imported under the name ``simhash_store_old``."""
    archive = subprocess.run(
        ["git", "-C", str(REPOSITORY), "archive", revision, "simhash_store"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        try:
            tar.extractall(folder, filter="data")
        except TypeError:  # Python before 3.10.12 and 3.11.4: our own repository's archive
            tar.extractall(folder)
    (folder / "simhash_store").rename(folder / "simhash_store_old")
    sys.path.insert(0, str(folder))
    return importlib.import_module("simhash_store_old")


def stage_times(texts: list[str], versions: dict, repeat: int) -> dict[str, dict[str, float]]:
    """CPU seconds per version and stage, document by document, versions in alternating order."""
    clock = time.process_time
    best: dict[str, dict[str, float]] = {}
    for _ in range(repeat):
        totals = {name: dict.fromkeys(["normalise", "segment", "rest"], 0.0) for name in versions}
        order = list(versions)
        for text in texts:
            order.reverse()
            for name in order:
                module, segment_, fingerprint_segmented_ = versions[name]
                scheme = module.SCHEMES[new.DEFAULT.name]
                tokenizer_only = replace(scheme, name=f"{scheme.name}/tokenizer-only", normalizer="none")
                t0 = clock()
                normalised = module.normalize(text, scheme.normalizer)
                t1 = clock()
                pieces = segment_(normalised, tokenizer_only)
                t2 = clock()
                fingerprint_segmented_(pieces, scheme)
                t3 = clock()
                totals[name]["normalise"] += t1 - t0
                totals[name]["segment"] += t2 - t1
                totals[name]["rest"] += t3 - t2
        for name, times in totals.items():
            if name not in best or times["normalise"] + times["rest"] < best[name]["normalise"] + best[name]["rest"]:
                best[name] = times
    return best


def whole_corpus() -> dict[str, list[str]]:
    revisions = sorted((CORPUS / "zh-law-revisions").rglob("*.txt"))
    return {
        "laws": [d.text for d in load_laws()],
        "wiki": [d.text for d in load_wiki()],
        "law revisions": [p.read_text(encoding="utf-8") for p in revisions],
    }


def _table(header: list[str], rows: list[list]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|",
    ]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="1ea740e", help="the older revision (default: 1ea740e, the previous release)")
    parser.add_argument("--repeat", type=int, default=1, help="passes of the stage timing; the fastest counts")
    args = parser.parse_args()

    head = subprocess.run(
        ["git", "-C", str(REPOSITORY), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(REPOSITORY), "status", "--porcelain", "simhash_store"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as folder:
        old = import_old(args.old, Path(folder))
        old_core = importlib.import_module("simhash_store_old.fingerprint")
        versions = {
            f"old {args.old}": (old, old_core.segment, old_core.fingerprint_segmented),
            f"new {head}{'+' if dirty else ''}": (new, segment, fingerprint_segmented),
        }
        for module, _, _ in versions.values():
            module.fingerprint(
                "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，制定本法。"
            )  # dictionaries outside the clock

        print(
            f"Fingerprint, {' vs '.join(versions)}: {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()}; load average at start "
            f"{os.getloadavg()[0]:.1f}; scheme {new.DEFAULT.name}\n"
        )
        corpus = whole_corpus()
        rows = []
        for collection in ("laws", "wiki"):
            texts = corpus[collection]
            for name, times in stage_times(texts, versions, args.repeat).items():
                rest = times["normalise"] + times["rest"]
                rows.append(
                    [
                        name,
                        collection,
                        f"{times['segment']:.2f}",
                        f"{times['normalise']:.3f}",
                        f"{times['rest']:.3f}",
                        f"{rest / len(texts) * 1e6:,.0f}",
                        f"{rest / times['segment']:.1%}",
                    ]
                )
            print(f"  done: stages on {collection}", file=sys.stderr, flush=True)

        wall = {name: dict.fromkeys(corpus, 0.0) for name in versions}
        values = {name: {} for name in versions}
        order = list(versions)
        for collection, texts in corpus.items():
            for i, text in enumerate(texts):
                order.reverse()
                for name in order:
                    module = versions[name][0]
                    started = time.perf_counter()
                    values[name][collection, i] = module.fingerprint(text)
                    wall[name][collection] += time.perf_counter() - started
        first, second = (values[name] for name in versions)
        differing = [key for key in first if first[key] != second[key]]
        throughput = []
        for collection, texts in corpus.items():
            megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
            for name in versions:
                seconds = wall[name][collection]
                throughput.append(
                    [name, collection, len(texts), f"{megabytes / seconds:.2f}", f"{len(texts) / seconds:,.0f}"]
                )

    print("### One core, CPU seconds by stage (document by document, versions alternating)\n")
    print(
        _table(
            [
                "version",
                "texts",
                "segment",
                "normalise",
                "features, hashes, sums",
                "not segmenting, µs per document",
                "not segmenting / segmenting",
            ],
            rows,
        )
    )
    print("\n### fingerprint() throughput, wall clock (versions alternating per document)\n")
    print(_table(["version", "texts", "documents", "MB/s", "documents/s"], throughput))
    print(
        f"\nFingerprints compared: {len(first)} texts of the whole shared corpus; differing: {len(differing)}"
        + (f" (first: {differing[:5]})" if differing else "")
    )
    if differing:
        sys.exit(1)


if __name__ == "__main__":
    main()
