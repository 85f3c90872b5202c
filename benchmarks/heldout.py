"""Held-out quality: the default scheme on variants it was not chosen on, with the spread over seeds.

zh-jieba-v1 and DEFAULT_MAX_DISTANCE were chosen on the variants of ``SELECTION_SEED``
(``quality.py``'s default draw). This script draws the same kinds of variants with other
seeds (``holdout-1`` to ``holdout-5``; nothing may be chosen on them) and prints, in one run:

* light and heavy recall per k around the default k: the selection seed beside the mean
  and min-max over the held-out seeds, all documents and per collection;
* the same at the default k for the ablations of ``quality.py`` that share the default's
  segmentation (one choice changed at a time), to see whether their ranking holds;
* false matches. Among the originals they do not depend on the seed (variants play no
  part), so they are counted once, on all 1,704 originals. New negatives are the law
  revision texts, which no choice looked at: every pair of a revision text with an
  original or another revision text, less pairs of the same law and pairs sharing 20%
  or more of their 5-character shingles;
* the law revision pairs: the share within k by shingle Jaccard of the two versions.

Every variant costs a jieba segmentation (0.1-0.4 MB/s for one process on the shared
2-core VM), so recall is measured on every fourth document by default. That is 3,834
variants a draw. A cold run of the default alone (``--only``) takes 15-20 minutes there;
each ablation adds 10-30% of the segmentation time. Segmentations are cached in
benchmarks/.cache/ as quality.py caches them.

    python benchmarks/heldout.py                        # every fourth document, 5 held-out seeds
    python benchmarks/heldout.py --every 1 --seeds 3    # all documents, fewer seeds
    python benchmarks/heldout.py --only                 # the default scheme only
    python benchmarks/heldout.py --only known_words min_token bigram_weight   # and the three choices
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

# These figures are about zh-jieba-v1, the default they chose (multi-v2, the default since,
# is measured by crawl_quality.py).
from simhash_store.scheme import DEFAULT_MAX_DISTANCE  # noqa: E402
from simhash_store.scheme import ZH_JIEBA_V1 as DEFAULT  # noqa: E402

from quality import (  # noqa: E402
    MAX_K,
    SELECTION_SEED,
    TARGET_FALSE_MATCHES,
    TARGET_HEAVY,
    TARGET_LIGHT,
    UNRELATED_BELOW,
    Method,
    Overlap,
    Result,
    _markdown,
    _progress,
    _rate,
    ablations,
    close_pairs,
    collection_members,
    distances,
    fingerprint_all,
    make_variants,
    recall_by_kind,
    unrelated_close_pairs,
    unrelated_pair_counts,
)
from shared_corpus import CORPUS, Document, load_laws, load_revision_pairs, load_wiki  # noqa: E402
from variants import KINDS  # noqa: E402

# Seeds no setting was chosen on. dedup_speed.py reports on holdout-1 too.
HELD_OUT_SEEDS = tuple(f"holdout-{n}" for n in range(1, 6))
REVISION_BUCKETS = [(0.9, 1.01), (0.7, 0.9), (0.4, 0.7), (0.0, 0.4)]


def _load() -> str:
    return "{:.1f}/{:.1f}/{:.1f}".format(*os.getloadavg())


def methods(only: list[str] | None) -> list[Method]:
    """The default, and the ablations that reuse its segmentation (HMM off and another
    normaliser would each cost a segmentation of every variant again), those whose
    label holds one of ``only`` if given."""
    shared = [m for m in ablations() if (m.scheme.normalizer, m.scheme.hmm) == (DEFAULT.normalizer, DEFAULT.hmm)]
    if only is not None:
        shared = [m for m in shared if any(part in m.label for part in only)]
    return [Method(DEFAULT.name, scheme=DEFAULT)] + shared


# ---------------------------------------------------------------- recall on one draw


def recall_on_seed(
    chosen: list[Method],
    laws: list[Document],
    wiki: list[Document],
    originals: dict[str, np.ndarray],
    seed: str,
    jobs: int,
) -> dict[str, Result]:
    """Every method's recall on the variants of ``seed`` of these documents (originals already fingerprinted)."""
    started = time.perf_counter()
    variant_texts = make_variants(laws, wiki, seed)
    texts = [t for kind in KINDS for t in variant_texts[kind]]
    _progress(f"seed {seed!r}: {len(texts)} variants, {sum(map(len, texts)) / 1e6:.1f} M characters, load {_load()}")
    values = fingerprint_all(chosen, texts, jobs)
    n = len(laws) + len(wiki)
    members = collection_members(laws + wiki)
    out = {}
    for method in chosen:
        v = values[method.label]
        variants = {kind: v[n * i : n * (i + 1)] for i, kind in enumerate(KINDS)}
        out[method.label] = result = Result(method.label)
        result.recall = {c: recall_by_kind(originals[method.label], variants, mask) for c, mask in members.items()}
    _progress(f"  seed {seed!r} done in {time.perf_counter() - started:.0f} s")
    return out


