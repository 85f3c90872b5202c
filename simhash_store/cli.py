"""The ``simhash-store`` command: parse, call the library, render. No algorithm lives here."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import math
import os
import signal
import stat
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, get_args

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text
from typer.core import TyperArgument, TyperGroup

from . import corpus, ingest, records
from .bits import from_hex, to_hex
from .config import URL_VARIABLE
from .errors import SchemeMismatchError, SimhashStoreError, SimhashStoreWarning
from .plural import counted
from .scheme import DEFAULT, DEFAULT_MAX_DISTANCE, SCHEMES, get_scheme
from .terminal import json_line as _json_line
from .terminal import visible

if TYPE_CHECKING:
    from .lookup import Lookup
    from .store import Store

# The store module (SQLAlchemy, psycopg) is imported by the commands that use it:
# `add` starts its workers before that import (see ingest.Fingerprinter.start).

class State:
    db: str | None = None


state = State()


def _set_db(ctx, param, value: str | None) -> None:
    if value is not None:
        state.db = value


def _plain_type(param) -> str:
    """PATH, TEXT, INTEGER or [a|b|c] for help, instead of Typer's <list[Path]> or <int range>."""
    descriptor = param.type_descriptor
    if descriptor.is_choice and descriptor.choices:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in descriptor.choices) + "]"
    annotation = descriptor.annotation
    if descriptor.is_list:
        annotation = get_args(annotation)[0]
    if descriptor.is_path or annotation is Path:
        return "PATH"
    return {int: "INTEGER", float: "FLOAT", bool: "BOOLEAN"}.get(annotation, "TEXT")


class _Group(TyperGroup):
    """Every command also takes --db (after its name, as well as before it), and help shows plain types."""

    def get_command(self, ctx, name):
        command = super().get_command(ctx, name)
        if command is None or getattr(command, "_simhash_prepared", False):
            return command
        if not any(param.name == "db" for param in command.params):
            # No envvar here: the app's own --db already reads SIMHASH_STORE_URL, and an
            # environment default must not override --db given before the command.
            own = next(param for param in self.params if param.name == "db")
            command.params.append(
                typer.core.TyperOption(
                    param_decls=["--db"], type_descriptor=own.type_descriptor, expose_value=False,
                    callback=_set_db, metavar="URL",
                    help=f"PostgreSQL URL (default: {URL_VARIABLE}, else the embedded server).",
                )
            )
        _plain_help(command.params)
        _plain_number_errors(command.params)
        command._simhash_prepared = True
        return command


def _plain_help(params) -> None:
    for param in params:
        if not hasattr(param, "type_descriptor") or getattr(param, "is_flag", False):
            continue
        label = _plain_type(param)
        if isinstance(param, TyperArgument):
            param.metavar = param.name.upper()
            # Typer 0.29 has no metavar for an argument's type column: replace its label.
            shown = label + ("..." if param.nargs != 1 else "")
            param.display_type_rich = lambda ctx, shown=shown: shown
            # Usage as click writes it: FILE and FILES... when required, [FILES]... when not
            # (Typer 0.29 writes {FILE}).
            usage = (param.metavar if param.required else f"[{param.metavar}]") + ("..." if param.nargs != 1 else "")
            param._usage_display_name = lambda usage=usage: usage
        elif param.metavar is None:  # one given (URL, SECONDS, [csv|tsv]) says more than the type
            param.metavar = label


def _plain_number_errors(params) -> None:
    """A number out of range or not a number is said plainly, as our other usage errors are
    ("Invalid value for -k/--max-distance: must be from 0 to 64, not 99"), not in the words
    of the validation library Typer uses ("Input should be less than or equal to 64")."""
    for param in params:
        kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
        if kind not in (int, float) or getattr(param, "is_flag", False):
            continue
        original = param.process_value

        def process_value(ctx, value, param=param, kind=kind, original=original):
            if isinstance(value, str):
                _check_number(value, kind, param)
            return original(ctx, value)

        param.process_value = process_value


def _check_number(value: str, kind: type, param) -> None:
    hint = "/".join(sorted(param.opts, key=len))
    try:
        number = float(value)  # "3.0" is 3, as Typer takes it
    except ValueError:
        number = math.nan
    if math.isnan(number) or (kind is int and not number.is_integer()):
        wanted = "a whole number" if kind is int else "a number"
        raise typer.BadParameter(f"{value!r} is not {wanted}", param_hint=hint)
    low, high = param.min, param.max
    if low is not None and high is not None and not low <= number <= high:
        raise typer.BadParameter(f"must be from {low:g} to {high:g}, not {value}", param_hint=hint)
    if low is not None and high is None and number < low:
        raise typer.BadParameter(f"must be at least {low:g}, not {value}", param_hint=hint)
    if high is not None and low is None and number > high:
        raise typer.BadParameter(f"must be at most {high:g}, not {value}", param_hint=hint)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"simhash-store {version('simhash-store')}")
        raise typer.Exit()


app = typer.Typer(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"]},
    name="simhash-store",
    help="Find near-duplicate documents in large (mostly Chinese) text collections, and remember them.\n\n"
    "Fingerprints live in PostgreSQL: --db URL or SIMHASH_STORE_URL, else a private embedded server.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,
)
_default_show_warning = warnings.showwarning
# Keys, paths and texts are data: no markup ([bold]), no emoji codes (:smile:), and every one
# printed through visible() (terminal.py), so that none is acted on by the terminal.
out = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db", envvar=URL_VARIABLE, show_envvar=True, metavar="URL",
        help="PostgreSQL URL (default: the embedded server). Also accepted after the command.",
    ),
]
MaxDistance = Annotated[
    int, typer.Option("--max-distance", "-k", min=0, max=64, help="Largest Hamming distance (bits) that counts as near.")
]
CalibratedMaxDistance = Annotated[
    int | None,
    typer.Option(
        "--max-distance", "-k", min=0, max=64,
        help="Largest Hamming distance (bits) that counts as near (default: the k recorded by "
        f"`calibrate --apply`, else {DEFAULT_MAX_DISTANCE}).",
    ),
]
SchemeOption = Annotated[
    str | None,
    typer.Option("--scheme", help=f"Fingerprint scheme (default: the store's, or {DEFAULT.name} for a new store)."),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="One JSON object per line instead of tables.")]
