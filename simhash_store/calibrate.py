"""Choosing k on one's own documents: recall of light and heavy variants, and false matches, per distance. Pure.

A sample of documents gets the benchmark's variants (:mod:`variants`): light ones
(boilerplate, reflow, one sentence dropped or inserted, 1% typos) that should be found,
and heavy ones (3% typos, a tenth of the sentences dropped, truncation, boilerplate with
typos) that one may want found. For each k: the share of variants within k of their
original, and the share of pairs of different sampled documents within k (false matches,
unless the corpus holds near-duplicates of its own: ``dups`` shows them).
"""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .errors import ConfigError
from .fingerprint import fingerprint_if_any
from .pairs import near_pairs
from .plural import counted
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


@dataclass
class Calibration:
    documents: int
    pairs: int
    rows: list[Row]
    recommended: int
    reason: str
    light_by_kind: dict[str, list[float]] = field(default_factory=dict)
    heavy_by_kind: dict[str, list[float]] = field(default_factory=dict)


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
) -> Calibration:
    """Recall and false matches per k on up to ``sample`` of ``texts`` ((key, text) pairs), and a recommended k.

    The recommendation is the smallest k at which light variants reach ``light_target``
    and heavy ones ``heavy_target`` within the false-match budget; failing that, the
    largest k within the budget (the most recall it allows).
    """
    scheme = get_scheme(scheme)
    if sample < 2:
        raise ValueError(f"sample must be at least 2, not {sample}")
    if not 0 <= max_k <= 64:
        raise ValueError(f"max_k must be between 0 and 64, not {max_k}")
    chosen: list[tuple[str, str, int]] = []
    rng = random.Random(f"calibrate|{seed}")
    candidates = list(texts)
    rng.shuffle(candidates)
    for key, text in candidates:
        value = fingerprint_if_any(text, scheme)
        if value is not None:
            chosen.append((key, text, value))
        if len(chosen) == sample:
            break
    if len(chosen) < 2:
        raise ValueError("calibration needs at least two documents with text")
    ks = np.arange(max_k + 1)
    originals = np.array([value for _, _, value in chosen], dtype=np.uint64)

    def recall(kinds) -> dict[str, list[float]]:
        by_kind = {}
        for kind in kinds:
            distances = []
            for n, (key, text, value) in enumerate(chosen):
                donor = chosen[(n + 1) % len(chosen)][1]
                variant = fingerprint_if_any(make_variant(kind, key, text, donor, seed), scheme)
                distances.append(64 if variant is None else bin(variant ^ value).count("1"))
            by_kind[kind] = ((np.array(distances)[:, None] <= ks).mean(axis=0)).tolist()
        return by_kind

    light, heavy = recall(LIGHT), recall(HEAVY)
    _, _, pair_distances = near_pairs(originals, max_k)
    false_counts = np.cumsum(np.bincount(pair_distances, minlength=max_k + 1)[: max_k + 1])
    pairs = len(chosen) * (len(chosen) - 1) // 2
    rows = [
        Row(int(k), float(np.mean([v[k] for v in light.values()])), float(np.mean([v[k] for v in heavy.values()])),
            int(false_counts[k]), float(false_counts[k] / pairs))
        for k in ks
    ]
    within = [row for row in rows if row.false_match_rate <= false_match_budget]
    good = [row for row in within if row.light_recall >= light_target and row.heavy_recall >= heavy_target]
    if good:
        recommended, reason = good[0].k, (
            f"the smallest k with light recall >= {light_target:.0%}, heavy >= {heavy_target:.0%} "
            f"and false matches <= {false_match_budget:g} of pairs"
        )
    elif within:
        recommended, reason = within[-1].k, (
            f"no k reaches the recall targets within the false-match budget ({false_match_budget:g} of pairs): "
            "the largest k within it"
        )
    else:
        recommended, reason = 0, "even k = 0 exceeds the false-match budget: the sample holds exact duplicates"
    return Calibration(len(chosen), pairs, rows, recommended, reason, light, heavy)


def check_plot(path: str) -> None:
    """Whether :func:`plot` can draw into ``path``, asked before the work it would draw: matplotlib is
    installed, and ``path`` names a file in a directory this process may write; else ConfigError."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'simhash-store[plot]'") from None
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ConfigError(f"cannot write the plot to {path}: it is a directory")
    if not os.path.isdir(directory):
        raise ConfigError(f"cannot write the plot to {path}: there is no directory {directory}")
    if not os.access(directory, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ConfigError(f"cannot write the plot to {path}: permission denied")


def plot(calibration: Calibration, path: str, title: str = "") -> None:
    """Recall and false matches against k as a PNG (matplotlib: ``pip install 'simhash-store[plot]'``).

    Drawn into a new file of its own beside ``path`` and renamed into place when complete, so a
    failure leaves no half-written PNG, and a file or link put at ``path`` is replaced, not written through.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [row.k for row in calibration.rows]
    figure, recall_axes = plt.subplots(figsize=(8, 4.8), dpi=110)
    for kind, values in calibration.light_by_kind.items():
        recall_axes.plot(ks, values, color="tab:blue", alpha=0.25, linewidth=1)
    for kind, values in calibration.heavy_by_kind.items():
        recall_axes.plot(ks, values, color="tab:orange", alpha=0.25, linewidth=1, linestyle="--")
    recall_axes.plot(ks, [r.light_recall for r in calibration.rows], color="tab:blue", linewidth=2.5, label="light variants")
    recall_axes.plot(ks, [r.heavy_recall for r in calibration.rows], color="tab:orange", linewidth=2.5,
                     linestyle="--", label="heavy variants")
    recall_axes.set(xlabel="max distance k (bits)", ylabel="recall", ylim=(0, 1.02), xlim=(0, ks[-1]))
    false_axes = recall_axes.twinx()
    false_axes.plot(ks, [max(r.false_match_rate, 1e-7) for r in calibration.rows], color="tab:red", linewidth=2,
                    label="false matches (share of pairs)")
    false_axes.set_yscale("log")
    false_axes.set_ylim(1e-7, 1)
    false_axes.set_ylabel("false matches (share of pairs, log)")
    recall_axes.axvline(calibration.recommended, color="black", linestyle=":", label=f"recommended k = {calibration.recommended}")
    lines = recall_axes.get_legend_handles_labels()
    more = false_axes.get_legend_handles_labels()
    recall_axes.legend(lines[0] + more[0], lines[1] + more[1], loc="center right", fontsize=8)
    recall_axes.set_title(title or f"{counted(calibration.documents, 'document')}, {counted(calibration.pairs, 'pair', grouped=True)}")
    figure.tight_layout()
    directory, name = os.path.split(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(descriptor, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        with os.fdopen(descriptor, "wb") as file:
            figure.savefig(file, format="png")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    finally:
        plt.close(figure)


__all__ = ["Calibration", "Row", "calibrate", "plot"]