# ---------------------------------------------------------------- false matches


@dataclass
class FalseMatches:
    """Counts by k = 0..MAX_K and the number of unrelated pairs they are out of."""

    counts: list[int]
    pairs: int

    def rate(self, k: int) -> float:
        return self.counts[k] / self.pairs


def _counts_by_k(found: np.ndarray) -> list[int]:
    return [int(np.count_nonzero(found <= k)) for k in range(MAX_K + 1)]


def _law_of(document: Document) -> str:
    """The law (or paragraph) a document is a text of: keys are laws/<law>, wiki/<id>, revisions/<law>/<date>."""
    return document.key.split("/")[1]


def revision_close_pairs(
    values: np.ndarray, everything: list[Document], first_revision: int, overlap: Overlap
) -> np.ndarray:
    """Distances of the unrelated pairs within MAX_K that include a revision text.

    ``values`` and ``everything`` hold the originals, then the revision texts from
    ``first_revision`` on. Versions of one law are related whatever their overlap, so
    those pairs are left out, as are pairs sharing ``UNRELATED_BELOW`` or more of their shingles.
    """
    first, second, found = close_pairs(values, MAX_K)
    keep = [
        j >= first_revision and _law_of(everything[i]) != _law_of(everything[j]) and overlap(i, j) < UNRELATED_BELOW
        for i, j in zip(first.tolist(), second.tolist())
    ]
    return found[np.array(keep, bool)]


def revision_pair_count(everything: list[Document], first_revision: int, overlap: Overlap) -> int:
    """Pairs with a revision text, less same-law pairs and the related pairs found so far (call it last)."""
    total, revisions = len(everything), len(everything) - first_revision
    laws = [_law_of(d) for d in everything]
    same_law = sum(1 for j in range(first_revision, total) for i in range(j) if laws[i] == laws[j])
    related = sum(1 for i, j in overlap.related_pairs() if j >= first_revision and laws[i] != laws[j])
    return revisions * first_revision + revisions * (revisions - 1) // 2 - same_law - related


def false_matches(
    chosen: list[Method], documents: list[Document], revisions: list[Document], values: dict[str, np.ndarray]
) -> tuple[dict[str, FalseMatches], dict[str, FalseMatches]]:
    """Every method's false matches among the originals, and in pairs with a revision text."""
    n = len(documents)
    overlap = Overlap(documents)
    close = {m.label: unrelated_close_pairs(values[m.label][:n], overlap)[2] for m in chosen}
    unrelated = unrelated_pair_counts(documents, overlap)["all"]
    among_originals = {label: FalseMatches(_counts_by_k(found), unrelated) for label, found in close.items()}
    everything = documents + revisions
    overlap = Overlap(everything)
    close = {m.label: revision_close_pairs(values[m.label], everything, n, overlap) for m in chosen}
    unrelated = revision_pair_count(everything, n, overlap)
    with_revisions = {label: FalseMatches(_counts_by_k(found), unrelated) for label, found in close.items()}
    return among_originals, with_revisions


# ---------------------------------------------------------------- report


def _spread(values: list[float]) -> str:
    return f"{np.mean(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def _delta(held_out: list[float], selection: float) -> str:
    return f"{np.mean(held_out) - selection:+.3f}"


