"""What the commands print: matches, pairs, clusters, the add summary, the progress bar."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

from rich import filesize
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from .. import ingest
from ..bits import to_hex
from ..plural import counted
from ..progress import OnProgress
from ..terminal import json_line, visible
from .common import (
    err,
    out,
)


def print_pairs(pairs: list[dict], shown: int = 20) -> None:
    """Pairs of sampled documents, nearest first, at most ``shown`` of them (--json lists all)."""
    for pair in pairs[:shown]:
        out.print(
            Text(
                f"  {pair['distance']:>2} bits  Jaccard {pair['jaccard']:.2f}  containment "
                f"{pair['containment_a']:.2f}/{pair['containment_b']:.2f}  {pair['key_a']}  ~  {pair['key_b']}"
            )
        )
    if len(pairs) > shown:
        out.print(f"  ... and {len(pairs) - shown} more (--json lists them all)", markup=False)


def match_record(name: str, value: int, matches) -> dict:
    """One query's answer as ``query --json`` and ``-o`` write it: every match, never cut short."""
    return {
        "query": name,
        "fingerprint": to_hex(value),
        "matches": [{"key": m.key, "distance": m.distance, "similarity": round(m.similarity, 6)} for m in matches],
    }


def print_matches(name: str, value: int, matches, max_distance: int, as_json: bool) -> None:
    if as_json:
        out.print(json_line(match_record(name, value, matches)), markup=False)
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
        f"(of {counted(summary.inputs, 'input')}) in {elapsed:.1f} s ({rate:,.{0 if rate >= 10 else 1}f} documents/s, "
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


def print_add_lines(summary: ingest.IngestSummary, elapsed: float) -> None:
    """``add --json``: one line for each input skipped or failed, and each near-duplicate not stored
    (with the stored document it matched), every one of them; then one line of the summary's counts."""
    for skip in summary.skipped:
        status = "skipped" if skip.deliberate else "failed"
        out.print(
            json_line({"status": status, "input": skip.where, "reason": skip.reason, "detail": skip.detail or None}),
            markup=False,
        )
    for near in summary.near_duplicates:
        record = {
            "status": "near-duplicate",
            "key": near.key,
            "matched": {"key": near.match.key, "distance": near.match.distance},
        }
        out.print(json_line(record), markup=False)
    counts = {
        "added": summary.added,
        "updated": summary.updated,
        "unchanged": summary.unchanged,
        "skipped": len(summary.deliberate),
        "failed": len(summary.failures),
        "near_duplicates": len(summary.near_duplicates),
        "inputs": summary.inputs,
        "seconds": round(elapsed, 3),
    }
    out.print(json_line({"status": "summary", **counts}), markup=False)


def cluster_record(group) -> dict:
    """A cluster as ``dups --clusters --json`` and ``-o`` write it."""
    return {
        "cluster": group.id,
        "representative": group.representative,
        "size": group.size,
        "keys": [key for key, _ in group.members],
        "members": [{"key": key, "distance": distance} for key, distance in group.members],
    }


def print_clusters(store, max_distance: int, as_json: bool, writer=None) -> None:
    """The stored clusters, or (a store without them, or another distance) those recluster would store;
    to ``writer`` too, when given."""
    distance, unclustered = store.cluster_state()
    stored = distance == max_distance and not unclustered
    groups = store.stored_clusters() if stored else store.computed_clusters(max_distance)
    for group in groups:
        if writer is not None:
            writer.write(cluster_record(group))
        if as_json:
            out.print(json_line(cluster_record(group)), markup=False)
        elif writer is None:
            members = "  ".join(f"{visible(key)} ({distance})" for key, distance in group.members[1:])
            out.print(f"cluster {group.id} ({group.size}): {visible(group.representative)} <- {members}")
    if not as_json:
        err.print(f"{counted(len(groups), 'cluster')} of two or more documents at distance {max_distance}")
        if not stored:
            err.print(
                f"(computed, not stored: `simhash-store recluster -k {max_distance}` keeps them, with stable ids)"
            )


def megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


class _ThroughputColumn(ProgressColumn):
    """documents/s and MB/s since the start."""

    def render(self, task) -> Text:
        elapsed = task.elapsed or 0
        if not elapsed:
            return Text("")
        megabytes = task.fields.get("bytes", 0) / 1e6
        return Text(f"{task.fields.get('documents', 0) / elapsed:,.0f} docs/s  {megabytes / elapsed:.2f} MB/s")