Jobs = Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: all cores).")]


@app.callback()
def main_options(
    db: DbOption = None,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_version, help="Print the version and exit.")
    ] = False,
) -> None:
    state.db = db


@contextlib.contextmanager
def opened_store(
    scheme: str | None = None, mismatch: str | None = None, *, lookup: bool = False
) -> Iterator[Store | Lookup]:
    """The store for this command; library errors become one line on stderr and exit status 1.

    ``mismatch``: the message for a store of another scheme, where the library's advice
    (use that scheme) does not fit the command. ``lookup``: a read-only view for radius
    search that does not import SQLAlchemy (see lookup.py), for a quick one-file query,
    where it reads the URL itself (else the Store).
    """
    try:
        with warnings.catch_warnings(), _opened(scheme, lookup) as store:
            warnings.simplefilter("always", SimhashStoreWarning)  # the store warns once itself
            warnings.showwarning = _show_warning
            yield store
    except SchemeMismatchError as exc:
        fail(mismatch or str(exc))
    except SimhashStoreError as exc:
        fail(str(exc))


def _opened(scheme: str | None, lookup: bool) -> Store | Lookup:
    if lookup:
        from .lookup import Lookup

        view = Lookup(state.db, scheme=scheme)
        if view.connects_directly:
            return view
    from .store import Store

    return Store(state.db, scheme=scheme)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, SimhashStoreWarning):
        warn(f"Warning: {message}")
    else:
        _default_show_warning(message, category, filename, lineno, file, line)


def fail(message: str, code: int = 1) -> None:
    """One line on stderr (the keys and paths in ``message`` made visible), and exit."""
    err.print(Text(f"Error: {visible(message)}"))
    raise typer.Exit(code)


def warn(message: str) -> None:
    err.print(Text(visible(message)))


# ------------------------------------------------------------ commands


@app.command()
def init(
    scheme: SchemeOption = None,
    distributed: Annotated[
        bool, typer.Option("--distributed", help="On a Citus coordinator: spread the store over the worker nodes.")
    ] = False,
) -> None:
    """Create or upgrade the schema and record the fingerprint scheme.

    Example: simhash-store --db postgresql://localhost/news init --scheme zh-jieba-v1
    """
    with opened_store(scheme) as store:
        recorded = store.init(distributed=distributed)
        layout = ", distributed" if distributed else ""
        out.print(visible(f"store ready at {store.display_url}{layout}: scheme {recorded.label}, {counted(store.count(), 'document')}"))


@app.command()
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
    max_bytes = _size(max_file_size, "--max-file-size")
    inputs = _walk(paths or [], include, exclude, hidden, prefix)
    stream = None
    if jsonl is not None:
        stream = sys.stdin.buffer if jsonl == "-" else _open_binary(jsonl)
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
    fingerprinter = _early_fingerprinter(scheme, jobs, total_documents)
    fingerprinter.max_file_bytes = max_bytes
    with fingerprinter, opened_store(scheme) as store, _progress(quiet, total_documents, total_bytes) as progress:
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
        _print_add_summary(summary, elapsed)
    if summary.failures:
        raise typer.Exit(1)


IMPORT_FORMATS = ("auto", "csv", "tsv", "jsonl")
FINGERPRINT_FORMATS = ("auto", "hex", "decimal")


def _choices(values: tuple[str, ...]) -> str:
    return "[" + "|".join(values) + "]"


@app.command("import")
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
    stream = sys.stdin.buffer if file == "-" else _open_binary(file)
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

    from .store import NewDocument

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
    with opened_store(_known_scheme(scheme), mismatch=mismatch) as store:
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


@app.command()
def query(
    files: Annotated[
        list[str] | None, typer.Argument(help="Documents and directories (recursive) to look up ('-' for stdin).")
    ] = None,
    fingerprint: Annotated[
        list[str] | None, typer.Option("--fingerprint", "-f", help="A fingerprint (16 hex digits) to look up.")
    ] = None,
    max_distance: CalibratedMaxDistance = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most this many matches per query.")] = None,
    as_json: JsonFlag = False,
    scheme: SchemeOption = None,
    jobs: Jobs = None,
) -> None:
    """Find stored documents near each given document, nearest first.

    Example: simhash-store query edited-copy.txt -k 3 --json
    """
    if not files and not fingerprint:
        raise typer.BadParameter("give documents to look up, '-' for stdin, or --fingerprint HEX", param_hint="FILES")
    queries: list[tuple[str, int]] = []
    for value in fingerprint or []:
        try:
            queries.append((value, from_hex(value)))
        except SimhashStoreError as exc:
            raise typer.BadParameter(str(exc), param_hint="--fingerprint") from None
    failures: list[corpus.Skip] = []
    fingerprinter = _early_fingerprinter(scheme, jobs, len(files or []), few_too=True)
    with fingerprinter, opened_store(scheme, lookup=True) as store:
        queries += list(_fingerprint_arguments(files or [], store.scheme, jobs, fingerprinter, failures))
        max_distance = _calibrated_distance(store, max_distance)
        for start in range(0, len(queries), 1000):
            batch = queries[start : start + 1000]
            results = store.query_many([value for _, value in batch], max_distance, limit=limit)
            for (name, value), matches in zip(batch, results):
                _print_matches(name, value, matches, max_distance, as_json)
    if failures:
        raise typer.Exit(1)


