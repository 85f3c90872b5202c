"""Main-content extraction on real web pages with a hand-made main text: character-level F1 and time per page.

Two public sets, neither shipped here (the pages belong to their sites); give their folders:

- Chinese: the Chinese Web Content Extraction Dataset (GitHub immortal-autumn/
  Chinese-Web-Content-Extraction-Dataset, MIT): 69 pages of Chinese news and blog sites,
  `original/<id>.html` and the hand-copied content `cleaned/<id>.txt`. Many are GBK or Big5.
- English: the Article Extraction Benchmark (GitHub scrapinghub/article-extraction-benchmark,
  MIT): 181 news pages, `html/<id>.html.gz` and `ground-truth.json` (`articleBody`).

Every page is decoded once by `simhash_store.html.decode_page` (header, meta tag, BOM, the
decoding rules), then each extractor gets the same text. Character F1 compares the multisets of
non-space characters (NFKC, case-folded) of the extracted and the known text, as the
Chinese-extraction literature does; for English, word F1 (the benchmark's own measure) too. The
baseline in the same run is the page's whole visible text (what fingerprinting raw HTML sees,
less scripts and styles). Extractors that are not installed are left out of the table.

    python benchmarks/extraction.py --zh DIR --en DIR
    python benchmarks/extraction.py --zh DIR --limit 20
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from simhash_store.html import decode_page, extract_text


def visible_text(html: str) -> str:
    """Baseline: every text node of the page outside scripts, styles and comments."""
    import lxml.html

    try:
        tree = lxml.html.fromstring(html.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8"))
    except Exception:  # an empty or broken document
        return ""
    for node in tree.xpath("//script|//style|//noscript|//comment()"):
        if node.getparent() is not None:
            node.drop_tree()
    return tree.text_content()


def trafilatura_default(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, include_comments=False, include_tables=True, deduplicate=False) or ""


def trafilatura_recall(html: str) -> str:
    import trafilatura

    return (
        trafilatura.extract(html, include_comments=False, include_tables=True, deduplicate=False, favor_recall=True)
        or ""
    )


def resiliparse_main(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True)


def readability(html: str) -> str:
    import lxml.html
    from readability import Document

    summary = Document(html).summary(html_partial=True)
    return lxml.html.fromstring(summary).text_content() if summary.strip() else ""


def chosen(html: str) -> str:
    """What simhash-store uses (simhash_store.html.extract_text): readability-lxml, with
    trafilatura where readability kept under a tenth of what trafilatura finds."""
    return extract_text(html).text


def justext_english(html: str) -> str:
    import justext

    paragraphs = justext.justext(html.encode("utf-8"), justext.get_stoplist("English"), encoding="utf-8")
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


EXTRACTORS: dict[str, tuple[str, Callable[[str], str]]] = {
    "visible text (baseline)": ("lxml", visible_text),
    "trafilatura": ("trafilatura", trafilatura_default),
    "trafilatura favor_recall": ("trafilatura", trafilatura_recall),
    "resiliparse main_content": ("resiliparse", resiliparse_main),
    "readability-lxml": ("readability", readability),
    "simhash-store (readability, else trafilatura)": ("readability", chosen),
    "jusText (English stoplist)": ("justext", justext_english),
}


def _chars(text: str) -> Counter[str]:
    return Counter(c for c in unicodedata.normalize("NFKC", text).casefold() if not c.isspace())


def _words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def f1(extracted: Counter[str], known: Counter[str]) -> float:
    common = sum((extracted & known).values())
    if not common:
        return 0.0
    precision, recall = common / sum(extracted.values()), common / sum(known.values())
    return 2 * precision * recall / (precision + recall)


def chinese_pages(folder: Path) -> list[tuple[str, bytes, str]]:
    pages = []
    for html in sorted((folder / "original").glob("*.html")):
        known = folder / "cleaned" / (html.stem + ".txt")
        if known.exists():
            pages.append((html.stem, html.read_bytes(), known.read_text("utf-8", "replace")))
    return pages


def english_pages(folder: Path) -> list[tuple[str, bytes, str]]:
    truth = json.loads((folder / "ground-truth.json").read_text("utf-8"))
    return [
        (key, gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes()), value["articleBody"])
        for key, value in sorted(truth.items())
        if (folder / "html" / f"{key}.html.gz").exists()
    ]


def available() -> dict[str, Callable[[str], str]]:
    found = {}
    for name, (module, function) in EXTRACTORS.items():
        try:
            __import__(module)
        except ImportError:
            continue
        found[name] = function
    return found


def measure(label: str, pages: list[tuple[str, bytes, str]], extractors: dict[str, Callable[[str], str]]) -> None:
    texts = [(key, decode_page(data).text, known) for key, data, known in pages]
    english = label == "English"
    print(f"\n{label}: {len(pages)} pages")
    header = "| extractor | char F1 mean | char F1 median | pages >= 0.90 | empty |"
    header += " word F1 mean |" if english else ""
    print(header + " ms / page |")
    print("|---" * (header.count("|")) + "|")
    for name, function in extractors.items():
        if name.startswith("jusText") and not english:
            continue
        scores, word_scores, empty, elapsed = [], [], 0, 0.0
        for _key, html, known in texts:
            started = time.perf_counter()
            try:
                text = function(html)
            except Exception:  # an extractor that fails on a page scores 0 on it
                text = ""
            elapsed += time.perf_counter() - started
            empty += not text.strip()
            scores.append(f1(_chars(text), _chars(known)))
            word_scores.append(f1(_words(text), _words(known)))
        row = (
            f"| {name} | {statistics.mean(scores):.3f} | {statistics.median(scores):.3f} |"
            f" {sum(s >= 0.9 for s in scores)}/{len(scores)} | {empty} |"
        )
        row += f" {statistics.mean(word_scores):.3f} |" if english else ""
        print(row + f" {1000 * elapsed / len(texts):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zh", type=Path, help="folder of the Chinese set (original/, cleaned/)")
    parser.add_argument("--en", type=Path, help="folder of the English set (html/, ground-truth.json)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many pages of each set")
    args = parser.parse_args()
    if not args.zh and not args.en:
        parser.error("give --zh, --en or both")
    extractors = available()
    for label, folder, reader in (("Chinese", args.zh, chinese_pages), ("English", args.en, english_pages)):
        if folder:
            pages = reader(folder)
            measure(label, pages[: args.limit] if args.limit else pages, extractors)


if __name__ == "__main__":
    main()
