"""What the commands print: matches, pairs, clusters, the add summary, the progress bar."""

from __future__ import annotations

import contextlib
from collections import Counter

from rich.progress import BarColumn, Progress, ProgressColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .. import ingest
from ..bits import to_hex
from ..plural import counted
from ..terminal import json_line, visible
from .common import (
    err,
    out,
)


def print_pairs(pairs: list[dict], shown: int = 20) -> None:
    """Pairs of sampled documents, nearest first, at most ``shown`` of them (--json lists all)."""
    for pair in pairs[:shown]:
        out.print(Text(f"  {pair['distance']:>2} bits  Jaccard {pair['jaccard']:.2f}  containment "
                       f"{pair['containment_a']:.2f}/{pair['containment_b']:.2f}  {pair['key_a']}  ~  {pair['key_b']}"))
    if len(pairs) > shown:
        out.print(f"  ... and {len(pairs) - shown} more (--json lists them all)", markup=False)


def print_matches(name: str, value: int, matches, max_distance: int, as_json: bool) -> None:
    if as_json:
        record = {
            "query": name,
            "fingerprint": to_hex(value),
            "matches": [
                {"key": m.key, "distance": m.distance, "similarity": round(m.similarity, 6)} for m in matches
            ],
        }
        out.print(json_line(record), markup=False)
        return
    if not matches:
        out.print(f"{visible(name)} ({to_hex(value)}): nothing stored within {counted(max_distance, 'bit')}")
        return
    table = Table(title=f"{visible(name)} ({to_hex(value)})", title_justify="left")
    table.add_column("key", overflow="fold")  # a long key (a URL) wraps, never cut: a reader may copy it
    table.add_column("distance", justify="right")
    table.add_column("similarity", justify="right")
    for match in matches:
        table.add_row(Text(visible(match.key)), str(match.distance), f"{match.similarity:.3f}")
    out.print(table)


def print_add_summary(summary: ingest.IngestSummary, elapsed: float) -> None:
    """One line in which every input is counted once (the counts add up to the inputs), then the reasons."""
    rate = summary.documents / elapsed if elapsed > 0 else 0.0
    near = f", near-duplicates not stored {len(summary.near_duplicates)}" if summary.near_duplicates else ""
    out.print(
        f"added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}, "
        f"skipped {len(summary.deliberate)}, failed {len(summary.failures)}{near} "
        f"(of {counted(summary.inputs, 'input')}) in {elapsed:.1f} s ({rate:,.0f} documents/s, "
        f"{summary.bytes / elapsed / 1e6 if elapsed > 0 else 0:.2f} MB/s)",
        markup=False,
    )
    for reason, count in sorted(Counter(s.reason for s in summary.deliberate).items()):
        out.print(f"  skipped {count}: {reason}", markup=False)
    for reason, count in sorted(Counter(s.reason for s in summary.failures).items()):
        out.print(f"  failed {count}: {reason}", markup=False)
    if summary.warnings:
        out.print(f"  stored with invalid bytes replaced: {len(summary.warnings)}", markup=False)
    if summary.near_duplicates:
        out.print(f"  near-duplicates of stored documents, not stored: {len(summary.near_duplicates)}", markup=False)
        for skipped in summary.near_duplicates[:20]:
            out.print(f"    {visible(skipped.key)} ~ {visible(skipped.match.key)} (distance {skipped.match.distance})")
        if len(summary.near_duplicates) > 20:
            out.print(f"    ... and {len(summary.near_duplicates) - 20} more", markup=False)


def print_clusters(store, max_distance: int, as_json: bool) -> None:
    """The stored clusters, or (a store without them, or another distance) those recluster would store."""
    distance, unclustered = store.cluster_state()
    stored = distance == max_distance and not unclustered
    groups = store.stored_clusters() if stored else store.computed_clusters(max_distance)
    for group in groups:
        if as_json:
            record = {
                "cluster": group.id, "representative": group.representative, "size": group.size,
                "keys": [key for key, _ in group.members],
                "members": [{"key": key, "distance": distance} for key, distance in group.members],
            }
            out.print(json_line(record), markup=False)
        else:
            members = "  ".join(f"{visible(key)} ({distance})" for key, distance in group.members[1:])
            out.print(f"cluster {group.id} ({group.size}): {visible(group.representative)} <- {members}")
    if not as_json:
        err.print(f"{counted(len(groups), 'cluster')} of two or more documents at distance {max_distance}")
        if not stored:
            err.print(f"(computed, not stored: `simhash-store recluster -k {max_distance}` keeps them, with stable ids)")


def megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


class _ThroughputColumn(ProgressColumn):
    """documents/s and MB/s since the start."""

    def render(self, task) -> Text:
        elapsed = task.elapsed or 0
        if not elapsed:
            return Text("")
        megabytes = task.fields.get("bytes", 0) / 1e6
        return Text(f"{task.completed / elapsed:,.0f} docs/s  {megabytes / elapsed:.2f} MB/s")


@contextlib.contextmanager
def progress_bar(quiet: bool, total_documents: int | None, total_bytes: int):
    """A progress callback: a rich bar on a terminal, nothing otherwise."""
    if quiet or not err.is_terminal:
        yield None
        return
    progress = Progress(
        TextColumn("adding"), BarColumn(), TaskProgressColumn(), TextColumn("{task.completed:,} docs"),
        _ThroughputColumn(), TimeElapsedColumn(), console=err, transient=True,
    )
    task = progress.add_task("add", total=total_documents, bytes=0)
    done_bytes = 0

    def advance(documents: int, size: int) -> None:
        nonlocal done_bytes
        done_bytes += size
        progress.update(task, advance=documents, bytes=done_bytes)

    with progress:
        yield advance