@app.command()
def dups(
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
) -> None:
    """Every near-duplicate pair (or group) among stored documents, exactly, from one snapshot (or the stored clusters).

    Documents sharing one fingerprint come out once, as a group: one line with distance 0 and
    all their keys. A pair then names the first key of each side's group, standing for all of it.

    Example: simhash-store dups -k 3 --clusters --json
    """
    from .store import IdenticalGroup

    with opened_store() as store:
        if clusters:
            _print_clusters(store, max_distance, as_json)
            return
        found = store.near_duplicates(max_distance)
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
        out.print(_json_line(record) if as_json else line, markup=False)
    if not as_json:
        err.print(
            f"{counted(groups, 'group')} of identical fingerprints and {counted(pairs, 'pair')} "
            f"within {counted(max_distance, 'bit')}"
        )


@app.command()
def recluster(
    max_distance: Annotated[
        int | None,
        typer.Option(
            "--max-distance", "-k", min=0, max=64,
            help="Cluster at this distance (default: the store's, else the k recorded by `calibrate --apply`, "
            f"else {DEFAULT_MAX_DISTANCE}).",
        ),
    ] = None,
) -> None:
    """Cluster every stored document afresh, and keep clusters from then on (or re-cluster at another distance).

    A store keeps clusters once this has run (or once dedup has filled it from empty): every
    later write then puts its documents in clusters, at the cost of a radius search each.

    Example: simhash-store recluster -k 8
    """
    with opened_store() as store:
        documents, count = store.recluster(max_distance)
        distance, _ = store.cluster_state()
    out.print(f"{counted(documents, 'document')} in {counted(count, 'cluster')} at distance {distance}", markup=False)


@app.command("dedup")
def dedup_command(
    inputs: Annotated[list[str], typer.Argument(help="JSONL, CSV or Parquet files ('-' for JSONL on stdin).")],
    output: Annotated[str, typer.Option("--output", "-o", help="Where the kept records go ('-': stdout, JSONL).")] = "-",
    format: Annotated[
        str | None, typer.Option("--format", help="jsonl, csv or parquet for inputs and output (default: by name).")
    ] = None,
    key_field: Annotated[str, typer.Option(help="Field holding the key.")] = "key",
    text_field: Annotated[str, typer.Option(help="Field holding the text.")] = "text",
    annotate: Annotated[
        bool,
        typer.Option("--annotate", help="Write every record, with simhash, cluster, duplicate_of and distance added."),
    ] = False,
    max_distance: Annotated[
        int | None,
        typer.Option(
            "--max-distance", "-k", min=0, max=64,
            help="Near-duplicate distance (default: the store's cluster distance; for a store without clusters, "
            f"the k recorded by `calibrate --apply`, else {DEFAULT_MAX_DISTANCE}).",
        ),
    ] = None,
    keep: Annotated[
        str,
        typer.Option(
            "--keep",
            help="first: the first of near-duplicates is kept; longest: the longest, even when a later copy "
            "replaces a representative stored before (reads the input twice: no stdin).",
        ),
    ] = "first",
    jobs: Jobs = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Records per transaction.")] = 1000,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary.")] = False,
) -> None:
    """Write the records that are not near-duplicates of an earlier record or of anything stored.

    Every record is stored and joins a cluster; the first of each cluster is kept. A rerun
    over the same input writes the same output, byte for byte.

    Example: simhash-store dedup crawl.jsonl -o clean.jsonl
    """
    from . import formats
    from .dedup import dedup_rows

    if keep not in ("first", "longest"):
        raise typer.BadParameter("must be first or longest", param_hint="--keep")
    if keep == "longest" and "-" in inputs:
        raise typer.BadParameter("--keep longest reads its input twice: give files, not stdin", param_hint="INPUTS")
    try:
        output_format = formats.format_of(output, format)
        input_formats = [formats.format_of(path, format) for path in inputs]
    except SimhashStoreError as exc:
        raise typer.BadParameter(str(exc)) from None
    for path in inputs:
        if path != "-" and not Path(path).is_file():
            fail(f"cannot open {path}: no such file")
    schema = None
    if output_format == "parquet":
        try:  # the Parquet inputs' columns keep their Arrow types in the output (the first input's first)
            schema = formats.parquet_schemas([path for path, kind in zip(inputs, input_formats) if kind == "parquet"])
        except SimhashStoreError as exc:
            fail(str(exc))

    def rows():
        for path, kind in zip(inputs, input_formats):
            yield from formats.read_records(path, kind, key_field=key_field, text_field=text_field)

    annotation_types = None
    if output_format == "parquet":
        try:
            pyarrow = formats.pyarrow_module()
        except SimhashStoreError as exc:
            fail(str(exc))
        annotation_types = {"simhash": pyarrow.string(), "cluster": pyarrow.int64(),
                            "duplicate_of": pyarrow.string(), "distance": pyarrow.int32(),
                            "not_compared": pyarrow.string()}
    kept = duplicates = bad = 0
    not_compared: Counter[str] = Counter()  # passed through without a fingerprint, by reason
    # The output is claimed before any work: a second run writing it stops here, in one line.
    if output != "-":
        for path in inputs:
            with contextlib.suppress(OSError):
                if path != "-" and os.path.samefile(path, output):
                    fail(f"the output {visible(output)} is the input {visible(path)}: write to another file")
    try:
        writer = formats.RecordWriter(output, output_format, schema=schema, extra_fields=annotation_types if annotate else None)
    except SimhashStoreError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    # Workers load their dictionaries while the store opens, as for add, unless the input is small.
    size = sum(Path(path).stat().st_size for path in inputs if path != "-")
    try:
        fingerprinter = _early_fingerprinter(None, jobs, None if "-" in inputs or size >= 1_000_000 else 0)
        with fingerprinter, opened_store() as store:
            for where, record, verdict in dedup_rows(
                rows, store=store, key=key_field, text=text_field, max_distance=max_distance, keep=keep,
                fingerprinter=fingerprinter, batch_size=batch_size,
            ):
                if verdict.problem is not None:
                    bad += 1
                    warn(f"failed: {verdict.problem}")
                    continue
                if verdict.not_compared is not None:
                    not_compared[verdict.not_compared] += 1
                elif verdict.kept:
                    kept += 1
                else:
                    duplicates += 1
                try:  # a record the output format cannot hold costs that record
                    if annotate:
                        writer.write({**record, **verdict.annotation()})
                    elif verdict.kept:
                        writer.write(dict(record))
                except formats.FormatError as exc:
                    bad += 1
                    warn(f"failed: {where}: {exc}")
            writer.close()
            if not quiet:
                note = _dedup_distance_note(store, max_distance)
                passed = "".join(
                    f"not compared {count} ({reason}: passed through), " for reason, count in sorted(not_compared.items())
                )
                err.print(f"kept {kept}, duplicates {duplicates}, {passed}bad records {bad}; {note}", markup=False)
    except KeyboardInterrupt:
        writer.abandon()
        warn("Interrupted: every finished batch is stored; run the same command again for the same output.")
        raise typer.Exit(130) from None
    except OSError as exc:  # an input that cannot be read, an output that cannot be written
        writer.abandon()
        fail(f"{exc.filename or output}: {exc.strerror or exc}")
    except BaseException:
        writer.abandon()
        raise
    if bad:
        raise typer.Exit(1)


