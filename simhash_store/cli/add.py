"""Commands that put documents in: add (files, JSONL) and import (fingerprints computed elsewhere)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from .. import corpus, formats, ingest, progress
from ..errors import SimhashStoreError
from ..scheme import DEFAULT_MAX_DISTANCE
from .common import (
    Jobs,
    MaxDistance,
    SchemeOption,
    fail,
    known_scheme,
    opened_store,
    out,
    parse_size,
    stored_keep_policy,
    warn,
)
from .inputs import (
    INPUT_NAMES,
    FormatOption,
    HtmlField,
    KeyField,
    TextField,
    check_patterns,
    choices,
    documents,
    input_format,
    records,
    resolved,
    text_role,
)
from .render import print_add_lines, print_add_summary, print_replaced, progress_bar
from .render import progress as show_progress


def add(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files and directories (recursive), JSONL, CSV, TSV or Parquet files ('-' for stdin)."),
    ] = None,
    jsonl: Annotated[str | None, typer.Option("--jsonl", help="JSONL file of records ('-' for stdin).")] = None,
    format: FormatOption = None,
    key_field: KeyField = "key",
    text_field: TextField = "text",
    html_field: HtmlField = None,
    metadata_field: Annotated[
        list[str] | None,
        typer.Option("--metadata-field", help="A field of each record to store with it as metadata (repeatable)."),
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option("--include", help="Only files matching this pattern (gitignore rules; repeatable)."),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            help="Leave out files matching this pattern, read as a .gitignore line: '*.log' at any depth, "
            "'drafts/*' or '/drafts' from the top, 'tmp/' directories only, '**' any depth; "
            "a matched directory leaves out all under it (repeatable).",
        ),
    ] = None,
    hidden: Annotated[bool, typer.Option("--hidden", help="Include hidden files and directories.")] = False,
    prefix: Annotated[str, typer.Option(help="Prepended to every key.")] = "",
    skip_near_duplicates: Annotated[
        bool, typer.Option("--skip-near-duplicates", help="Store a document only if nothing near it is stored.")
    ] = False,
    checksum: Annotated[
        bool,
        typer.Option(
            "--checksum",
            help="Read every file to find changes, instead of trusting unchanged size and modification time.",
        ),
    ] = False,
    max_distance: MaxDistance = DEFAULT_MAX_DISTANCE,
    scheme: SchemeOption = None,
    jobs: Jobs = None,
    batch_size: Annotated[int, typer.Option(min=1, max=2**31 - 1, help="Documents per transaction.")] = 2000,
    max_file_size: Annotated[
        str, typer.Option(help="Refuse files (and JSONL lines) larger than this, e.g. 500M, 2G.")
    ] = "1G",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per line for each input skipped or failed (a near-duplicate with what it matched), "
            "then one for the summary, instead of the summary's text.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
) -> None:
    """Fingerprint files or records (JSONL, CSV, TSV, Parquet) and store them; unchanged inputs are skipped.

    Example: simhash-store add corpus/ --include '*.txt' --skip-near-duplicates
    """
    if not paths and jsonl is None:
        raise typer.BadParameter("give files or directories to add, or --jsonl FILE", param_hint="PATHS")
    given = input_format(format)
    check_patterns(include, exclude)
    max_bytes = parse_size(max_file_size, "--max-file-size")
    named = [*((str(p), given) for p in paths or []), *([(jsonl, "jsonl")] if jsonl is not None else [])]
    streams = [resolved(path, kind, "text").documents is None for path, kind in named]
    keep_field = None
    if any(streams):  # a store that keeps clusters by a field: each record's value goes with it
        with opened_store(scheme) as store:
            keep_field = stored_keep_policy(store).field
    options = formats.ReadOptions(
        key_field=key_field,
        text_field=text_field,
        metadata_fields=tuple(metadata_field or ()),
        required={key_field: "the key", **text_role(text_field, html_field)},
        html_field=html_field,
        prefix=prefix,
        include=tuple(include or ()),
        exclude=tuple(exclude or ()),
        hidden=hidden,
        max_bytes=max_bytes,
        keep_field=keep_field,
    )
    hint = " (choose them with --key-field and --text-field)"
    # Files and directories are listed now (their number and size make the progress bar); records
    # are read as they are stored, after their first one is checked.
    parts: list = []
    counted_all = True
    streamed: list[str] = []
    read_so_far = progress.Relay()  # the bytes of a file of records read, for the bar
    for (path, kind), streamed_here in zip(named, streams):
        if not streamed_here:
            parts.append(list(documents(path, kind, options, hint=hint)))
        else:
            parts.append(documents(path, kind, options, hint=hint, on_read=read_so_far))
            streamed.append(path)
            counted_all = False
    listed = [item for part in parts if isinstance(part, list) for item in part]
    total_documents = sum(isinstance(i, corpus.Source) for i in listed) if counted_all else None
    total_bytes = sum(i.size for i in listed if isinstance(i, corpus.Source))
    # Records may all be stored already (a rerun): workers start with the first batch that needs
    # them, rather than load their dictionaries for nothing.
    fingerprinter = ingest.early_fingerprinter(scheme, jobs, total_documents if counted_all else 0)
    fingerprinter.max_file_bytes = max_bytes
    # One file of records and nothing else: the bar counts its bytes, with a percentage and an ETA.
    input_size = (
        os.path.getsize(streamed[0]) if len(streamed) == 1 and not listed and os.path.isfile(streamed[0]) else None
    )
    with (
        fingerprinter,
        opened_store(scheme) as store,
        progress_bar(quiet or as_json, total_documents, total_bytes, input_size) as (advance, on_read),
    ):
        read_so_far.forward_to(on_read)
        started = time.perf_counter()
        try:
            summary = ingest.add(
                store,
                (item for part in parts for item in part),
                batch_size=batch_size,
                skip_near_duplicates=skip_near_duplicates,
                max_distance=max_distance,
                progress=advance,
                checksum=checksum,
                fingerprinter=fingerprinter,
            )
        except KeyboardInterrupt:
            warn("Interrupted: every finished batch is stored; run the same command again to finish.")
            raise typer.Exit(130) from None
        except SimhashStoreError as exc:  # an input that went away, or could not be read on
            fail(str(exc))
        elapsed = time.perf_counter() - started
    for skip in summary.deliberate:
        if skip.reason == corpus.SPECIAL_FILE:
            warn(f"skipped: {skip}")  # rare enough to name, unlike the binary files of a corpus
    for warning in summary.warnings:
        warn(f"warning: {warning}")
    for failure in summary.failures:
        warn(f"failed: {failure}")
    if as_json:
        print_add_lines(summary, elapsed)
    elif not quiet:
        print_add_summary(summary, elapsed)
        print_replaced(summary.replaced, out)
    if summary.failures:
        raise typer.Exit(1)


FINGERPRINT_FORMATS = ("auto", "hex", "decimal")


def import_(
    file: Annotated[
        str,
        typer.Argument(help="JSONL, CSV, TSV (with a header) or Parquet file of key and fingerprint ('-' for stdin)."),
    ],
    scheme: Annotated[str, typer.Option("--scheme", help="The scheme that computed these fingerprints.")],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            metavar=choices(("auto", *INPUT_NAMES)),
            help="auto: by file name (.csv, .tsv, .parquet, else JSONL).",
        ),
    ] = "auto",
    key_field: KeyField = "key",
    fingerprint_field: Annotated[str, typer.Option(help="Column or field holding the fingerprint.")] = "fingerprint",
    fingerprint_format: Annotated[
        str,
        typer.Option(
            metavar=choices(FINGERPRINT_FORMATS),
            help="auto: 16 hex digits, or decimal; 16 decimal digits read as the file's other values.",
        ),
    ] = "auto",
    bulk: Annotated[
        bool,
        typer.Option(
            "--bulk/--no-bulk",
            help="Bulk load: into an empty store nothing references, in one transaction with the indexes "
            "built afterwards (many times faster for millions of rows; queries wait meanwhile), else in large "
            "transactions. --no-bulk adds in small transactions, as add does.",
        ),
    ] = True,
    lock_timeout: Annotated[
        float,
        typer.Option(
            "--lock-timeout",
            min=0.001,
            max=86_400,
            metavar="SECONDS",
            help="How long a bulk load waits for the table (a reader left in a transaction holds it) before giving up.",
        ),
    ] = 10.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
) -> None:
    """Load existing fingerprints computed elsewhere; bad rows are reported by line and skipped.

    Example: simhash-store import legacy.csv --scheme pypi-simhash
    """
    if format != "auto" and format not in INPUT_NAMES:
        raise typer.BadParameter(
            f"must be one of {', '.join(('auto', *INPUT_NAMES))}, not {format!r}", param_hint="--format"
        )
    if fingerprint_format not in FINGERPRINT_FORMATS:
        raise typer.BadParameter(
            f"must be one of {', '.join(FINGERPRINT_FORMATS)}, not {fingerprint_format!r}",
            param_hint="--fingerprint-format",
        )
    read_so_far = progress.Relay()
    skipped: list[corpus.Skip] = []
    options = formats.ReadOptions(
        key_field=key_field, required={key_field: "the key", fingerprint_field: "the fingerprint"}
    )
    # The header (or first record) is read now: a missing column is one line, before any I/O.
    read = records(
        file,
        None if format == "auto" else format,
        options,
        default="jsonl",
        hint=" (choose them with --key-field and --fingerprint-field)",
        on_read=read_so_far,
    )
    input_size = os.path.getsize(file) if file != "-" and os.path.isfile(file) else None
    rows = formats.fingerprint_records(read, key_field, fingerprint_field, fingerprint_format)

    from ..store import NewDocument

    def documents() -> Iterator[NewDocument]:
        for row in rows:
            if isinstance(row, corpus.Skip):
                skipped.append(row)
            else:
                yield NewDocument(row.key, row.fingerprint)

    mismatch = (
        f"these fingerprints were computed with scheme {scheme}, and the store holds another scheme's "
        "(simhash-store stats shows which); fingerprints of different schemes cannot be compared, "
        "so import them into a database of their own (--db URL)"
    )
    with (
        opened_store(known_scheme(scheme), mismatch=mismatch) as store,
        show_progress("importing", quiet, input_size) as on_progress,
    ):
        read_so_far.forward_to(on_progress)
        result = store.load(documents(), lock_timeout=lock_timeout) if bulk else store.add(documents())
    for skip in skipped:
        warn(f"failed: {skip}")
    if not quiet:
        out.print(
            f"imported: {result.added} added, {result.updated} updated, {result.unchanged} unchanged, "
            f"{len(skipped)} failed",
            markup=False,
        )
    if skipped:
        raise typer.Exit(1)