def report(
    chosen: list[Method],
    selection: dict[str, Result],
    held_out: list[dict[str, Result]],
    originals_false: dict[str, FalseMatches],
    revision_false: dict[str, FalseMatches],
    revision_distances: dict[str, np.ndarray],
    revision_jaccards: np.ndarray,
    ks: list[int],
    sizes: tuple[int, int],
    seeds: tuple[str, ...],
) -> str:
    default = DEFAULT.name
    k0 = DEFAULT_MAX_DISTANCE
    out = [f"### {default} by k: selection seed against {len(seeds)} held-out seeds, mean [min-max]\n"]
    rows = []
    for k in ks:
        s, h = selection[default], [x[default] for x in held_out]
        light, heavy = [x.light("all")[k] for x in h], [x.heavy("all")[k] for x in h]
        rows.append(
            [
                f"**{k}**" if k == k0 else k,
                f"{s.light('all')[k]:.3f}",
                _spread(light),
                _delta(light, s.light("all")[k]),
                f"{s.heavy('all')[k]:.3f}",
                _spread(heavy),
                _delta(heavy, s.heavy("all")[k]),
                f"{sum(v >= TARGET_LIGHT for v in light)} / {len(light)}",
                f"{originals_false[default].counts[k]} ({_rate(originals_false[default].rate(k))})",
                f"{revision_false[default].counts[k]} ({_rate(revision_false[default].rate(k))})",
            ]
        )
    out.append(
        _markdown(
            [
                "k",
                "light, selection",
                "light, held-out",
                "change",
                "heavy, selection",
                "heavy, held-out",
                "change",
                f"held-out seeds with light >= {TARGET_LIGHT}",
                "false matches, originals",
                "false matches, revision texts",
            ],
            rows,
        )
    )

    out.append(f"\n### {default} per collection: selection seed / held-out mean [min-max]\n")
    rows = []
    for k in ks:
        cells = [f"**{k}**" if k == k0 else k]
        for collection in ("laws", "wiki"):
            for part in ("light", "heavy"):
                held = [getattr(x[default], part)(collection)[k] for x in held_out]
                cells.append(f"{getattr(selection[default], part)(collection)[k]:.3f} / {_spread(held)}")
        rows.append(cells)
    out.append(_markdown(["k", "laws light", "laws heavy", "wiki light", "wiki heavy"], rows))

    if len(chosen) > 1:
        out.append(f"\n### Ablations at k = {k0}: selection seed, held-out mean [min-max]\n")
        rows = []
        for method in chosen:
            light = [x[method.label].light("all")[k0] for x in held_out]
            heavy = [x[method.label].heavy("all")[k0] for x in held_out]
            rows.append(
                [
                    f"**{method.label}**" if method.label == default else method.label,
                    f"{selection[method.label].light('all')[k0]:.3f}",
                    _spread(light),
                    f"{selection[method.label].heavy('all')[k0]:.3f}",
                    _spread(heavy),
                    _rate(originals_false[method.label].rate(k0)),
                    revision_false[method.label].counts[k0],
                ]
            )
        out.append(
            _markdown(
                [
                    "method",
                    "light, selection",
                    "light, held-out",
                    "heavy, selection",
                    "heavy, held-out",
                    "false/pair, originals",
                    "false matches, revision texts",
                ],
                rows,
            )
        )

    out.append(f"\n### Law revision pairs: share within k by shingle Jaccard of the two versions ({default})\n")
    d = revision_distances[default]
    header = ["k"] + [
        f"J {low:.1f}-{min(high, 1):.1f} ({np.count_nonzero((revision_jaccards >= low) & (revision_jaccards < high))})"
        for low, high in REVISION_BUCKETS
    ]
    rows = []
    for k in ks:
        rows.append(
            [f"**{k}**" if k == k0 else k]
            + [
                f"{np.mean(d[(revision_jaccards >= low) & (revision_jaccards < high)] <= k):.2f}"
                for low, high in REVISION_BUCKETS
            ]
        )
    out.append(_markdown(header, rows))
    laws, wiki = sizes
    out.append(
        f"\nRecall: {laws} laws + {wiki} Wikipedia paragraphs, one variant of each of {len(KINDS)} kinds per draw; "
        f"selection seed {SELECTION_SEED!r}, held-out seeds {', '.join(seeds)}. "
        f"False matches among originals: all of them, {originals_false[default].pairs:,} unrelated pairs (seed-independent). "
        f"Revision texts: {revision_false[default].pairs:,} unrelated pairs with at least one of them. "
        f"Targets: light >= {TARGET_LIGHT}, heavy >= {TARGET_HEAVY}, false matches <= {TARGET_FALSE_MATCHES:.0e} per pair."
    )
    return "\n".join(out)


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=4, help="recall on every n-th document (false matches use all)")
    parser.add_argument("--seeds", type=int, default=len(HELD_OUT_SEEDS), help="how many held-out seeds (at most 5)")
    parser.add_argument("--only", nargs="*", help="ablations whose label holds one of these (none: the default only)")
    parser.add_argument("--jobs", type=int, default=1, help="processes for segmentation (the machine is shared)")
    parser.add_argument("--json", type=Path, help="write every number to this JSON file")
    args = parser.parse_args()
    if not 1 <= args.seeds <= len(HELD_OUT_SEEDS):
        parser.error(f"--seeds must be 1 to {len(HELD_OUT_SEEDS)}")
    if args.every < 1:
        parser.error("--every must be 1 or more")
    seeds = HELD_OUT_SEEDS[: args.seeds]
    chosen = methods(args.only)
    started, load_at_start = time.perf_counter(), _load()

    # Originals and revision texts: fingerprinted once, whatever the seed.
    laws, wiki = load_laws(), load_wiki()
    documents = laws + wiki
    pairs = load_revision_pairs()
    revision_paths = sorted({path for pair in pairs for path in (pair.older_path, pair.newer_path)})
    revisions = [
        Document(f"revisions/{path.parent.name}/{path.stem}", "revisions", path.read_text(encoding="utf-8"))
        for path in revision_paths
    ]
    revision_jaccards = np.array([p.jaccard for p in pairs])
    _progress(f"{len(documents)} originals, {len(revisions)} revision texts, {len(chosen)} methods, load {_load()}")
    values = fingerprint_all(chosen, [d.text for d in documents] + [d.text for d in revisions], args.jobs)

    n = len(documents)
    originals_false, revision_false = false_matches(chosen, documents, revisions, values)
    position = {path: n + i for i, path in enumerate(revision_paths)}
    revision_distances = {
        m.label: distances(
            values[m.label][[position[p.older_path] for p in pairs]],
            values[m.label][[position[p.newer_path] for p in pairs]],
        )
        for m in chosen
    }

    # Recall: the variants of every n-th document, drawn with each seed.
    law_rows, wiki_rows = list(range(len(laws)))[:: args.every], list(range(len(wiki)))[:: args.every]
    subset = np.array(law_rows + [len(laws) + i for i in wiki_rows])
    sub_laws, sub_wiki = [laws[i] for i in law_rows], [wiki[i] for i in wiki_rows]
    originals = {m.label: values[m.label][subset] for m in chosen}
    selection = recall_on_seed(chosen, sub_laws, sub_wiki, originals, SELECTION_SEED, args.jobs)
    held_out = [recall_on_seed(chosen, sub_laws, sub_wiki, originals, seed, args.jobs) for seed in seeds]

    ks = list(range(DEFAULT_MAX_DISTANCE - 3, min(DEFAULT_MAX_DISTANCE + 1, MAX_K) + 1))
    print(
        f"Held-out quality, {os.cpu_count()} CPUs, load average {load_at_start} at the start and {_load()} at the end, "
        f"{time.perf_counter() - started:.0f} s; numpy {np.__version__}, jieba {version('jieba')}; corpus {CORPUS}\n"
    )
    print(
        report(
            chosen,
            selection,
            held_out,
            originals_false,
            revision_false,
            revision_distances,
            revision_jaccards,
            ks,
            (len(sub_laws), len(sub_wiki)),
            seeds,
        )
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "every": args.every,
                    "selection_seed": SELECTION_SEED,
                    "held_out_seeds": list(seeds),
                    "selection": {label: r.__dict__ for label, r in selection.items()},
                    "held_out": [{label: r.__dict__ for label, r in x.items()} for x in held_out],
                    "false_matches_originals": {label: f.__dict__ for label, f in originals_false.items()},
                    "false_matches_revision_texts": {label: f.__dict__ for label, f in revision_false.items()},
                    "revision_distances": {label: d.tolist() for label, d in revision_distances.items()},
                    "revision_jaccards": revision_jaccards.tolist(),
                },
                ensure_ascii=False,
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