@app.command()
def explain(
    a: Annotated[str, typer.Argument(help="First document: a file ('-' for stdin), or the text itself with --text.")],
    b: Annotated[str, typer.Argument(help="Second document, the same way.")],
    as_text: Annotated[bool, typer.Option("--text", help="A and B are the texts themselves, not file names.")] = False,
    scheme: Annotated[str, typer.Option("--scheme", help="Fingerprint scheme.")] = DEFAULT.name,
    top: Annotated[int, typer.Option(min=0, help="How many of the heaviest features to show in each list.")] = 10,
    max_distance: Annotated[
        int, typer.Option("--max-distance", "-k", min=0, max=64, help="The k to judge the distance at.")
    ] = DEFAULT_MAX_DISTANCE,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object instead of tables.")] = False,
) -> None:
    """Why two documents are near-duplicates or not: distance, shared text, heaviest features, differing bits.

    A bit's margin is its weighted sum as a share of the document's total weight: a bit
    that differs on a small margin flipped on a detail. The shingle overlap (5 characters
    of Chinese, 5 words of English) is what the texts really share; a line says when it
    and the distance disagree. No database is used.

    Example: simhash-store explain --text "保护人民，制定本法。" "保护人民，制定此法。"
    """
    from .explain import explain as explain_texts

    chosen = _known_scheme(scheme)
    texts = [value if as_text else _read_text(value) for value in (a, b)]
    try:
        result = explain_texts(texts[0], texts[1], chosen, top=top)
    except SimhashStoreError as exc:
        fail(str(exc))
    disagreement = result.disagreement(max_distance)
    if as_json:
        out.print(_json_line({**result.to_dict(), "max_distance": max_distance, "disagreement": disagreement}))
        return
    near = "near-duplicates" if result.distance <= max_distance else "not near-duplicates"
    given = "the default k" if max_distance == DEFAULT_MAX_DISTANCE else "k"
    out.print(
        f"distance {counted(result.distance, 'bit')}: {near} at {given} = {max_distance}  "
        f"(A {to_hex(result.fingerprint_a)}, B {to_hex(result.fingerprint_b)}, scheme {chosen.name})",
        markup=False,
    )
    o = result.overlap
    out.print(
        f"text shared: Jaccard {o.jaccard:.2f}, {o.containment_a:.0%} of A is in B, {o.containment_b:.0%} of B is in A "
        f"({counted(o.shared, 'shingle')} shared of {o.shingles_a:,} and {o.shingles_b:,})",
        markup=False,
    )
    if disagreement is not None:
        out.print(f"note: {disagreement}", markup=False)
    features = Table(title="heaviest features (weights)", title_justify="left")
    features.add_column("shared")
    features.add_column("A", justify="right")
    features.add_column("B", justify="right")
    features.add_column("only in A")
    features.add_column("A", justify="right")
    features.add_column("only in B")
    features.add_column("B", justify="right")
    for row in range(max(len(result.shared), len(result.only_a), len(result.only_b))):
        cells = []
        shared = result.shared[row] if row < len(result.shared) else None
        cells += [Text(visible(shared.feature)), f"{shared.weight_a:.2f}", f"{shared.weight_b:.2f}"] if shared else ["", "", ""]
        for side in (result.only_a, result.only_b):
            item = side[row] if row < len(side) else None
            cells += [Text(visible(item.feature)), f"{item.weight:.2f}"] if item else ["", ""]
        features.add_row(*cells)
    out.print(features)
    if not result.bits:
        return
    bits = Table(title="bits that differ, smallest margin first (margin: bit sum / total weight)", title_justify="left")
    for column in ("bit", "A", "margin A", "B", "margin B"):
        bits.add_column(column, justify="right")
    for bit in result.bits:
        bits.add_row(
            str(bit.bit), "1" if bit.margin_a > 0 else "0", f"{bit.margin_a:+.2%}",
            "1" if bit.margin_b > 0 else "0", f"{bit.margin_b:+.2%}",
        )
    out.print(bits)


