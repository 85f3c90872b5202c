"""Commands over near-duplicates: dups, recluster, dedup."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import formats, ingest
from ..errors import SimhashStoreError
from ..plural import counted
from ..scheme import DEFAULT_MAX_DISTANCE
from ..segments import DEFAULT_MIN_SCORE
from ..terminal import json_line, visible
from .common import (
    ContainmentFlag,
    Jobs,
    JsonFlag,
    KeepOption,
    MaxDistance,
    MinScore,
    QuietFlag,
    Terminated,
    err,
    fail,
    interrupt_on_sigterm,
    keep_policy,
    opened_store,
    out,
    print_line,
    raise_if_interrupted,
    refuse_options,
    stored_keep_policy,
    warn,
)
from .inputs import (
    INPUT_NAMES,
    HtmlField,
    KeyField,
    Output,
    OutputFormatOption,
    TextField,
    choices,
    input_format,
    open_writer,
    resolved,
)
from .inputs import output_format as output_format_of
from .render import print_clusters, print_replaced, progress, spinner


def dups(
    ctx: typer.Context,
    max_distance: MaxDistance = DEFAULT_MAX_DISTANCE,
    clusters: Annotated[
        bool,
        typer.Option(
            "--clusters",
            help="Clusters of two or more documents (ids, representative, distances to it) instead of pairs: "
            "the stored ones, or, for a store without them or at another -k, those recluster would store.",
        ),
    ] = False,
    as_json: JsonFlag = False,
    containment: ContainmentFlag = False,
    min_score: MinScore = DEFAULT_MIN_SCORE,
    output: Output = None,
    output_format: OutputFormatOption = None,
    quiet: QuietFlag = False,
) -> None:
    """Every near-duplicate pair (or group) among stored documents, exactly, from one snapshot (or the stored clusters).

    Documents sharing one fingerprint come out once, as a group: one line with distance 0 and
    all their keys. A pair then names the first key of each side's group, standing for all of it.
    With --containment: every pair with one document mostly inside the other (a store made with
    init --segments): score, inner key, outer key.

    Example: simhash-store dups -k 3 --clusters --json
    """
    from ..store import IdenticalGroup

    if containment:
        refuse_options(
            ctx,
            "--containment",
            {
                "max_distance": "-k/--max-distance",
                "clusters": "--clusters",
                "output": "-o/--output",
                "output_format": "--output-format",
            },
        )
        _containment_pairs(min_score, as_json, quiet)
        return
    written = output_format_of(output, output_format) if output is not None else None
    writer = open_writer(output, written) if output is not None and written is not None else None
    shown = writer is None or (as_json and output != "-")  # -o -: the file is stdout
    try:
        with opened_store() as store:
            if clusters:
                print_clusters(store, max_distance, as_json and shown, writer)
                if writer is not None:
                    writer.close()
                return
            with spinner("finding pairs", quiet):
                found = store.iter_near_duplicates(max_distance)
        groups = pairs = 0
        for item in found:
            if isinstance(item, IdenticalGroup):
                groups += 1
                record = {"keys": item.keys, "distance": 0}
                line = "  ".join([" 0", *map(visible, item.keys)])
            else:
                pairs += 1
                record = {"a": item.a, "b": item.b, "distance": item.distance}
                line = f"{item.distance:>2}  {visible(item.a)}  {visible(item.b)}"
            if writer is not None:
                writer.write(record)
            if shown:
                print_line(json_line(record) if as_json else line)
        if writer is not None:
            writer.close()
    except BaseException:
        if writer is not None:
            writer.abandon()
        raise
    if not as_json:
        err.print(
            f"{counted(groups, 'group')} of identical fingerprints and {counted(pairs, 'pair')} "
            f"within {counted(max_distance, 'bit')}"
        )


def _containment_pairs(min_score: float, as_json: bool, quiet: bool) -> None:
    """dups --containment: score, inner key, outer key of every pair."""
    count = 0
    with opened_store() as store:
        found = store.iter_containment_pairs(min_score=min_score)
        with spinner("finding contained documents", quiet):
            first = next(found, None)
        for pair in found if first is None else itertools.chain([first], found):
            record = {
                "inner": pair.inner,
                "outer": pair.outer,
                "score": round(pair.score, 4),
                "matched": pair.matched,
                "segments": pair.segments,
            }
            line = f"{pair.score:.2f}  {visible(pair.inner)}  inside  {visible(pair.outer)}"
            print_line(json_line(record) if as_json else line)
            count += 1
    if not as_json:
        err.print(f"{counted(count, 'pair')} with one document at least {min_score:g} inside the other")


def recluster(
    max_distance: Annotated[
        int | None,
        typer.Option(
            "--max-distance",
            "-k",
            min=0,
            max=64,
            help="Cluster at this distance (default: the store's, else the k recorded by `calibrate --apply`, "
            f"else {DEFAULT_MAX_DISTANCE}).",
        ),
    ] = None,
    quiet: QuietFlag = False,
    keep: KeepOption = None,
) -> None:
    """Cluster every stored document afresh, and keep clusters from then on (or re-cluster at another distance).

    A store keeps clusters once this has run (or once dedup has filled it from empty): every
    later write then puts its documents in clusters, at the cost of a radius search each.

    Example: simhash-store recluster -k 8
    """
    policy = keep_policy(keep)
    with opened_store() as store, spinner("reclustering", quiet):
        documents, count = store.recluster(max_distance, keep=policy)
        distance, _ = store.cluster_state()
        chosen = store.keep_policy()
    keeping = "" if chosen.kind == "first" else f", keeping {visible(str(chosen))}"
    out.print(
        f"{counted(documents, 'document')} in {counted(count, 'cluster')} at distance {distance}{keeping}", markup=False
    )


class _Interruptible:
    """An output writer that is not made final (closed, renamed into place) after an interrupt,
    even one Python dropped: the run then ends as interrupted, its files removed."""

    def __init__(self, writer: Any) -> None:
        self._writer = writer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def close(self) -> None:
        raise_if_interrupted()
        self._writer.close()


def dedup_command(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="JSONL, CSV, TSV or Parquet files, or text files and directories ('-' for JSONL on stdin)."
        ),
    ],
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            help="Where the kept records go: JSONL, CSV, TSV or Parquet by its name ('-': stdout, JSONL).",
        ),
    ] = "-",
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            metavar=choices(INPUT_NAMES),
            help="Format of every input, and of the output unless --output-format (default: by name).",
        ),
    ] = None,
    output_format: OutputFormatOption = None,
    key_field: KeyField = "key",
    text_field: TextField = "text",
    html_field: HtmlField = None,
    annotate: Annotated[
        bool,
        typer.Option("--annotate", help="Write every record, with simhash, cluster, duplicate_of and distance added."),
    ] = False,
    max_distance: Annotated[
        int | None,
        typer.Option(
            "--max-distance",
            "-k",
            min=0,
            max=64,
            help="Near-duplicate distance (default: the store's cluster distance; for a store without clusters, "
            f"the k recorded by `calibrate --apply`, else {DEFAULT_MAX_DISTANCE}).",
        ),
    ] = None,
    keep: KeepOption = None,
    jobs: Jobs = None,
    batch_size: Annotated[int, typer.Option(min=1, max=2**31 - 1, help="Records per transaction.")] = 1000,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Fingerprint on the Ray cluster at ADDRESS (host:port of its head, or 'auto': RAY_ADDRESS, else the "
            "cluster you started on this machine) instead of --jobs local processes; the verdicts are the same "
            "(needs simhash-store[ray]).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
) -> None:
    """Write the records that are not near-duplicates of an earlier record or of anything stored.

    Every record is stored and joins a cluster; one copy of each cluster is kept, chosen by
    --keep (the first by default). A rerun over the same input writes the same output, byte
    for byte.

    Example: simhash-store dedup crawl.jsonl -o clean.jsonl
    """
    from ..dedup import dedup_files, dedup_output, refuse_annotation_clash
    from ..store_info import dedup_distance_note

    policy = keep_policy(keep)
    if "-" in inputs and (policy is None or policy.needs_every_record):
        with opened_store() as store:  # --keep left out: the store's policy decides
            chosen = policy or stored_keep_policy(store)
        if chosen.needs_every_record:
            raise typer.BadParameter(
                f"--keep {chosen} reads its input twice: give files, not stdin", param_hint="INPUTS"
            )
    if annotate:
        try:
            refuse_annotation_clash(key_field, html_field or text_field)
        except SimhashStoreError as exc:
            fail(str(exc))
    given = input_format(format)
    # --format names the output's format too, where it is one (as it always has), unless --output-format does.
    written = output_format_of(
        output, output_format if output_format is not None or given not in formats.OUTPUTS else given
    )
    input_formats = [resolved(path, given, None).name for path in inputs]
    size = sum(Path(path).stat().st_size for path in inputs if path != "-" and Path(path).is_file())
    many = "-" in inputs or any(Path(path).is_dir() for path in inputs)
    interrupt_on_sigterm()  # so that SIGTERM, like Ctrl-C, removes the run's temporary and lock files
    writer = None
    try:  # from the moment the output is claimed: a signal at any point removes its files
        try:
            writer = _Interruptible(dedup_output(inputs, input_formats, output, written, annotate=annotate))
        except SimhashStoreError as exc:
            fail(str(exc))
        fingerprinter: Any  # an ingest.Fingerprinter, or its stand-in on a Ray cluster
        if ray_address is not None:
            from ..ray_data import RayFingerprinter
            from ..scheme import DEFAULT

            try:
                fingerprinter = RayFingerprinter(DEFAULT, ray_address)
            except SimhashStoreError as exc:
                fail(str(exc))
        if ray_address is None:
            # Workers start with the first batch that needs them (a rerun finds every record stored, and
            # needs none): loading their dictionaries for nothing cost a rerun more than anything else.
            fingerprinter = ingest.early_fingerprinter(None, jobs, 0)
        with fingerprinter, opened_store() as store:
            with progress("deduplicating", quiet, None if many else size) as on_progress:
                try:
                    counts = dedup_files(
                        inputs,
                        input_formats,
                        writer,
                        store=store,
                        key=key_field,
                        text=html_field or text_field,
                        max_distance=max_distance,
                        keep=policy,
                        annotate=annotate,
                        fingerprinter=fingerprinter,
                        batch_size=batch_size,
                        html=html_field is not None,
                        on_failure=lambda message: warn(f"failed: {message}"),
                        on_progress=on_progress,
                        in_memory=ray_address is not None,  # the decisions of dedup_dataset (docs/scale-out.md)
                    )
                except formats.MissingFieldError as exc:  # the first record lacks the key or the text field
                    fields = "--key-field and " + ("--html-field" if html_field else "--text-field")
                    fail(f"{exc} (choose them with {fields})")
            if not quiet:
                note = dedup_distance_note(store, max_distance)
                passed = "".join(
                    f"not compared {count} ({reason}: passed through), "
                    for reason, count in sorted(counts.not_compared.items())
                )
                err.print(
                    f"kept {counts.kept}, duplicates {counts.duplicates}, {passed}bad records {counts.bad}; {note}",
                    markup=False,
                )
                if counts.unchanged:
                    err.print(
                        f"stored before with the same text, not fingerprinted again: {counts.unchanged}", markup=False
                    )
                print_replaced(counts.replaced, err, limit=20)
    except KeyboardInterrupt as exc:
        if writer is not None:
            writer.abandon()
        stored = (
            "what was stored stays stored (into an empty store, --ray stores its decisions at the end: nothing yet)"
            if ray_address is not None
            else "every finished batch is stored"
        )
        warn(f"Interrupted: {stored}; run the same command again for the same output.")
        raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None
    except OSError as exc:  # an input that cannot be read, an output that cannot be written
        if writer is not None:
            writer.abandon()
        fail(f"{exc.filename or output}: {exc.strerror or exc}")
    except BaseException:
        if writer is not None:
            writer.abandon()
        raise
    if counts.bad:
        raise typer.Exit(1)
