"""Choosing k on one's own documents: recall of light and heavy variants, and false matches, per distance. Pure.

A sample of documents gets the benchmark's variants (:mod:`variants`): light ones
(boilerplate, reflow, one sentence dropped or inserted, 1% typos) that should be found,
and heavy ones (3% typos, a tenth of the sentences dropped, truncation, boilerplate with
typos) that one may want found. For each k: the share of variants within k of their
original, and the share of pairs of different sampled documents within k whose texts are
not near-duplicates (false matches).

A real corpus holds near-duplicates of its own (reposts, revisions), and a sample may draw
both copies. So each pair of sampled documents within ``max_k`` is checked against the text
(:mod:`overlap`): texts with a shingle Jaccard >= 0.5, or one at least 0.8 inside the other,
are duplicates in the sample, listed and not counted as false matches, so that they cannot
push the recommended k down.
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import OutputError
from .fingerprint import fingerprint_if_any
from .formats.output import OutputFile
from .overlap import Overlap, overlap_of, shingles
from .ownership import links_replaceable
from .pairs import near_pairs
from .plural import counted
from .progress import OnProgress
from .scheme import DEFAULT, Scheme, get_scheme
from .variants import HEAVY, LIGHT, make_variant

MAX_K = 20
LIGHT_TARGET = 0.95
HEAVY_TARGET = 0.80
FALSE_MATCH_BUDGET = 1e-4  # of all pairs of different documents


@dataclass(frozen=True)
class Row:
    k: int
    light_recall: float
    heavy_recall: float
    false_matches: int
    false_match_rate: float


@dataclass(frozen=True)
class SampledPair:
    """Two sampled documents within ``max_k`` of each other, and the text they really share."""

    key_a: str
    key_b: str
    distance: int
    overlap: Overlap

    def to_dict(self) -> dict[str, Any]:
        return {"key_a": self.key_a, "key_b": self.key_b, "distance": self.distance, **self.overlap.to_dict()}


@dataclass
class Calibration:
    documents: int
    pairs: int
    rows: list[Row]
    recommended: int
    reason: str
    light_by_kind: dict[str, list[float]] = field(default_factory=dict)
    heavy_by_kind: dict[str, list[float]] = field(default_factory=dict)
    false_match_pairs: list[SampledPair] = field(default_factory=list)  # counted as false matches, nearest first
    duplicates: list[SampledPair] = field(default_factory=list)  # near-duplicate texts in the sample: not counted
    without_features: int = 0  # texts drawn but left out: no features, so no fingerprint


def calibrate(
    texts: Sequence[tuple[str, str]],
    scheme: Scheme | str = DEFAULT,
    *,
    sample: int = 200,
    seed: str = "",
    max_k: int = MAX_K,
    light_target: float = LIGHT_TARGET,
    heavy_target: float = HEAVY_TARGET,
    false_match_budget: float = FALSE_MATCH_BUDGET,
    on_progress: OnProgress | None = None,
) -> Calibration:
    """Recall and false matches per k on up to ``sample`` of ``texts`` ((key, text) pairs), and a recommended k.

    The recommendation is the smallest k at which light variants reach ``light_target``
    and heavy ones ``heavy_target`` within the false-match budget; failing that, the
    largest k within the budget (the most recall it allows). A pair of sampled documents
    whose texts are near-duplicates (see :mod:`overlap`) is no false match: it is listed in
    ``duplicates``; the pairs counted are in ``false_match_pairs``. ``on_progress(done, total)``
    counts the fingerprints computed: the sample's, then its variants'.
    """
    scheme = get_scheme(scheme)
    if sample < 2:
        raise ValueError(f"sample must be at least 2, not {sample}")
    if not 0 <= max_k <= 64:
        raise ValueError(f"max_k must be between 0 and 64, not {max_k}")
    chosen: list[tuple[str, str, int]] = []
    positions: list[int] = []  # of each chosen text in ``texts``: pairs are listed in input order
    without_features = 0
    rng = random.Random(f"calibrate|{seed}")
    candidates = list(enumerate(texts))
    rng.shuffle(candidates)
    per_document = 1 + len(LIGHT) + len(HEAVY)  # its own fingerprint and its variants'
    done = 0

    def report(total: int) -> None:
        if on_progress is not None:
            on_progress(done, total)

    for position, (key, text) in candidates:
        value = fingerprint_if_any(text, scheme)
        if value is not None:
            chosen.append((key, text, value))
            positions.append(position)
            done += 1
            report(min(sample, len(candidates)) * per_document)
        else:
            without_features += 1
        if len(chosen) == sample:
            break
    if len(chosen) < 2:
        raise ValueError("calibration needs at least two documents with text")
    ks = np.arange(max_k + 1)
    originals = np.array([value for _, _, value in chosen], dtype=np.uint64)

    def recall(kinds: Iterable[str]) -> dict[str, list[float]]:
        nonlocal done
        by_kind: dict[str, list[float]] = {}
        for kind in kinds:
            distances = []
            for n, (key, text, value) in enumerate(chosen):
                donor = chosen[(n + 1) % len(chosen)][1]
                variant = fingerprint_if_any(make_variant(kind, key, text, donor, seed), scheme)
                distances.append(64 if variant is None else bin(variant ^ value).count("1"))
                done += 1
                report(len(chosen) * per_document)
            by_kind[kind] = ((np.array(distances)[:, None] <= ks).mean(axis=0)).tolist()
        return by_kind

    light, heavy = recall(LIGHT), recall(HEAVY)
    false_matches, duplicates = _checked_pairs(chosen, positions, originals, max_k, scheme.normalizer)
    false_distances = np.array([pair.distance for pair in false_matches], dtype=np.int64)
    false_counts = np.cumsum(np.bincount(false_distances, minlength=max_k + 1)[: max_k + 1])
    pairs = len(chosen) * (len(chosen) - 1) // 2
    rows = [
        Row(
            int(k),
            float(np.mean([v[k] for v in light.values()])),
            float(np.mean([v[k] for v in heavy.values()])),
            int(false_counts[k]),
            float(false_counts[k] / pairs),
        )
        for k in ks
    ]
    within = [row for row in rows if row.false_match_rate <= false_match_budget]
    good = [row for row in within if row.light_recall >= light_target and row.heavy_recall >= heavy_target]
    if good:
        recommended, reason = (
            good[0].k,
            (
                f"the smallest k with light recall >= {light_target:.0%}, heavy >= {heavy_target:.0%} "
                f"and false matches <= {false_match_budget:g} of pairs"
            ),
        )
    elif within:
        recommended, reason = (
            within[-1].k,
            (
                f"no k reaches the recall targets within the false-match budget ({false_match_budget:g} of pairs): "
                "the largest k within it"
            ),
        )
    else:
        recommended, reason = (
            0,
            ("even k = 0 exceeds the false-match budget: different texts in the sample have the same fingerprint"),
        )
    return Calibration(
        len(chosen), pairs, rows, recommended, reason, light, heavy, false_matches, duplicates, without_features
    )


def _checked_pairs(
    chosen: list[tuple[str, str, int]], positions: list[int], originals: np.ndarray, max_k: int, normalizer: str
) -> tuple[list[SampledPair], list[SampledPair]]:
    """The pairs of sampled documents within ``max_k``, checked against their text: (false matches, duplicates)."""
    left, right, distances = near_pairs(originals, max_k)
    cache: dict[int, np.ndarray] = {}  # shingles of the documents in some pair: few, unless the sample is all copies

    def shingles_of(index: int) -> np.ndarray:
        if index not in cache:
            cache[index] = shingles(chosen[index][1], normalizer)
        return cache[index]

    found: list[tuple[int, int, int, SampledPair]] = []
    for a, b, distance in zip(left.tolist(), right.tolist(), distances.tolist()):
        a, b = sorted((a, b), key=positions.__getitem__)  # the earlier input first
        pair = SampledPair(chosen[a][0], chosen[b][0], distance, overlap_of(shingles_of(a), shingles_of(b)))
        found.append((distance, positions[a], positions[b], pair))
    found.sort(key=lambda item: item[:3])  # nearest first, then in input order
    false_matches = [pair for *_, pair in found if not pair.overlap.near_duplicate]
    duplicates = [pair for *_, pair in found if pair.overlap.near_duplicate]
    return false_matches, duplicates


def check_plot(path: str | os.PathLike[str]) -> None:
    """Raise :class:`OutputError` unless :func:`plot` can write ``path``: before the work, not after it.

    matplotlib must import, the extension name a format it writes (none: PNG), and a file
    must be creatable in the directory (a temporary one is made and removed).
    """
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise OutputError("the plot needs matplotlib: pip install 'simhash-store[plot]'") from None
    target = Path(path)
    kind = _plot_format(target)
    if kind not in FigureCanvasBase.get_supported_filetypes():
        raise OutputError(f"cannot write {path}: matplotlib writes no {kind!r} files (use .png, .svg or .pdf)")
    if target.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    repointable = links_replaceable(target.parent) if target.parent.is_dir() else None
    if repointable:  # refused by the plot's OutputFile too: said before the work, nothing made there
        raise OutputError(
            f"cannot write {path}: {repointable}, who could send the output where they choose; "
            "write to a directory reached through links of your own"
        )
    try:
        descriptor, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(descriptor)
        os.unlink(name)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _plot_format(path: Path) -> str:
    return path.suffix[1:].lower() or "png"


def plot(calibration: Calibration, path: str, title: str = "") -> None:
    """Recall and false matches against k as a PNG, or the format the extension names (matplotlib:
    ``pip install 'simhash-store[plot]'``; :func:`check_plot` tells beforehand whether it can be written)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # matplotlib reads a matplotlibrc in the working directory when it is imported: in a directory
    # others may write (/tmp, a shared folder) another user's file would set the plot's settings
    # (a savefig.dpi that made savefig fail with a traceback, curves drawn invisible, figure hooks).
    # The plot is drawn with matplotlib's own defaults, whatever file was read.
    with plt.style.context("default"):
        _draw(calibration, path, title, plt)