@app.command()
def calibrate(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Files and directories of your documents (default: stored keys that name files).")
    ] = None,
    jsonl: Annotated[str | None, typer.Option("--jsonl", help="JSONL file of records with text ('-' for stdin).")] = None,
    text_field: Annotated[str, typer.Option(help="JSONL field holding the text.")] = "text",
    sample: Annotated[int, typer.Option(min=2, help="Documents to sample.")] = 200,
    seed: Annotated[str, typer.Option(help="Draws another sample and other variants.")] = "",
    plot: Annotated[Path | None, typer.Option("--plot", help="Also draw the curves into this PNG (needs matplotlib).")] = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply",
            help="Record the recommended k in the store (store_info): query, and dedup into a store without "
            "clusters, use it when -k is not given.",
        ),
    ] = False,
    scheme: SchemeOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object instead of the table.")] = False,
) -> None:
    """Choose k on your own documents: recall of near-duplicate variants and false matches for each k.

    Pairs of sampled documents whose texts are near-duplicates (shingle Jaccard >= 0.5, or one
    at least 0.8 inside the other) are listed as duplicates in the sample, not counted as false
    matches; the false matches counted are listed too.

    Example: simhash-store calibrate --jsonl corpus.jsonl --plot calibrate.png
    """
    from . import calibrate as calibration

    if plot is not None:
        try:  # before the work, which takes minutes: not a failure after it
            calibration.check_plot(plot)
        except SimhashStoreError as exc:
            fail(str(exc))
    texts: list[tuple[str, str]] = []
    names: dict[str, str] = {}  # how a JSONL record is shown (FILE:LINE), by its key
    skipped = 0
    if jsonl is not None:
        from .formats import read_records

        try:
            rows = read_records(jsonl, "jsonl", key_field=text_field, text_field=text_field)
            for number, (where, record) in enumerate(rows):
                if isinstance(record, dict) and isinstance(record.get(text_field), str):
                    texts.append((str(number), record[text_field]))  # the record's number seeds its variants
                    names[str(number)] = where
                else:
                    skipped += 1
        except OSError as exc:
            fail(f"cannot open {jsonl}: {exc.strerror}")
        except SimhashStoreError as exc:
            fail(str(exc))
    store_needed = apply or (not paths and jsonl is None) or scheme is None
    with opened_store(scheme) if store_needed else contextlib.nullcontext(None) as store:
        chosen = store.scheme if store is not None else _known_scheme(scheme)
        if paths:
            for item in corpus.walk(paths):
                if isinstance(item, corpus.Source):
                    try:
                        texts.append((item.key, corpus.decode(Path(item.path).read_bytes()).text))
                    except (OSError, corpus.DecodeError):
                        skipped += 1
        elif jsonl is None:
            for key in store.sample_keys(sample * 4, seed):
                try:
                    texts.append((key, corpus.decode(Path(key).read_bytes()).text))
                except (OSError, corpus.DecodeError):
                    skipped += 1
            if len(texts) < 2:
                fail("the store keeps fingerprints, not texts, and fewer than two stored keys name readable files "
                     "here: give the documents (PATHS or --jsonl)")
        try:
            result = calibration.calibrate(texts, chosen, sample=sample, seed=seed)
        except ValueError as exc:
            fail(str(exc))
        if apply:
            store.record_recommended_distance(result.recommended)
    if plot is not None:
        try:
            calibration.plot(
                result, str(plot),
                f"{chosen.name}: {counted(result.documents, 'document')}, {counted(result.pairs, 'pair', grouped=True)}",
            )
        except OSError as exc:  # the directory went away or filled up since the check
            fail(f"cannot write {plot}: {exc.strerror or exc}")
        except SimhashStoreError as exc:  # another run writing the same file, a link planted at its lock
            fail(str(exc))

    def named(pair) -> dict:
        return {**pair.to_dict(), "key_a": names.get(pair.key_a, pair.key_a), "key_b": names.get(pair.key_b, pair.key_b)}

    if as_json:
        record = {
            "documents": result.documents, "pairs": result.pairs, "recommended": result.recommended,
            "reason": result.reason, "rows": [vars(row) for row in result.rows], "applied": apply,
            "false_match_pairs": [named(pair) for pair in result.false_match_pairs],
            "duplicates": [named(pair) for pair in result.duplicates],
            "without_features": result.without_features,
        }
        out.print(_json_line(record))
        return
    table = Table(title=f"{counted(result.documents, 'document')} ({chosen.name}), "
                        f"{counted(result.pairs, 'pair', grouped=True)} of different documents",
                  title_justify="left")
    for column in ("k", "light variants found", "heavy variants found", "false matches", "share of pairs"):
        table.add_column(column, justify="right")
    for row in result.rows:
        table.add_row(str(row.k), f"{row.light_recall:.1%}", f"{row.heavy_recall:.1%}", str(row.false_matches),
                      f"{row.false_match_rate:.2g}", style="bold" if row.k == result.recommended else None)
    out.print(table)
    recorded = "; recorded in the store: query and dedup use it when -k is not given" if apply else ""
    out.print(f"recommended k = {result.recommended}: {result.reason}{recorded}", markup=False)
    if result.without_features:
        out.print(f"left out: {counted(result.without_features, 'text')} without features under {chosen.name}",
                  markup=False)
    if result.duplicates:
        out.print(f"the sample holds near-duplicates of its own: {counted(len(result.duplicates), 'pair')} within "
                  f"{len(result.rows) - 1} bits share their text (Jaccard >= 0.5, or one 80% inside the other); "
                  "not counted as false matches:", markup=False)
        _print_pairs([named(pair) for pair in result.duplicates])
    if result.false_match_pairs:
        out.print(f"false matches counted ({counted(len(result.false_match_pairs), 'pair')} within "
                  f"{len(result.rows) - 1} bits whose texts are not near-duplicates):", markup=False)
        _print_pairs([named(pair) for pair in result.false_match_pairs])


def _print_pairs(pairs: list[dict], shown: int = 20) -> None:
    """Pairs of sampled documents, nearest first, at most ``shown`` of them (--json lists all)."""
    for pair in pairs[:shown]:
        out.print(Text(f"  {pair['distance']:>2} bits  Jaccard {pair['jaccard']:.2f}  containment "
                       f"{pair['containment_a']:.2f}/{pair['containment_b']:.2f}  {pair['key_a']}  ~  {pair['key_b']}"))
    if len(pairs) > shown:
        out.print(f"  ... and {len(pairs) - shown} more (--json lists them all)", markup=False)


@app.command("fingerprint")
def fingerprint_command(
    files: Annotated[list[str], typer.Argument(help="Documents and directories (recursive); '-' for stdin.")],
    scheme: Annotated[str, typer.Option("--scheme", help="Fingerprint scheme.")] = DEFAULT.name,
    jobs: Jobs = None,
) -> None:
    """Print the fingerprint of each document (hex), without touching any database.

    Example: simhash-store fingerprint news.txt
    """
    chosen = _known_scheme(scheme)
    failures: list[corpus.Skip] = []
    try:
        for name, value in _fingerprint_arguments(files, chosen, jobs, failures=failures):
            out.print(f"{to_hex(value, chosen.bits)}  {visible(name)}")
    except SimhashStoreError as exc:  # a worker died: no database here, so no opened_store to catch it
        fail(str(exc))
    if failures:
        raise typer.Exit(1)


