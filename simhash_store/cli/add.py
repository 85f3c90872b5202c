"""Commands that put documents in: add (files, JSONL) and import (fingerprints computed elsewhere)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from .. import corpus, ingest, records
from ..errors import SimhashStoreError
from ..scheme import DEFAULT_MAX_DISTANCE
from .common import (
    Jobs,
    MaxDistance,
    SchemeOption,
    fail,
    known_scheme,
    open_binary,
    opened_store,
    out,
    parse_size,
    warn,
)
from .render import print_add_summary, progress_bar


def add(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files and directories (recursive).")] = None,
    jsonl: Annotated[str | None, typer.Option("--jsonl", help="JSONL file of records ('-' for stdin).")] = None,
    key_field: Annotated[str, typer.Option(help="JSONL field holding the key.")] = "key",
    text_field: Annotated[str, typer.Option(help="JSONL field holding the text.")] = "text",
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
            "--checksum", help="Read every file to find changes, instead of trusting unchanged size and modification time."
        ),
    ] = False,
    max_distance: MaxDistance = DEFAULT_MAX_DISTANCE,
    scheme: SchemeOption = None,
    jobs: Jobs = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Documents per transaction.")] = 2000,
    max_file_size: Annotated[
        str, typer.Option(help="Refuse files (and JSONL lines) larger than this, e.g. 500M, 2G.")
    ] = "1G",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
) -> None:
    """Fingerprint files (or JSONL records) and store them; unchanged inputs are skipped.

    Example: simhash-store add corpus/ --include '*.txt' --skip-near-duplicates
    """
    if not paths and jsonl is None:
        raise typer.BadParameter("give files or directories to add, or --jsonl FILE", param_hint="PATHS")
    max_bytes = parse_size(max_file_size, "--max-file-size")
    inputs = _walk(paths or [], include, exclude, hidden, prefix)
    stream = None
    if jsonl is not None:
        stream = sys.stdin.buffer if jsonl == "-" else open_binary(jsonl)
        try:
            records_read = records.read_jsonl(
                stream, jsonl, key_field=key_field, text_field=text_field, prefix=prefix, max_line_bytes=max_bytes
            )
        except SimhashStoreError as exc:  # the first record lacks a field: one line, not one per record
            fail(f"{exc} (choose them with --key-field and --text-field)")
    else:
        records_read = iter(())
    total_documents = sum(isinstance(i, corpus.Source) for i in inputs) if jsonl is None else None
    total_bytes = sum(i.size for i in inputs if isinstance(i, corpus.Source))
    fingerprinter = ingest.early_fingerprinter(scheme, jobs, total_documents)
    fingerprinter.max_file_bytes = max_bytes
    with fingerprinter, opened_store(scheme) as store, progress_bar(quiet, total_documents, total_bytes) as progress:
        started = time.perf_counter()
        try:
            summary = ingest.add(
                store,
                _chain(inputs, records_read),
                batch_size=batch_size,
                skip_near_duplicates=skip_near_duplicates,
                max_distance=max_distance,
                progress=progress,
                checksum=checksum,
                fingerprinter=fingerprinter,
            )
        except KeyboardInterrupt:
            warn("Interrupted: every finished batch is stored; run the same command again to finish.")
            raise typer.Exit(130) from None
        finally:
            if stream is not None and stream is not sys.stdin.buffer:
                stream.close()
        elapsed = time.perf_counter() - started
    for skip in summary.deliberate:
        if skip.reason == corpus.SPECIAL_FILE:
            warn(f"skipped: {skip}")  # rare enough to name, unlike the binary files of a corpus
    for warning in summary.warnings:
        warn(f"warning: {warning}")
    for failure in summary.failures:
        warn(f"failed: {failure}")
    if not quiet:
        print_add_summary(summary, elapsed)
    if summary.failures:
        raise typer.Exit(1)


IMPORT_FORMATS = ("auto", "csv", "tsv", "jsonl")
FINGERPRINT_FORMATS = ("auto", "hex", "decimal")


def _choices(values: tuple[str, ...]) -> str:
    return "[" + "|".join(values) + "]"


def import_(
    file: Annotated[
        str, typer.Argument(help="CSV or TSV (with a header) or JSONL file of key and fingerprint ('-' for stdin).")
    ],
    scheme: Annotated[str, typer.Option("--scheme", help="The scheme that computed these fingerprints.")],
    format: Annotated[
        str,
        typer.Option(
            "--format", metavar=_choices(IMPORT_FORMATS), help="auto: by file name (.csv, .tsv, else JSONL)."
        ),
    ] = "auto",
    key_field: Annotated[str, typer.Option(help="Column or field holding the key.")] = "key",
    fingerprint_field: Annotated[str, typer.Option(help="Column or field holding the fingerprint.")] = "fingerprint",
    fingerprint_format: Annotated[
        str,
        typer.Option(metavar=_choices(FINGERPRINT_FORMATS), help="auto: 16 characters are hex, else decimal."),
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
            "--lock-timeout", min=0.001, max=86_400, metavar="SECONDS",
            help="How long a bulk load waits for the table (a reader left in a transaction holds it) before giving up.",
        ),
    ] = 10.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary.")] = False,
) -> None:
    """Load existing fingerprints computed elsewhere; bad rows are reported by line and skipped.

    Example: simhash-store import legacy.csv --scheme pypi-simhash
    """
    if format not in IMPORT_FORMATS:
        raise typer.BadParameter(f"must be one of {', '.join(IMPORT_FORMATS)}, not {format!r}", param_hint="--format")
    if fingerprint_format not in FINGERPRINT_FORMATS:
        raise typer.BadParameter(
            f"must be one of {', '.join(FINGERPRINT_FORMATS)}, not {fingerprint_format!r}", param_hint="--fingerprint-format"
        )
    stream = sys.stdin.buffer if file == "-" else open_binary(file)
    skipped: list[corpus.Skip] = []
    try:  # reads the header (or first record) now: a missing column is one line, before any I/O
        rows = records.read_fingerprints(
            stream, file, format=format, key_field=key_field,
            fingerprint_field=fingerprint_field, fingerprint_form=fingerprint_format,
        )
    except records.RepeatedColumnError as exc:
        fail(str(exc))
    except SimhashStoreError as exc:
        fail(f"{exc} (choose them with --key-field and --fingerprint-field)")

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
    with opened_store(known_scheme(scheme), mismatch=mismatch) as store:
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


def _chain(*iterables):
    for iterable in iterables:
        yield from iterable


def _walk(paths, include, exclude, hidden: bool, prefix: str) -> list:
    try:
        return list(corpus.walk(paths, include=include or [], exclude=exclude or [], hidden=hidden, prefix=prefix))
    except ValueError as exc:  # an empty pattern
        raise typer.BadParameter(str(exc), param_hint="--include/--exclude") from None
