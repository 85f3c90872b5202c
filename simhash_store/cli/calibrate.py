"""The calibrate command: choose k on your own documents."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .. import formats
from ..errors import SimhashStoreError
from ..plural import counted
from ..terminal import json_line
from .common import (
    QuietFlag,
    SchemeOption,
    fail,
    known_scheme,
    opened_store,
    out,
)
from .inputs import FormatOption, HtmlField, TextField, input_format, refuse_output_onto_input, resolved
from .render import print_pairs, progress


def calibrate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files and directories of your documents, or JSONL, CSV, TSV, Parquet records ('-' for stdin; "
            "default: stored keys that name files)."
        ),
    ] = None,
    jsonl: Annotated[
        str | None, typer.Option("--jsonl", help="JSONL file of records with text ('-' for stdin).")
    ] = None,
    format: FormatOption = None,
    text_field: TextField = "text",
    html_field: HtmlField = None,
    sample: Annotated[int, typer.Option(min=2, help="Documents to sample.")] = 200,
    seed: Annotated[str, typer.Option(help="Draws another sample and other variants.")] = "",
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw the curves into this PNG (needs matplotlib).")
    ] = None,
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
    quiet: QuietFlag = False,
) -> None:
    """Choose k on your own documents: recall of near-duplicate variants and false matches for each k.

    Pairs of sampled documents whose texts are near-duplicates (shingle Jaccard >= 0.5, or one
    at least 0.8 inside the other) are listed as duplicates in the sample, not counted as false
    matches; the false matches counted are listed too.

    Example: simhash-store calibrate --jsonl corpus.jsonl --plot calibrate.png
    """
    from .. import calibrate as calibration
    from .. import calibration_texts

    refuse_output_onto_input(plot, [*([jsonl] if jsonl is not None else []), *(paths or [])])
    if plot is not None:
        try:  # before the work, which takes minutes: not a failure after it
            calibration.check_plot(plot)
        except SimhashStoreError as exc:
            fail(str(exc))
    given = input_format(format)
    names = [*([jsonl] if jsonl is not None else []), *(str(path) for path in paths or [])]
    kinds = [*(["jsonl"] if jsonl is not None else []), *(given for _ in paths or [])]
    for name, kind in zip(names, kinds):
        resolved(name, kind, "text")  # a format named wrong is a usage error, before any work
    texts = calibration_texts.Texts()
    if names:
        try:
            texts = calibration_texts.texts_of_inputs(names, kinds, text_field, html_field=html_field)
        except formats.MissingFieldError as exc:
            fail(f"{exc} (choose it with --text-field)")
        except SimhashStoreError as exc:
            fail(str(exc))
    store_needed = apply or not names or scheme is None
    with opened_store(scheme) if store_needed else contextlib.nullcontext(None) as store:
        chosen = store.scheme if store is not None else known_scheme(scheme)
        if not names:
            try:
                texts = calibration_texts.texts_of_keys(store.sample_keys(sample * 4, seed))
            except SimhashStoreError as exc:
                fail(str(exc))
        try:
            with progress("calibrating", quiet, min(sample, len(texts.texts)), unit="fingerprints") as on_progress:
                result = calibration.calibrate(texts.texts, chosen, sample=sample, seed=seed, on_progress=on_progress)
        except ValueError as exc:
            fail(str(exc))
        if apply:
            store.record_recommended_distance(result.recommended)
    if plot is not None:
        try:
            calibration.plot(
                result,
                str(plot),
                f"{chosen.name}: {counted(result.documents, 'document')}, {counted(result.pairs, 'pair', grouped=True)}",
            )
        except OSError as exc:  # the directory went away or filled up since the check
            fail(f"cannot write {plot}: {exc.strerror or exc}")
        except SimhashStoreError as exc:  # another run writing the same file, a link planted at its lock
            fail(str(exc))

    def named(pair) -> dict:
        return {
            **pair.to_dict(),
            "key_a": texts.names.get(pair.key_a, pair.key_a),
            "key_b": texts.names.get(pair.key_b, pair.key_b),
        }

    if as_json:
        record = {
            "documents": result.documents,
            "pairs": result.pairs,
            "recommended": result.recommended,
            "reason": result.reason,
            "rows": [vars(row) for row in result.rows],
            "applied": apply,
            "false_match_pairs": [named(pair) for pair in result.false_match_pairs],
            "duplicates": [named(pair) for pair in result.duplicates],
            "without_features": result.without_features,
        }
        out.print(json_line(record))
        return
    table = Table(
        title=f"{counted(result.documents, 'document')} ({chosen.name}), "
        f"{counted(result.pairs, 'pair', grouped=True)} of different documents",
        title_justify="left",
    )
    for column in ("k", "light variants found", "heavy variants found", "false matches", "share of pairs"):
        table.add_column(column, justify="right")
    for row in result.rows:
        table.add_row(
            str(row.k),
            f"{row.light_recall:.1%}",
            f"{row.heavy_recall:.1%}",
            str(row.false_matches),
            f"{row.false_match_rate:.2g}",
            style="bold" if row.k == result.recommended else None,
        )
    out.print(table)
    recorded = "; recorded in the store: query and dedup use it when -k is not given" if apply else ""
    out.print(f"recommended k = {result.recommended}: {result.reason}{recorded}", markup=False)
    if result.without_features:
        out.print(
            f"left out: {counted(result.without_features, 'text')} without features under {chosen.name}", markup=False
        )
    if result.duplicates:
        out.print(
            f"the sample holds near-duplicates of its own: {counted(len(result.duplicates), 'pair')} within "
            f"{len(result.rows) - 1} bits share their text (Jaccard >= 0.5, or one 80% inside the other); "
            "not counted as false matches:",
            markup=False,
        )
        print_pairs([named(pair) for pair in result.duplicates])
    if result.false_match_pairs:
        out.print(
            f"false matches counted ({counted(len(result.false_match_pairs), 'pair')} within "
            f"{len(result.rows) - 1} bits whose texts are not near-duplicates):",
            markup=False,
        )
        print_pairs([named(pair) for pair in result.false_match_pairs])