@app.command()
def remove(keys: Annotated[list[str], typer.Argument(help="Keys of documents to delete.")]) -> None:
    """Delete documents by key; keys that were not stored are named on stderr.

    Example: simhash-store remove news/2024/0001.txt
    """
    with opened_store() as store:
        result = store.remove(keys)
    out.print(f"removed {len(result.removed)} of {len(result.removed) + len(result.missing)}", markup=False)
    if result.missing:  # named, but not an error: what should be gone is gone
        warn("not stored, so not removed: " + ", ".join(result.missing))


@app.command()
def stats(as_json: JsonFlag = False) -> None:
    """Documents, scheme, the distances in use, database size and the largest block buckets.

    Example: simhash-store stats --json
    """
    with opened_store() as store:
        info = store.stats()
    if as_json:
        out.print(_json_line(info))
        return
    table = Table(show_header=False, box=None)
    table.add_column()
    table.add_column(overflow="fold")  # the whole URL, over several lines if need be, never cut
    for name in ("database", "server_version", "documents", "scheme", "default_max_distance"):
        table.add_row(name.replace("_", " "), visible(str(info[name])))
    recommended, clustered = info["recommended_max_distance"], info["cluster_max_distance"]
    table.add_row("recommended max distance", "-" if recommended is None else f"{recommended} (calibrate --apply)")
    table.add_row("cluster max distance", "- (no clusters kept)" if clustered is None else str(clustered))
    table.add_row("table + indexes", _megabytes(info["table_bytes"]))
    table.add_row("database size", _megabytes(info["database_bytes"]))
    for block, buckets in info["largest_block_buckets"].items():
        table.add_row(f"largest {block} buckets", ", ".join(f"{b['value']}: {b['documents']}" for b in buckets) or "-")
    out.print(table)


@app.command()
def optimize(
    lock_timeout: Annotated[
        float, typer.Option("--lock-timeout", min=0.001, max=86_400, metavar="SECONDS", help="How long to wait for the table.")
    ] = 10.0,
) -> None:
    """VACUUM (ANALYZE) the store: run it after restoring a dump, or after other applications bulk-insert.

    Loads and large adds do this themselves. Example: simhash-store optimize
    """
    with opened_store() as store:
        done = store.optimize(lock_timeout=lock_timeout)
    if done.vacuumed:
        out.print("optimized: vacuumed and analyzed simhash.documents")
    elif done.analyzed:
        warn(f"Warning: could not vacuum ({done.reason}); analyzed only")
    else:
        fail(f"could not vacuum or analyze simhash.documents: {done.reason}")


@app.command("grant-read")
def grant_read(
    role: Annotated[str, typer.Argument(help="A PostgreSQL role (with --password, created on the embedded server if missing).")],
    password: Annotated[
        bool,
        typer.Option(
            "--password",
            help="Also give ROLE a new generated password, printed once and kept nowhere, for TCP "
            "(serve --listen). Generated, not typed: a value on the command line shows in process lists.",
        ),
    ] = False,
) -> None:
    """Let another application's role search and read the store in SQL, but not write.

    With --password on the embedded server, ROLE is created if missing.

    Example: simhash-store grant-read news_reader --password
    """
    from . import embedded
    from .config import EMBEDDED_DATABASE, data_dir, uses_embedded

    secret = embedded.new_password() if password else None
    local = uses_embedded(state.db)
    if secret is not None and local:
        # The embedded server's superuser sets it (creating the role if missing); the grants are the owner's.
        try:
            embedded.set_login_password(data_dir(), role, secret)
        except SimhashStoreError as exc:
            fail(str(exc))
    with opened_store() as store:
        store.grant_read_only(role, password=None if local else secret)
    out.print(f"{visible(role)} may now read simhash.documents and call simhash.near(); it cannot write", markup=False)
    if secret is not None:
        out.print(f"password of {visible(role)} (shown once, kept nowhere): {secret}", markup=False)
        if local:
            tcp = embedded.tcp_address(data_dir(), EMBEDDED_DATABASE, role, secret)
            if tcp is None:
                out.print("read-only over TCP once `simhash-store serve --listen HOST:PORT` runs", markup=False)
            else:
                out.print(f"read-only URL: {tcp.libpq()}", markup=False)


@app.command()
def schemes() -> None:
    """List the named fingerprint schemes: the default, and which ones the PostgreSQL store can hold.

    Example: simhash-store schemes
    """
    for name in sorted(SCHEMES):
        s = SCHEMES[name]
        top = f", top {s.top_k}" if s.top_k else ""
        mark = "*" if name == DEFAULT.name else " "
        # The store keeps fingerprints in a bigint column (and 16-bit blocks of it).
        where = "store and fingerprint" if s.bits == 64 else "fingerprint only (the store holds 64-bit fingerprints)"
        description = f"{s.bits}-bit {s.tokenizer}, {s.weighting}{top}, {s.hash}"
        out.print(f"{mark} {name:<20} {description:<56} {where}", markup=False)
    out.print("(* the default, for a new store and for fingerprint; --scheme NAME chooses another)", markup=False)


