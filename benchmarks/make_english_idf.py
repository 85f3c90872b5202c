"""Build simhash_store/data/en-wordfreq-idf-v1.txt: the English word weights of the multi-v2 scheme.

The table is part of the multi-v2 data format: once shipped it is frozen (a new table is
a new file and a new tokenizer name). This script documents how it was made and checks
that a rebuild gives the same bytes:

    pip install wordfreq==3.1.1
    python benchmarks/make_english_idf.py            # writes the table
    python benchmarks/make_english_idf.py --check    # compares with the shipped one

Weight of a word: -ln(frequency) in wordfreq's English list, i.e. an IDF-like surprise
on the same scale as jieba's IDF table (median 12.0 there, 13.1 here), rounded to 0.01.
Words are wordfreq's 40,000 most frequent, as wordfreq tokenises them (lower case,
apostrophes kept), less those holding anything but letters and apostrophes.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "simhash_store" / "data" / "en-wordfreq-idf-v1.txt"
WORDS = 40_000
HEADER = (
    "# English word weights for simhash-store's multi-v2 scheme: word, tab, -ln(frequency).\n"
    "# Derived from wordfreq 3.1.1 (Robyn Speer et al., https://github.com/rspeer/wordfreq),\n"
    "# whose word-frequency data is licensed CC BY-SA 4.0; this derived table is likewise\n"
    "# CC BY-SA 4.0. Made by benchmarks/make_english_idf.py.\n"
)


def build() -> str:
    from importlib.metadata import version

    from wordfreq import top_n_list, word_frequency

    if version("wordfreq") != "3.1.1":
        sys.exit(f"this table was built with wordfreq 3.1.1, not {version('wordfreq')}")
    lines = []
    for word in top_n_list("en", WORDS):
        if not word.replace("'", "").isalpha():
            continue
        lines.append(f"{word}\t{-math.log(word_frequency(word, 'en')):.2f}\n")
    return HEADER + "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped table instead of writing it")
    args = parser.parse_args()
    text = build()
    if args.check:
        same = TABLE.read_text(encoding="utf-8") == text
        print("the shipped table is what wordfreq 3.1.1 gives" if same else "the shipped table differs")
        sys.exit(0 if same else 1)
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE} ({text.count(chr(10)) - 4} words)")


if __name__ == "__main__":
    main()