class _RateColumn(ProgressColumn):
    """Units done per second since the start: MB/s for bytes, else items/s."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task) -> Text:
        elapsed = task.elapsed or 0
        if not elapsed:
            return Text("")
        if self.unit == "bytes":
            return Text(f"{filesize.decimal(int(task.completed / elapsed))}/s")
        return Text(f"{task.completed / elapsed:,.0f} {self.unit}/s")


class _DoneColumn(ProgressColumn):
    """done/total (or done alone), in kB, MB, GB for bytes."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task) -> Text:
        if self.unit == "bytes":
            total = f"/{filesize.decimal(int(task.total))}" if task.total is not None else ""
            return Text(f"{filesize.decimal(int(task.completed))}{total}")
        total = f"/{task.total:,.0f}" if task.total is not None else ""
        return Text(f"{task.completed:,.0f}{total} {self.unit}")


def _display(
    description: str, known_total: bool, unit: str, *extra: ProgressColumn, rate: ProgressColumn | None = None
) -> Progress:
    """A bar with done/total, percentage, rate and ETA when the total is known; a spinner with the
    count and rate when it is not. On stderr, and gone when done."""
    rate = rate or _RateColumn(unit)
    if known_total:
        columns: tuple[ProgressColumn, ...] = (
            TextColumn(description),
            BarColumn(),
            TaskProgressColumn(),
            _DoneColumn(unit),
            *extra,
            rate,
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
    else:
        columns = (SpinnerColumn(), TextColumn(description), _DoneColumn(unit), *extra, rate, TimeElapsedColumn())
    return Progress(*columns, console=err, transient=True)


def shows_progress(quiet: bool) -> bool:
    """Progress is drawn on stderr, and only when it is a terminal: piped output stays clean."""
    return not quiet and err.is_terminal


@contextlib.contextmanager
def progress(
    description: str, quiet: bool, total: int | None = None, unit: str = "bytes"
) -> Iterator[OnProgress | None]:
    """A callback ``on_progress(done, total)`` drawn on a terminal (a bar when the total is known, a
    spinner when it is None), or None when quiet or stderr is not a terminal."""
    if not shows_progress(quiet):
        yield None
        return
    display = _display(description, total is not None, unit)
    task = display.add_task(description, total=total)

    def on_progress(done: int, total: int | None) -> None:
        display.update(task, completed=done, total=total)

    with display:
        yield on_progress


@contextlib.contextmanager
def spinner(description: str, quiet: bool) -> Iterator[None]:
    """A spinner with the time elapsed while one library call that reports no progress runs
    (nothing when quiet or piped)."""
    if not shows_progress(quiet):
        yield
        return
    with Progress(
        SpinnerColumn(), TextColumn(description), TimeElapsedColumn(), console=err, transient=True
    ) as display:
        display.add_task(description, total=None)
        yield


@contextlib.contextmanager
def progress_bar(quiet: bool, total_documents: int | None, total_bytes: int, total_input_bytes: int | None = None):
    """Callbacks for add: ``(advance(documents, size), on_read(done, total))``. The bar counts
    documents when their number is known (files), else the bytes read of the input (a JSONL
    file: ``total_input_bytes``), else it spins. (None, None) when quiet or piped."""
    if not shows_progress(quiet):
        yield None, None
        return
    by_bytes = total_documents is None and total_input_bytes is not None
    unit = "bytes" if by_bytes else "docs"
    extra = (TextColumn("{task.fields[documents]:,} docs"),) if by_bytes else ()
    rate = None if by_bytes else _ThroughputColumn()  # documents/s and MB/s of the documents
    display = _display("adding", total_documents is not None or by_bytes, unit, *extra, rate=rate)
    task = display.add_task("add", total=total_input_bytes if by_bytes else total_documents, bytes=0, documents=0)
    done_bytes = done_documents = 0

    def advance(documents: int, size: int) -> None:
        nonlocal done_bytes, done_documents
        done_bytes += size
        done_documents += documents
        if by_bytes:
            display.update(task, bytes=done_bytes, documents=done_documents)
        else:
            display.update(task, advance=documents, bytes=done_bytes, documents=done_documents)

    def on_read(done: int, total: int | None) -> None:
        display.update(task, completed=done)

    with display:
        yield advance, (on_read if by_bytes else None)


def print_replaced(replaced: list[tuple[str, str]], console, limit: int | None = None) -> None:
    """Each representative that a better copy replaced (by the store's keep policy), one line each
    (the first ``limit`` of them, and how many more)."""
    if replaced:
        console.print(f"representatives replaced by a better copy: {len(replaced)}", markup=False)
    shown = replaced if limit is None else replaced[:limit]
    for old, new in shown:
        console.print(f"  replaced: {visible(old)} by {visible(new)}", markup=False)
    if len(shown) < len(replaced):
        console.print(f"  ... and {len(replaced) - len(shown)} more", markup=False)