@app.command()
def serve(
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen", metavar="HOST:PORT",
            help="Also accept TCP connections here: as the store's owner role, with a password; never as the superuser.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON object (url, host, port, user, database, superuser).")
    ] = False,
) -> None:
    """Run the embedded server in the foreground for other applications, until Ctrl-C or SIGTERM.

    Prints one line: a postgresql:// URL that psql, psycopg and SQLAlchemy take as it is
    (JDBC after a jdbc: prefix, over --listen). Meanwhile other simhash-store commands
    use this server. Without --listen: the Unix socket only you can reach, as the
    server's superuser until a serve --listen hands the store to simhash_owner. With
    --listen: TCP, as simhash_owner, which owns the store and is not a superuser; its
    password is generated once and kept, readable by you only, in the data directory.
    Read-only roles: grant-read ROLE --password.

    Example: simhash-store serve --listen 127.0.0.1:5433
    """
    address = _listen_address(listen)
    from . import embedded
    from .config import EMBEDDED_DATABASE, data_dir, uses_embedded

    if not uses_embedded(state.db or ""):  # --db, or SIMHASH_STORE_URL through it
        fail(f"serve runs the embedded server; --db and {URL_VARIABLE} name another one")

    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    try:
        shown, server = embedded.serve(data_dir(), EMBEDDED_DATABASE, address)
    except SimhashStoreError as exc:
        fail(str(exc))
    url = shown.libpq()
    superuser = shown.user != embedded.STORE_OWNER  # TCP never is; the socket until serve --listen hands the store over
    if as_json:
        fields = {"url": url, "host": shown.host, "port": shown.port, "user": shown.user, "database": shown.database}
        print(json.dumps({**fields, "superuser": superuser}), flush=True)
    else:
        print(url, flush=True)
    if superuser:
        rights = f"as the server's superuser {shown.user}, over its Unix socket only you can reach"
    elif address is None:
        rights = f"over its Unix socket only you can reach, as {shown.user}, the store's owner (not a superuser)"
    else:
        rights = f"over TCP as {shown.user}, the store's owner, not a superuser (the superuser: Unix socket only)"
    warn(f"serving the embedded simhash store {rights}; Ctrl-C stops it (other commands now use this server)")
    while not stop.wait(1.0):
        if not embedded.server_is_running(server):
            fail("the embedded server stopped (was it killed?)")


@app.command()
def url() -> None:
    """Print the URL of the store in use (the embedded server's too), in libpq form, for psql and other programs.

    While serve runs (else the embedded server stops when this command exits). The embedded
    server's URL is over the Unix socket only you can reach: as its superuser, or, once
    serve --listen has handed the store over, as the store's owner simhash_owner. Other
    applications get the owner from serve --listen, or a role of their own from
    grant-read ROLE --password.

    Example: simhash-store url   # then: psql "$(simhash-store url)"
    """
    from .config import EMBEDDED_DATABASE, data_dir, resolve_url, uses_embedded

    try:
        if uses_embedded(state.db):
            from . import embedded

            # Spelled as serve prints it: one store, one URL.
            shown = embedded.address(data_dir(), EMBEDDED_DATABASE).libpq()
        else:
            shown = resolve_url(state.db).set(drivername="postgresql").render_as_string(hide_password=False)
    except SimhashStoreError as exc:
        fail(str(exc))
    out.print(shown, markup=False)


# ------------------------------------------------------------ helpers


def _listen_address(listen: str | None) -> tuple[str, int] | None:
    """HOST:PORT (or [IPv6]:PORT) checked before anything starts."""
    if listen is None:
        return None
    host, _, port = listen.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    valid_host = bool(host) and all(c.isalnum() or c in ".-:*" for c in host)
    if not valid_host or not port.isdigit() or not 0 < int(port) < 65536:
        raise typer.BadParameter(
            f"{listen!r} is not HOST:PORT (for example 127.0.0.1:5433, or 0.0.0.0:5433 for every address)",
            param_hint="--listen",
        )
    return host, int(port)



def _known_scheme(name: str):
    try:
        return get_scheme(name)
    except SimhashStoreError as exc:
        raise typer.BadParameter(str(exc), param_hint="--scheme") from None


def _open_binary(path: str):
    try:
        return open(path, "rb")
    except OSError as exc:
        fail(f"cannot open {path}: {exc.strerror}")


def _read_text(path: str) -> str:
    """A document's text, decoded as ``add`` decodes files; one error line if it cannot be."""
    limit = records.DEFAULT_MAX_BYTES  # as add and fingerprint read stdin: a stream may never end
    with contextlib.suppress(OSError):  # a missing file is said by open() below
        mode = os.stat(path).st_mode if path != "-" else stat.S_IFREG
        if not stat.S_ISREG(mode):  # a FIFO would wait for a writer forever, /dev/zero never ends
            fail(f"cannot open {visible(path)}: not a regular file ({corpus.special_kind(mode)})")
    try:
        with open(sys.stdin.fileno(), "rb", closefd=False) if path == "-" else open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        fail(f"cannot open {visible(path)}: {exc.strerror}")
    if len(data) > limit:
        fail(f"{visible(path)}: {corpus.TOO_LARGE} (more than {limit >> 20} MiB)")
    try:
        return corpus.decode(data).text
    except corpus.DecodeError as exc:
        fail(f"{path}: {exc.reason}" + (f" ({exc.detail})" if exc.detail else ""))


def _chain(*iterables):
    for iterable in iterables:
        yield from iterable


def _early_fingerprinter(
    scheme: str | None, jobs: int | None, documents: int | None, few_too: bool = False
) -> ingest.Fingerprinter:
    """Workers for the store's scheme (guessed: the one named, else the default), started now
    when there is enough to do, so they load their dictionaries while this process opens the store.

    ``few_too``: for a handful of documents, one worker, which the command waits for anyway
    (a query cannot start before its fingerprints); it makes loading the dictionaries and
    opening the store run side by side.
    """
    fingerprinter = ingest.Fingerprinter(SCHEMES.get(scheme or DEFAULT.name, DEFAULT), jobs)
    if documents is None or documents >= ingest.PARALLEL_THRESHOLD:
        fingerprinter.start()
    elif documents and few_too:
        fingerprinter.start(workers=1)
    return fingerprinter


