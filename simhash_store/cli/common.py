"""What every command shares: the app and its Typer group, the --db state, the option types,
the opened store (Lookup or Store), and one-line errors and warnings."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from ..config import URL_VARIABLE
from ..errors import SchemeMismatchError, SimhashStoreError, SimhashStoreWarning
from ..scheme import DEFAULT, DEFAULT_MAX_DISTANCE, get_scheme
from ..terminal import visible
from .help import plain_help, plain_number_errors

if TYPE_CHECKING:
    from ..keep import KeepPolicy
    from ..lookup import Lookup
    from ..store import Store

# The store module (SQLAlchemy, psycopg) is imported by the commands that use it:
# `add` starts its workers before that import (see ingest.Fingerprinter.start).


class State:
    db: str | None = None


state = State()


def _set_db(ctx, param, value: str | None) -> None:
    if value is not None:
        state.db = value


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
                    param_decls=["--db"],
                    type_descriptor=own.type_descriptor,
                    expose_value=False,
                    callback=_set_db,
                    metavar="URL",
                    help=f"PostgreSQL URL (default: {URL_VARIABLE}, else the embedded server).",
                )
            )
        plain_help(command.params)
        plain_number_errors(command.params)
        command._simhash_prepared = True
        return command


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


def print_line(line: str) -> None:
    """One line of data (already made visible) to stdout as it is: what ``out.print`` writes for it,
    without rich's layout of each line (about 12,000 lines a second), for outputs of millions of lines."""
    out.file.write(line + "\n")


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar=URL_VARIABLE,
        show_envvar=True,
        metavar="URL",
        help="PostgreSQL URL (default: the embedded server). Also accepted after the command.",
    ),
]
MaxDistance = Annotated[
    int,
    typer.Option("--max-distance", "-k", min=0, max=64, help="Largest Hamming distance (bits) that counts as near."),
]
CalibratedMaxDistance = Annotated[
    int | None,
    typer.Option(
        "--max-distance",
        "-k",
        min=0,
        max=64,
        help="Largest Hamming distance (bits) that counts as near (default: the k recorded by "
        f"`calibrate --apply`, else {DEFAULT_MAX_DISTANCE}).",
    ),
]
SchemeOption = Annotated[
    str | None,
    typer.Option("--scheme", help=f"Fingerprint scheme (default: the store's, or {DEFAULT.name} for a new store)."),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="One JSON object per line instead of tables.")]
QuietFlag = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on the terminal.")]
Jobs = Annotated[
    int | None,
    typer.Option("--jobs", "-j", min=1, help="Worker processes (default and most: all cores, two at least)."),
]
ContainmentFlag = Annotated[
    bool,
    typer.Option(
        "--containment",
        help="One document mostly inside another, from their segments (a store made with init --segments).",
    ),
]
MinScore = Annotated[
    float,
    typer.Option(
        "--min-score",
        min=0.0,
        max=1.0,
        help="With --containment: the least share of the inner document's segments found in the outer one.",
    ),
]
KeepOption = Annotated[
    str | None,
    typer.Option(
        "--keep",
        metavar="first|longest|shortest|field:NAME[:asc|desc]",
        help="Which copy represents its cluster: the first to arrive, the longest, the shortest, or the lowest "
        "(asc) or highest (desc) value of a field (numbers by value, strings such as ISO dates by text, "
        "missing last); ties go to the first to arrive. Default: the store's (first for a new store); "
        "another needs an empty store or `recluster --keep`.",
    ),
]


def keep_policy(keep: str | None) -> KeepPolicy | None:
    """The parsed --keep, or None when left out (the store's policy)."""
    from ..keep import KeepPolicy

    if keep is None:
        return None
    try:
        return KeepPolicy.parse(keep)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--keep") from None


def stored_keep_policy(store: Store) -> KeepPolicy:
    """The store's keep policy; first for a store not created yet."""
    from ..keep import KeepPolicy

    try:
        return store.keep_policy()
    except SimhashStoreError:
        return KeepPolicy()


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
        from ..lookup import Lookup

        view = Lookup(state.db, scheme=scheme)
        if view.connects_directly:
            return view
    from ..store import Store

    return Store(state.db, scheme=scheme)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, SimhashStoreWarning):
        warn(f"Warning: {message}")
    else:
        _default_show_warning(message, category, filename, lineno, file, line)


def refuse_options(ctx: typer.Context, flag: str, options: dict[str, str]) -> None:
    """A usage error naming the first of ``options`` (parameter name: how it is written) given on the
    command line or through the environment, which ``flag`` does not take: ignored, it would leave
    its user believing it held (``dups --containment -o FILE`` wrote nothing there, and a stale FILE stayed)."""
    for name, shown in options.items():
        source = ctx.get_parameter_source(name)  # by name: typer's context may be of its own click
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            raise typer.BadParameter(f"{flag} does not take {shown} (it would be ignored)", param_hint=f"'{shown}'")


def fail(message: str, code: int = 1) -> None:
    """One line on stderr (the keys and paths in ``message`` made visible), and exit."""
    err.print(Text(f"Error: {visible(message)}"))
    raise typer.Exit(code)


def warn(message: str) -> None:
    err.print(Text(visible(message)))


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is: ``finally`` blocks and exit handlers run."""


# The interrupts this process was sent, in order: Python drops an exception raised where it
# cannot be handled (a garbage collector's callback, a __del__), so a Ctrl-C arriving there
# would be lost, and the run would finish and replace its output. See :func:`raise_if_interrupted`.
_interrupted: list[type[KeyboardInterrupt]] = []


def interrupt_on_sigterm() -> None:
    """Raise :class:`Terminated` in this process on SIGTERM (the default kills it on the spot,
    leaving its temporary files), and remember it and Ctrl-C for :func:`raise_if_interrupted`.
    A forked worker that inherits the handler dies as before."""
    owner = os.getpid()

    def handler(number: int, frame: object) -> None:
        if os.getpid() != owner:
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
            return
        signal.signal(number, signal.SIG_IGN)  # once: a second SIGTERM must not cut the clean-up short
        _interrupted.append(Terminated)
        raise Terminated

    def on_ctrl_c(number: int, frame: object) -> None:
        _interrupted.append(KeyboardInterrupt)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_ctrl_c)
    previous_hook = sys.unraisablehook

    def unraisable(found: Any) -> None:
        # An interrupt Python dropped is remembered above and ends the run in one line: its
        # "Exception ignored in ..." traceback is not printed.
        if isinstance(found.exc_value, KeyboardInterrupt):
            if not _interrupted:
                _interrupted.append(type(found.exc_value))
            return
        previous_hook(found)

    sys.unraisablehook = unraisable


def raise_if_interrupted() -> None:
    """Raise the first interrupt this process was sent, if any (it may have been raised where
    Python drops exceptions): called before a run makes its work final."""
    if _interrupted:
        raise _interrupted[0]()


def known_scheme(name: str):
    try:
        return get_scheme(name)
    except SimhashStoreError as exc:
        raise typer.BadParameter(str(exc), param_hint="--scheme") from None


def open_binary(path: str):
    try:
        return open(path, "rb")
    except OSError as exc:
        fail(f"cannot open {path}: {exc.strerror}")


def parse_size(value: str, option: str) -> int:
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
