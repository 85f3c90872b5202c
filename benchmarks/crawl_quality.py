"""Near-duplicates in real crawls: natural duplicates, re-titled reposts, English and mixed text.

Development sets (none of them held out):

* ``zh``: the shared corpus's 600 laws, 1,104 Wikipedia paragraphs and the 202 dated
  versions of revised laws (natural near-duplicates of graded similarity);
* ``en``: the BBC News articles of Greene and Cunningham (2006), 2,225 stories of 2004-2005
  with the reposts and updated stories such a crawl holds (give the folder with ``--english``;
  it is not in the repository: see docs/quality.md);
* synthetic variants of every ``--every``-th document of each set (the light and heavy kinds of
  ``simhash_store.variants`` and a re-titled repost);
* mixed articles: Chinese text with English paragraphs making 30% of the characters, and the
  same article with those paragraphs replaced by other English text.

Ground truth is exact 5-character shingle Jaccard (whitespace removed). Every pair with
Jaccard >= 0.8 is found through MinHash LSH at threshold 0.5 (128 permutations) plus every
pair any method returns; a pair is unrelated below 0.2. For each method and k:

* recall of natural pairs with Jaccard >= 0.8, and precision: the share of returned pairs with
  Jaccard >= 0.5;
* false matches per unrelated pair, over the whole set and within the laws;
* recall of light, heavy and re-titled variants; for the mixed articles, the share more than
  k bits apart.

Baselines from the same run: zh-jieba-v1 (the previous default), the PyPI ``simhash`` 2.1.2
package (in its own environment, see quality.py) and datasketch MinHashLSH (threshold 0.8,
128 permutations over the same 5-character shingles; natural pairs only).

    python benchmarks/crawl_quality.py --english benchmarks/.cache/en-bbc/bbc
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from simhash_store.scheme import SCHEMES, Scheme  # noqa: E402
from simhash_store.variants import HEAVY, LIGHT, TITLES, make_variant  # noqa: E402

from quality import _fingerprint_pypi, _fingerprint_schemes, _markdown, _progress, close_pairs, distances  # noqa: E402
from shared_corpus import jaccard, load_laws, load_revision_pairs, load_wiki, shingles  # noqa: E402

KS = list(range(3, 14))
UNRELATED_BELOW = 0.2
NATURAL_AT_LEAST = 0.8
RELEVANT_AT_LEAST = 0.5


@dataclass(frozen=True)
class Doc:
    key: str
    genre: str  # laws, revisions, wiki, bbc-<section>
    text: str


def load_zh() -> list[Doc]:
    docs = [Doc(d.key, d.collection, d.text) for d in load_laws() + load_wiki()]
    seen = set()
    for pair in load_revision_pairs():
        for path, text in ((pair.older_path, pair.older), (pair.newer_path, pair.newer)):
            if path not in seen:
                seen.add(path)
                docs.append(Doc(f"revisions/{path.parent.name}/{path.stem}", "revisions", text))
    return docs


def _read(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def load_en(folder: Path) -> list[Doc]:
    paths = sorted(folder.glob("*/*.txt"))
    if not paths:
        raise SystemExit(f"no BBC articles (<section>/<nnn>.txt) under {folder}")
    return [Doc(f"bbc/{p.parent.name}/{p.stem}", f"bbc-{p.parent.name}", _read(p)) for p in paths]


# ---------------------------------------------------------------- ground truth


class Truth:
    """Exact shingle Jaccard of pairs of one set, computed when first asked."""

    def __init__(self, docs: list[Doc]):
        self.shingles = [shingles(d.text) for d in docs]
        self.known: dict[tuple[int, int], float] = {}

    def __call__(self, i: int, j: int) -> float:
        key = (min(i, j), max(i, j))
        if key not in self.known:
            self.known[key] = jaccard(self.shingles[key[0]], self.shingles[key[1]])
        return self.known[key]

    def candidates_by_minhash(self, threshold: float) -> set[tuple[int, int]]:
        """Pairs datasketch MinHashLSH puts together at ``threshold`` (128 permutations)."""
        from datasketch import MinHash, MinHashLSH

        lsh = MinHashLSH(threshold=threshold, num_perm=128)
        pairs = set()
        for i, grams in enumerate(self.shingles):
            signature = MinHash(num_perm=128)
            signature.update_batch([g.encode("utf-8", "surrogatepass") for g in grams])
            for j in lsh.query(signature):
                pairs.add((j, i))
            lsh.insert(i, signature)
        return pairs


# ---------------------------------------------------------------- methods


@dataclass(frozen=True)
class Method:
    label: str
    scheme: Scheme | None = None
    baseline: str | None = None  # "pypi-simhash"


def fingerprints(methods: list[Method], texts: list[str], jobs: int) -> dict[str, np.ndarray]:
    schemes = [m.scheme for m in methods if m.scheme]
    values = _fingerprint_schemes(schemes, texts, jobs) if schemes else {}
    result = {}
    for m in methods:
        result[m.label] = values[m.scheme.name] if m.scheme else _fingerprint_pypi(texts)
    return result


# ---------------------------------------------------------------- evaluation


@dataclass
class SetResult:
    recall: list[float]
    precision: list[float]
    returned: list[int]
    false_rate: list[float]
    laws_false_rate: list[float]
    variants: dict[str, list[float]]


# Above this many returned pairs (zh-jieba-v1 on English text, where every document has
# the fingerprint 0), precision and false matches are estimated on a sample of them.
MOST_CHECKED = 20_000


def natural(values: np.ndarray, docs: list[Doc], truth: Truth, natural_pairs: set, ks: list[int]) -> tuple:
    first, second, found = close_pairs(values, max(ks))
    weight = 1.0
    if len(first) > MOST_CHECKED:
        chosen = np.sort(np.random.default_rng(0).choice(len(first), MOST_CHECKED, replace=False))
        found_all = found
        first, second, found = first[chosen], second[chosen], found[chosen]
        weight = len(found_all) / MOST_CHECKED
    jac = np.array([truth(int(i), int(j)) for i, j in zip(first, second)])
    genre = np.array([d.genre for d in docs])
    n = len(docs)
    laws = int(np.count_nonzero(genre == "laws"))
    recall, precision, returned, false_rate, laws_rate = [], [], [], [], []
    for k in ks:
        inside = found <= k
        got = {(int(i), int(j)) for i, j in zip(first[inside], second[inside])}
        recall.append(
            len(got & natural_pairs) / max(len(natural_pairs), 1)
            if weight == 1.0
            else float(np.mean([distances(values[i : i + 1], values[j : j + 1])[0] <= k for i, j in natural_pairs]))
        )
        returned.append(round(np.count_nonzero(inside) * weight))
        precision.append(float(np.mean(jac[inside] >= RELEVANT_AT_LEAST)) if inside.any() else 1.0)
        unrelated = inside & (jac < UNRELATED_BELOW)
        false_rate.append(np.count_nonzero(unrelated) * weight / (n * (n - 1) / 2))
        in_laws = unrelated & (genre[first] == "laws") & (genre[second] == "laws")
        laws_rate.append(np.count_nonzero(in_laws) * weight / max(laws * (laws - 1) / 2, 1))
    return recall, precision, returned, false_rate, laws_rate


def exploration() -> list[Scheme]:
    """multi-v2 with one choice changed at a time."""
    base = SCHEMES["multi-v2"]
    return [
        replace(base, name="multi-x: lines kept (nfkc-casefold)", normalizer="nfkc-casefold"),
        replace(base, name="multi-x: linear tf (tfidf)", weighting="tfidf"),
        replace(base, name="multi-x: words only (bigram_weight 0)", bigram_weight=0.0),
        replace(base, name="multi-x: jieba segmenter", tokenizer="multi-jieba"),
    ]


def mixed_articles(zh: list[Doc], en: list[Doc], count: int) -> tuple[list[str], list[str]]:
    """Chinese articles with English paragraphs (30% of the characters) and the same with other English."""
    chinese = [d.text for d in zh if d.genre == "wiki"][:count]
    english = [d.text for d in en]
    firsts, seconds = [], []
    for i, text in enumerate(chinese):
        wanted = int(len(text) * 0.3 / 0.7)
        a = english[(3 * i) % len(english)]
        b = english[(3 * i + 1) % len(english)]
        paragraphs_a, paragraphs_b = _english_of_length(a, wanted), _english_of_length(b, wanted)
        middle = len(text) // 2
        firsts.append(text[:middle] + "\n" + paragraphs_a + "\n" + text[middle:])
        seconds.append(text[:middle] + "\n" + paragraphs_b + "\n" + text[middle:])
    return firsts, seconds


def _english_of_length(text: str, length: int) -> str:
    body = " ".join(text.split("\n")[1:]).split()
    out = []
    while len(" ".join(out)) < length and body:
        out.append(body.pop(0))
    return " ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--english", type=Path, default=Path(__file__).resolve().parent / ".cache" / "en-bbc" / "bbc")
    parser.add_argument("--every", type=int, default=2, help="synthetic variants of every n-th document")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--schemes", nargs="*", default=None, help="scheme names besides zh-jieba-v1")
    parser.add_argument("--no-minhash", action="store_true")
    parser.add_argument("--no-pypi", action="store_true")
    parser.add_argument("--explore", action="store_true", help="also the variations multi-v2 was chosen from")
    args = parser.parse_args()
    if args.explore:
        for scheme in exploration():
            SCHEMES.setdefault(scheme.name, scheme)

    sets = {"zh": load_zh(), "en": load_en(args.english)}
    methods = [Method("zh-jieba-v1", SCHEMES["zh-jieba-v1"])]
    for name in args.schemes or [
        s for s in SCHEMES if s.startswith("multi-") and (args.explore or not s.startswith("multi-x"))
    ]:
        methods.append(Method(name, SCHEMES[name]))
    if not args.no_pypi:
        methods.append(Method("simhash 2.1.2 (PyPI)", baseline="pypi-simhash"))
    kinds = list(LIGHT) + list(HEAVY) + list(TITLES)
    mixed_a, mixed_b = mixed_articles(sets["zh"], sets["en"], 500)

    # Every text of the run, fingerprinted once per method.
    texts: list[str] = []
    spans: dict[str, tuple[int, int]] = {}

    def add(label: str, items: list[str]) -> None:
        spans[label] = (len(texts), len(texts) + len(items))
        texts.extend(items)

    for name, docs in sets.items():
        add(name, [d.text for d in docs])
        sample = list(range(0, len(docs), args.every))
        for kind in kinds:
            add(
                f"{name}:{kind}",
                [make_variant(kind, docs[i].key, docs[i].text, docs[(i + 7) % len(docs)].text) for i in sample],
            )
    add("mixed:a", mixed_a)
    add("mixed:b", mixed_b)
    _progress(f"{len(texts)} texts, {sum(map(len, texts)) / 1e6:.1f} M characters, {len(methods)} methods")
    started = time.perf_counter()
    values = fingerprints(methods, texts, args.jobs)
    _progress(f"fingerprinted in {time.perf_counter() - started:.0f} s")

    def part(label: str, method: Method) -> np.ndarray:
        start, end = spans[label]
        return values[method.label][start:end]

    print(
        f"Near-duplicates in real crawls: {', '.join(f'{k} {len(v):,} documents' for k, v in sets.items())}; "
        f"variants of every {args.every}th; numpy {np.__version__}, jieba {version('jieba')}, rjieba {version('rjieba')}\n"
    )
    for name, docs in sets.items():
        truth = Truth(docs)
        started = time.perf_counter()
        candidates = truth.candidates_by_minhash(RELEVANT_AT_LEAST)
        lsh_08 = truth.candidates_by_minhash(NATURAL_AT_LEAST) if not args.no_minhash else set()
        minhash_seconds = time.perf_counter() - started
        all_returned = {}
        for m in methods:
            first, second, _ = close_pairs(part(name, m), max(KS))
            if len(first) <= MOST_CHECKED:  # else no help in finding natural pairs
                all_returned[m.label] = set(zip(first.tolist(), second.tolist()))
        pool = candidates | lsh_08 | set().union(set(), *all_returned.values())
        natural_pairs = {p for p in pool if truth(*p) >= NATURAL_AT_LEAST}
        _progress(
            f"{name}: {len(natural_pairs)} natural pairs with Jaccard >= {NATURAL_AT_LEAST} ({minhash_seconds:.0f} s of MinHash)"
        )
        n = len(docs)
        print(f"### {name}: {n:,} documents, {len(natural_pairs)} natural pairs with Jaccard >= {NATURAL_AT_LEAST}\n")
        rows = []
        results = {}
        for m in methods:
            recall, precision, returned, false_rate, laws_rate = natural(part(name, m), docs, truth, natural_pairs, KS)
            originals = part(name, m)[:: args.every]
            variant_recall = {}
            for kind in kinds:
                d = distances(originals, part(f"{name}:{kind}", m))
                variant_recall[kind] = [float(np.mean(d <= k)) for k in KS]
            results[m.label] = SetResult(recall, precision, returned, false_rate, laws_rate, variant_recall)
        if lsh_08:
            got = lsh_08
            jac = np.array([truth(*p) for p in got]) if got else np.zeros(0)
            laws = sum(1 for d in docs if d.genre == "laws")
            false_laws = sum(
                1 for (i, j) in got if truth(i, j) < UNRELATED_BELOW and docs[i].genre == docs[j].genre == "laws"
            )
            rows.append(
                [
                    "MinHashLSH t=0.8 (datasketch)",
                    "-",
                    f"{len(got & natural_pairs) / max(len(natural_pairs), 1):.3f}",
                    f"{np.mean(jac >= RELEVANT_AT_LEAST) if len(jac) else 1:.3f}",
                    len(got),
                    f"{np.count_nonzero(jac < UNRELATED_BELOW) / (n * (n - 1) / 2):.1e}",
                    f"{false_laws / max(laws * (laws - 1) / 2, 1):.1e}" if laws else "-",
                    "-",
                    "-",
                    "-",
                ]
            )
        for label, r in results.items():
            for k in KS:
                i = KS.index(k)
                light = np.mean([r.variants[kind][i] for kind in LIGHT])
                heavy = np.mean([r.variants[kind][i] for kind in HEAVY])
                rows.append(
                    [
                        label,
                        k,
                        f"{r.recall[i]:.3f}",
                        f"{r.precision[i]:.3f}",
                        r.returned[i],
                        f"{r.false_rate[i]:.1e}",
                        f"{r.laws_false_rate[i]:.1e}" if name == "zh" else "-",
                        f"{light:.3f}",
                        f"{heavy:.3f}",
                        f"{r.variants['retitle'][i]:.3f}",
                    ]
                )
        print(
            _markdown(
                [
                    "method",
                    "k",
                    "natural recall (J>=0.8)",
                    "precision (J>=0.5)",
                    "pairs returned",
                    "false / unrelated pair",
                    "false / pair of laws",
                    "light",
                    "heavy",
                    "retitled",
                ],
                rows,
            )
        )
        print(f"\nPer variant kind ({name}), recall at k = 7 / 9 / 11:\n")
        by_kind = [
            [label] + ["/".join(f"{r.variants[kind][KS.index(k)]:.2f}" for k in (7, 9, 11)) for kind in kinds]
            for label, r in results.items()
        ]
        print(_markdown(["method"] + kinds, by_kind))
        print()
    print("### Mixed articles: share of pairs more than k bits apart (English paragraphs replaced)\n")
    rows = []
    for m in methods:
        d = distances(part("mixed:a", m), part("mixed:b", m))
        rows.append([m.label] + [f"{np.mean(d > k):.3f}" for k in (7, 9, 11)] + [f"{np.median(d):.0f}"])
    print(_markdown(["method", "k = 7", "k = 9", "k = 11", "median distance"], rows))
    print(f"\n{len(mixed_a)} articles; {os.cpu_count()} CPUs.")


if __name__ == "__main__":
    main()