def _fingerprint_arguments(
    files: list[str],
    scheme,
    jobs,
    fingerprinter: ingest.Fingerprinter | None = None,
    failures: list[corpus.Skip] | None = None,
) -> Iterator[tuple[str, int]]:
    """(name, fingerprint) for each readable document, directories walked as `add` walks them;
    failures reported on stderr and appended to ``failures``."""
    failures = [] if failures is None else failures
    sources: list = []
    for name in files:
        if name == "-":
            data = sys.stdin.buffer.read(records.DEFAULT_MAX_BYTES + 1)
            if len(data) > records.DEFAULT_MAX_BYTES:
                sources.append(corpus.Skip("-", corpus.TOO_LARGE, f"over {records.DEFAULT_MAX_BYTES:,} bytes"))
                continue
            try:
                sources.append(corpus.Source("-", text=corpus.decode(data).text, size=len(data)))
            except corpus.DecodeError as exc:
                sources.append(corpus.Skip("-", exc.reason, exc.detail))
        elif Path(name).is_dir():  # named by path, as given under the directory, not by the key add would give
            sources.extend(
                dataclasses.replace(item, key=item.path) if isinstance(item, corpus.Source) else item
                for item in _walk([name], None, None, False, "")
            )
        else:
            sources.append(corpus.file_source(name))
    named = set(files)
    for item in ingest.fingerprint_sources(sources, scheme, jobs=jobs, fingerprinter=fingerprinter):
        if item.skip is None:
            if item.warning is not None:
                warn(f"warning: {item.warning}")
            yield item.key, item.fingerprint
        elif item.skip.deliberate and item.skip.where not in named:
            warn(f"skipped: {item.skip}")  # a binary file found in a directory: not an error
        else:
            failures.append(item.skip)
            warn(f"failed: {item.skip}")


def _walk(paths, include, exclude, hidden: bool, prefix: str) -> list:
    try:
        return list(corpus.walk(paths, include=include or [], exclude=exclude or [], hidden=hidden, prefix=prefix))
    except ValueError as exc:  # an empty pattern
        raise typer.BadParameter(str(exc), param_hint="--include/--exclude") from None


def _size(value: str, option: str) -> int:
    """Bytes from 1000, 500K, 200M or 2G (powers of 1024)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "")
    try:
        size = int(float(number) * units[unit])
    except (ValueError, OverflowError):
        raise typer.BadParameter(f"{value!r} is not a size like 1000, 500M or 2G", param_hint=option) from None
    if size < 1:
        raise typer.BadParameter("must be at least 1 byte", param_hint=option)
    return size


def _print_matches(name: str, value: int, matches, max_distance: int, as_json: bool) -> None:
    if as_json:
        record = {
            "query": name,
            "fingerprint": to_hex(value),
            "matches": [
                {"key": m.key, "distance": m.distance, "similarity": round(m.similarity, 6)} for m in matches
            ],
        }
        out.print(_json_line(record), markup=False)
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


def _calibrated_distance(store: Store, given: int | None) -> int:
    """-k if given, else the k recorded by `calibrate --apply` (said on stderr), else the default."""
    if given is not None:
        return given
    recommended = store.recommended_distance()
    if recommended is None:
        return DEFAULT_MAX_DISTANCE
    err.print(f"k = {recommended}, recommended by calibrate --apply (-k overrides)", markup=False)
    return recommended


def _dedup_distance_note(store: Store, given: int | None) -> str:
    """At which k dedup ran, and why (for its summary line)."""
    distance, _ = store.cluster_state()
    recommended = store.recommended_distance()
    if given is not None:
        return f"k = {distance}"
    if recommended == distance:
        return f"k = {distance}, recommended by calibrate --apply"
    if recommended is None:
        return f"k = {distance}, the store's cluster distance"
    return (f"k = {distance}, the store's cluster distance (calibrate --apply recommends {recommended}: "
            f"`simhash-store recluster -k {recommended}` re-clusters the store at it)")


def _print_add_summary(summary: ingest.IngestSummary, elapsed: float) -> None:
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


def _print_clusters(store, max_distance: int, as_json: bool) -> None:
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
            out.print(_json_line(record), markup=False)
        else:
            members = "  ".join(f"{visible(key)} ({distance})" for key, distance in group.members[1:])
            out.print(f"cluster {group.id} ({group.size}): {visible(group.representative)} <- {members}")
    if not as_json:
        err.print(f"{counted(len(groups), 'cluster')} of two or more documents at distance {max_distance}")
        if not stored:
            err.print(f"(computed, not stored: `simhash-store recluster -k {max_distance}` keeps them, with stable ids)")


def _megabytes(size: int) -> str:
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
def _progress(quiet: bool, total_documents: int | None, total_bytes: int):
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


def hide_secrets_from_process_list(arguments: list[str]) -> None:
    """Blank out passwords given on the command line (``--db postgresql://u:secret@...``) where
    ``ps`` and /proc/PID/cmdline show them, before any worker is forked with a copy.

    Linux only, and only after the interpreter has started: between exec and this call the
    password is visible. SIMHASH_STORE_URL or ~/.pgpass keep it off the command line entirely.
    """
    from .config import raw_secrets

    secrets = [secret.encode() for argument in arguments for secret in raw_secrets(argument.partition("--db=")[2] or argument)]
    if not secrets:
        return
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start and arg_end: fields 48 and 49 of proc(5)
        with open("/proc/self/mem", "r+b", buffering=0) as memory:
            memory.seek(start)
            original = memory.read(end - start)
            blanked = original
            for secret in sorted(secrets, key=len, reverse=True):
                blanked = blanked.replace(secret, b"*" * len(secret))
            if blanked != original:
                memory.seek(start)
                memory.write(blanked)
    except (OSError, ValueError, IndexError):
        pass  # not Linux, or /proc is not ours to write: nothing more can be done here


def main() -> None:
    hide_secrets_from_process_list(sys.argv[1:])
    try:
        app()
    finally:
        # The interpreter's teardown collects garbage over every object the imports made
        # (SQLAlchemy, pydantic, rich: some 90,000), which takes longer than many a command;
        # frozen, they are left to the operating system. Files are still flushed and closed,
        # atexit handlers still run (the embedded server is still stopped).
        gc.freeze()


if __name__ == "__main__":
    main()
