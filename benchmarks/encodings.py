"""Encoding detection on real Chinese text: how often `corpus.decode` gives back the text, by encoding and length.

Samples are cut from the shared corpus (Wikipedia paragraphs and laws) at a seeded random
offset, encoded, and decoded again; a sample counts as right when the decoded text equals
the original exactly. Big5 holds only traditional characters, so a simplified sample that
Big5 cannot encode is left out of the Big5 rows (the table says how many were left). The
baseline is charset-normalizer (`from_bytes(...).best()`) on the same bytes, when it is
installed (`pip install charset-normalizer`; not a dependency of simhash-store).

    python benchmarks/encodings.py                  # 200 samples per source and length
    python benchmarks/encodings.py --samples 50
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simhash_store.corpus import DecodeError, decode  # noqa: E402

from shared_corpus import load_laws, load_wiki  # noqa: E402

LENGTHS = (10, 20, 50, 200)
ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "gb18030", "gbk", "big5")


def samples(texts: list[str], length: int, count: int, rng: random.Random) -> list[str]:
    """``count`` windows of ``length`` characters without line breaks, from random texts at random offsets."""
    chosen = []
    while len(chosen) < count:
        text = rng.choice(texts).replace("\n", "").replace("\r", "")
        if len(text) < length:
            continue
        start = rng.randrange(len(text) - length + 1)
        chosen.append(text[start : start + length])
    return chosen


def ours(data: bytes, text: str) -> bool:
    try:
        return decode(data).text == text
    except DecodeError:
        return False


def charset_normalizer_reader():
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        return None

    def read(data: bytes, text: str) -> bool:
        best = from_bytes(data).best()
        return best is not None and str(best) == text

    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=200, help="per source and length")
    parser.add_argument("--seed", type=int, default=11)
    options = parser.parse_args()
    baseline = charset_normalizer_reader()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).resolve().parent
    ).stdout.strip()
    print(
        f"simhash_store.corpus.decode at commit {commit or '?'}; seed {options.seed}; "
        f"baseline: {'charset-normalizer' if baseline else 'charset-normalizer not installed'}"
    )
    print()
    print("| source | characters | encoding | samples | simhash-store right | charset-normalizer right |")
    print("|---|--:|---|--:|--:|--:|")
    sources = {"wiki": [d.text for d in load_wiki()], "laws": [d.text for d in load_laws()]}
    for source, texts in sources.items():
        for length in LENGTHS:
            cut = samples(texts, length, options.samples, random.Random(f"{options.seed}|{source}|{length}"))
            for encoding in ENCODINGS:
                encoded = []
                for text in cut:
                    try:
                        encoded.append((text.encode(encoding), text))
                    except UnicodeEncodeError:
                        pass  # Big5 has no simplified characters
                if not encoded:
                    continue
                right = sum(ours(data, text) for data, text in encoded)
                theirs = sum(baseline(data, text) for data, text in encoded) if baseline else None
                left = f" ({len(cut) - len(encoded)} not encodable)" if len(encoded) < len(cut) else ""
                print(
                    f"| {source} | {length} | {encoding} | {len(encoded)}{left} | "
                    f"{right / len(encoded):.3f} | {'' if theirs is None else f'{theirs / len(encoded):.3f}'} |"
                )


if __name__ == "__main__":
    main()
