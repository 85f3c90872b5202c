"""Commands that fingerprint and compare: query, explain, fingerprint."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.table import Table
from rich.text import Text

from .. import corpus, formats, ingest
from ..bits import from_hex, to_hex
from ..errors import SimhashStoreError
from ..plural import counted
from ..scheme import DEFAULT, DEFAULT_MAX_DISTANCE, Scheme
from ..segments import DEFAULT_MIN_SCORE
from ..sources import read_text
from ..terminal import json_line, visible
from .common import (
    CalibratedMaxDistance,
    ContainmentFlag,
    Jobs,
    JsonFlag,
    MinScore,
    SchemeOption,
    Terminated,
    err,
    fail,
    interrupt_on_sigterm,
    known_scheme,
    opened_store,
    out,
    raise_if_interrupted,
    refuse_options,
    warn,
)
from .inputs import (
    FormatOption,
    HtmlField,
    Output,
    OutputFormatOption,
    TextField,
    input_format,
    open_writer,
    refuse_output_onto_input,
    resolved,
    text_role,
)
from .inputs import output_format as output_format_of
from .render import match_record, print_matches

# A stored key is asked for one more match than --limit (its own document is left out), and the
# store takes at most a bigint: past this, "not N+1" named a number the user never gave.
MAX_LIMIT = 2**63 - 2

if TYPE_CHECKING:
    from ..store import Store


def query(
    ctx: typer.Context,
    files: Annotated[
        list[str] | None,
        typer.Argument(
            help="Documents and directories (recursive), or JSONL, CSV, TSV, Parquet records, to look up ('-' for stdin)."
        ),
    ] = None,
    fingerprint: Annotated[
        list[str] | None, typer.Option("--fingerprint", "-f", help="A fingerprint (16 hex digits) to look up.")
    ] = None,
    key: Annotated[
        list[str] | None, typer.Option("--key", help="A stored document's key: look up what is near it (repeatable).")
    ] = None,
    jsonl: Annotated[
        str | None, typer.Option("--jsonl", help="JSONL file of records to look up, one answer each ('-' for stdin).")
    ] = None,
    format: FormatOption = None,
    key_field: Annotated[
        str, typer.Option("--key-field", help="Field of a record naming it in the answers (default: FILE:LINE).")
    ] = "key",
    text_field: TextField = "text",
    html_field: HtmlField = None,
    max_distance: CalibratedMaxDistance = None,
    limit: Annotated[
        int | None, typer.Option(min=1, max=MAX_LIMIT, help="At most this many matches per query.")
    ] = None,
    as_json: JsonFlag = False,
    output: Output = None,
    output_format: OutputFormatOption = None,
    scheme: SchemeOption = None,
    jobs: Jobs = None,
    containment: ContainmentFlag = False,
    min_score: MinScore = DEFAULT_MIN_SCORE,
) -> None:
    """Find stored documents near each given document, record or stored key, nearest first.

    With --containment: stored documents that hold most of each document, or lie mostly inside
    it (a store made with init --segments), best first, with the score and which is inside.

    Example: simhash-store query edited-copy.txt -k 3 --json
    """
    from ..store_info import query_distance  # psycopg: not for the commands without a database

    if not files and not fingerprint and not key and jsonl is None:
        raise typer.BadParameter(
            "give documents to look up, '-' for stdin, --jsonl FILE, --key KEY or --fingerprint HEX", param_hint="FILES"
        )
    if containment:
        if fingerprint:
            raise typer.BadParameter("--containment reads documents, not fingerprints", param_hint="--fingerprint")
        refuse_options(
            ctx,
            "--containment",
            {
                "key": "--key",
                "jsonl": "--jsonl",
                "format": "--format",
                "key_field": "--key-field",
                "text_field": "--text-field",
                "html_field": "--html-field",
                "max_distance": "-k/--max-distance",
                "limit": "--limit",
                "output": "-o/--output",
                "output_format": "--output-format",
            },
        )
        _query_containment(files or [], min_score, as_json, scheme, jobs)
        return
    given = input_format(format)
    written = output_format_of(output, output_format) if output is not None else None
    queries: list[tuple[str, int]] = []
    for value in fingerprint or []:
        try:
            queries.append((value, from_hex(value)))
        except SimhashStoreError as exc:
            raise typer.BadParameter(str(exc), param_hint="--fingerprint") from None
    options = formats.ReadOptions(
        key_field=key_field, text_field=text_field, required=text_role(text_field, html_field), html_field=html_field
    )
    names = [*(files or []), *([jsonl] if jsonl is not None else [])]
    kinds = [*(given for _ in files or []), *(["jsonl"] if jsonl is not None else [])]
    for name, kind in zip(names, kinds):
        resolved(name, kind, "text")  # a format named wrong is a usage error, before any work
    refuse_output_onto_input(output, names)
    if output is not None:
        interrupt_on_sigterm()  # SIGTERM, like Ctrl-C, removes the output's temporary and lock files
    writer = None
    failures: list[corpus.Skip] = []
    try:  # from the moment the output is claimed: a signal at any point removes its files
        writer = open_writer(output, written) if output is not None and written is not None else None
        fingerprinter = ingest.early_fingerprinter(
            scheme, jobs, len(files or []) if jsonl is None else None, few_too=True
        )
        with fingerprinter, opened_store(scheme, lookup=True) as store:
            stored = store.fingerprints(key) if key else {}
            for name in key or []:
                if name in stored:
                    queries.append((name, stored[name]))
                else:
                    failures.append(corpus.Skip(name, "not stored"))
                    warn(f"failed: {name}: not stored")
            # A record stored under its key with the same text takes its stored fingerprint.
            found = _fingerprints(
                names, store.scheme, jobs, fingerprinter, failures, kinds, options, stored=store.stored_digests
            )
            max_distance, note = query_distance(store, max_distance)
            if note is not None:
                err.print(note, markup=False)
            for batch in _batched(itertools.chain(queries, found), 1000):
                # A stored key's own document is not near itself: asked for one more, and left out.
                results = store.query_many(
                    [value for _, value in batch], max_distance, limit=None if limit is None else limit + 1
                )
                for (name, value), matches in zip(batch, results):
                    matches = [m for m in matches if not (name in stored and m.key == name)][:limit]
                    if writer is not None:
                        writer.write(match_record(name, value, matches))
                    if writer is None or as_json and output != "-":
                        print_matches(name, value, matches, max_distance, as_json)
        if writer is not None:
            raise_if_interrupted()  # one Python dropped (in a callback) must not make the output final
            writer.close()
    except KeyboardInterrupt as exc:
        if output is None:
            raise
        if writer is not None:
            writer.abandon()
        warn(f"Interrupted: nothing was written to {output}; run the same command again for it.")
        raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None
    except BaseException:
        if writer is not None:
            writer.abandon()
        raise
    if failures:
        raise typer.Exit(1)


def _batched(items: Iterable[tuple[str, int]], size: int) -> Iterator[list[tuple[str, int]]]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


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
    show_text: Annotated[
        bool,
        typer.Option("--show-text", help="Print the text compared first (a web page's: its extracted main content)."),
    ] = False,
) -> None:
    """Why two documents are near-duplicates or not: distance, shared text, heaviest features, differing bits.

    A bit's margin is its weighted sum as a share of the document's total weight: a bit
    that differs on a small margin flipped on a detail. The shingle overlap (5 characters
    of Chinese, 5 words of English) is what the texts really share; a line says when it
    and the distance disagree. No database is used.

    Example: simhash-store explain --text "保护人民，制定本法。" "保护人民，制定此法。"
    """
    from ..explain import explain as explain_texts

    chosen = known_scheme(scheme)
    try:
        texts = [value if as_text else read_text(value) for value in (a, b)]
    except SimhashStoreError as exc:
        fail(str(exc))
    if show_text and not as_json:
        for label, name, text in (("A", a, texts[0]), ("B", b, texts[1])):
            lines = "\n".join(visible(line) for line in text.splitlines())  # control characters escaped, lines kept
            out.print(Text(f"text of {label} ({visible(name)}):\n{lines}\n"))
    try:
        result = explain_texts(texts[0], texts[1], chosen, top=top)
    except SimhashStoreError as exc:
        fail(str(exc))
    disagreement = result.disagreement(max_distance)
    if as_json:
        shown = {"text_a": texts[0], "text_b": texts[1]} if show_text else {}
        out.print(json_line({**result.to_dict(), "max_distance": max_distance, "disagreement": disagreement, **shown}))
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
        cells += (
            [Text(visible(shared.feature)), f"{shared.weight_a:.2f}", f"{shared.weight_b:.2f}"]
            if shared
            else ["", "", ""]
        )
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
            str(bit.bit),
            "1" if bit.margin_a > 0 else "0",
            f"{bit.margin_a:+.2%}",
            "1" if bit.margin_b > 0 else "0",
            f"{bit.margin_b:+.2%}",
        )
    out.print(bits)


def fingerprint_command(
    files: Annotated[list[str], typer.Argument(help="Documents and directories (recursive); '-' for stdin.")],
    scheme: Annotated[str, typer.Option("--scheme", help="Fingerprint scheme.")] = DEFAULT.name,
    jobs: Jobs = None,
) -> None:
    """Print the fingerprint of each document (hex), without touching any database.

    Example: simhash-store fingerprint news.txt
    """
    chosen = known_scheme(scheme)
    failures: list[corpus.Skip] = []
    try:
        for name, value in _fingerprints(files, chosen, jobs, failures=failures):
            out.print(f"{to_hex(value, chosen.bits)}  {visible(name)}")
    except SimhashStoreError as exc:  # a worker died: no database here, so no opened_store to catch it
        fail(str(exc))
    if failures:
        raise typer.Exit(1)


def _query_containment(files: list[str], min_score: float, as_json: bool, scheme: str | None, jobs: int | None) -> None:
    """query --containment: each document's segments against the store's."""
    failures: list[corpus.Skip] = []
    with opened_store(scheme) as opened:
        store = cast("Store", opened)  # not lookup=True: a Store
        if not store.keeps_segments:  # before reading the documents
            fail(
                f"the store at {store.display_url} keeps no segments: run `simhash-store init --segments` "
                "(then add the documents again) for containment search"
            )
        for name, values in _fingerprints(files, store.scheme, jobs, None, failures, segments=True):
            for match in store.query_segments(values, min_score=min_score):
                record = {
                    "query": name,
                    "key": match.key,
                    "score": round(match.score, 4),
                    "inner": match.inner,
                    "matched": match.matched,
                    "segments": match.segments,
                }
                where = "inside" if match.inner == "query" else "holds"
                line = f"{visible(name)}  {match.score:.2f}  {where}  {visible(match.key)}"
                out.print(json_line(record) if as_json else line, markup=False)
    if failures:
        raise typer.Exit(1)


def _fingerprints(
    files: list[str],
    scheme: Scheme,
    jobs: int | None,
    fingerprinter: ingest.Fingerprinter | None = None,
    failures: list[corpus.Skip] | None = None,
    kinds: list[str | None] | None = None,
    options: formats.ReadOptions | None = None,
    segments: bool = False,
    stored: ingest.StoredDigests | None = None,
) -> Iterator[tuple[str, Any]]:
    """(name, fingerprint) for each readable document the arguments name (in the input formats
    ``kinds``; default: text; ``segments``: (name, its segments' fingerprints)); skips and failures
    said on stderr, failures appended to ``failures``. An input that cannot be opened, or whose
    first record lacks the text, is one line."""
    failures = [] if failures is None else failures
    found = ingest.fingerprint_arguments(
        files,
        scheme,
        jobs=jobs,
        fingerprinter=fingerprinter,
        formats=kinds,
        options=options,
        segments=segments,
        stored=stored,
    )
    try:
        for item, failed in found:
            if item.skip is None:
                if item.warning is not None:
                    warn(f"warning: {item.warning}")
                yield item.key, item.segments if segments else item.fingerprint
            elif not failed:
                warn(f"skipped: {item.skip}")  # a binary file found in a directory: not an error
            else:
                failures.append(item.skip)
                warn(f"failed: {item.skip}")
    except formats.MissingFieldError as exc:
        fail(f"{exc} (choose it with --text-field)")