def _draw(calibration: Calibration, path: str, title: str, plt: Any) -> None:
    ks = [row.k for row in calibration.rows]
    figure, recall_axes = plt.subplots(figsize=(8, 4.8), dpi=110)
    for values in calibration.light_by_kind.values():
        recall_axes.plot(ks, values, color="tab:blue", alpha=0.25, linewidth=1)
    for values in calibration.heavy_by_kind.values():
        recall_axes.plot(ks, values, color="tab:orange", alpha=0.25, linewidth=1, linestyle="--")
    recall_axes.plot(
        ks, [r.light_recall for r in calibration.rows], color="tab:blue", linewidth=2.5, label="light variants"
    )
    recall_axes.plot(
        ks,
        [r.heavy_recall for r in calibration.rows],
        color="tab:orange",
        linewidth=2.5,
        linestyle="--",
        label="heavy variants",
    )
    recall_axes.set(xlabel="max distance k (bits)", ylabel="recall", ylim=(0, 1.02), xlim=(0, ks[-1]))
    false_axes = recall_axes.twinx()
    false_axes.plot(
        ks,
        [max(r.false_match_rate, 1e-7) for r in calibration.rows],
        color="tab:red",
        linewidth=2,
        label="false matches (share of pairs)",
    )
    false_axes.set_yscale("log")
    false_axes.set_ylim(1e-7, 1)
    false_axes.set_ylabel("false matches (share of pairs, log)")
    recall_axes.axvline(
        calibration.recommended, color="black", linestyle=":", label=f"recommended k = {calibration.recommended}"
    )
    lines = recall_axes.get_legend_handles_labels()
    more = false_axes.get_legend_handles_labels()
    recall_axes.legend(lines[0] + more[0], lines[1] + more[1], loc="center right", fontsize=8)
    recall_axes.set_title(
        title or f"{counted(calibration.documents, 'document')}, {counted(calibration.pairs, 'pair', grouped=True)}"
    )
    figure.tight_layout()
    # Written as every output file is (:mod:`output`): a new name of its own beside it, renamed into
    # place when whole; a name planted in advance is not followed; one run at a time per file.
    try:
        with OutputFile(str(path), binary=True) as output:
            figure.savefig(output.file, format=_plot_format(Path(path)))
    finally:
        plt.close(figure)


__all__ = ["Calibration", "Row", "SampledPair", "calibrate", "check_plot", "plot"]
