"""What Typer's help and number checks say, made plain: PATH, TEXT, INTEGER or [a|b|c] for
types, and our own words for a number out of range."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import get_args

import typer
from typer.core import TyperArgument


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


def plain_help(params) -> None:
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


def plain_number_errors(params) -> None:
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
    number: float | int
    try:
        number = float(value)  # "3.0" is 3, as Typer takes it
    except ValueError:
        number = math.nan
    if math.isnan(number) or (kind is int and not number.is_integer()):
        wanted = "a whole number" if kind is int else "a number"
        raise typer.BadParameter(f"{value!r} is not {wanted}", param_hint=hint)
    if kind is int:
        # Compared as a float, 2**63 - 2 was past a bound of 2**63 - 2 (both round to 2**63).
        with contextlib.suppress(ValueError):
            number = int(value.strip())
    low, high = param.min, param.max
    if low is not None and high is not None and not low <= number <= high:
        raise typer.BadParameter(f"must be from {_bound(low)} to {_bound(high)}, not {value}", param_hint=hint)
    if low is not None and high is None and number < low:
        raise typer.BadParameter(f"must be at least {_bound(low)}, not {value}", param_hint=hint)
    if high is not None and low is None and number > high:
        raise typer.BadParameter(f"must be at most {_bound(high)}, not {value}", param_hint=hint)


def _bound(value: float) -> str:
    """A bound as the user would type it: a whole number in full (2147483647, not 2.14748e+09)."""
    return str(value) if isinstance(value, int) else f"{value:g}"
