"""What the parser's bound does to real pages: the main content extracted from each page as the
library reads it (written out again by ``html_limits.bounded``) against the same page given to
the extractors as it came (only what lxml cannot hold replaced), and the bound's CPU time against
the whole extraction's, in the same run.

The pages are those of benchmarks/extraction.py (the Chinese Web Content Extraction Dataset and
the Article Extraction Benchmark, not shipped here):

    python benchmarks/html_bound.py --zh DIR --en DIR
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from extraction import chinese_pages, english_pages

from simhash_store import html, html_limits
from simhash_store.html import decode_page, extract_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zh", type=Path, help="folder of the Chinese set (original/, cleaned/)")
    parser.add_argument("--en", type=Path, help="folder of the English set (html/, ground-truth.json)")
    arguments = parser.parse_args()
    pages = (chinese_pages(arguments.zh) if arguments.zh else []) + (
        english_pages(arguments.en) if arguments.en else []
    )
    texts = [decode_page(data).text for _, data, _ in pages]
    rewritten = as_came = bound = 0.0
    same = 0
    for text in texts:
        started = time.process_time()
        html_limits.bounded(text)
        bound += time.process_time() - started
        started = time.process_time()
        ours = extract_text(text)
        rewritten += time.process_time() - started
        html.bounded = html_limits.holdable  # type: ignore[assignment]  # the page as it came
        try:
            started = time.process_time()
            theirs = extract_text(text)
            as_came += time.process_time() - started
        finally:
            html.bounded = html_limits.bounded
        same += (ours.text, ours.title) == (theirs.text, theirs.title)
    count = len(texts)
    print(
        "| pages | same main text and title | bound, CPU ms a page | extraction (bound included) | extraction of the page as it came |"
    )
    print("|--:|--:|--:|--:|--:|")
    print(
        f"| {count} | {same} | {bound / count * 1000:.1f} | {rewritten / count * 1000:.1f} ms "
        f"| {as_came / count * 1000:.1f} ms ({rewritten / as_came:.2f}x) |"
    )


if __name__ == "__main__":
    main()
