"""The ``simhash-store`` command: parse, call the library, render. No algorithm lives here.

Each command is a function in the module of its family (``add.py``, ``query.py``, ``dedup.py``,
``calibrate.py``, ``admin.py``), registered below in the order ``--help`` lists them; what the
commands share (the app, --db, option types, the opened store, errors) is in ``common.py``,
and what they print in ``render.py``.
"""

from __future__ import annotations

import errno
import gc
import logging
import os
import sys

from . import add, admin, calibrate, dedup, query
from .common import State, app, state

__all__ = ["State", "app", "main", "state"]

app.command()(admin.init)
app.command()(add.add)
app.command("import")(add.import_)
app.command()(query.query)
app.command()(dedup.dups)
app.command()(dedup.recluster)
app.command("dedup")(dedup.dedup_command)
app.command()(query.explain)
app.command()(calibrate.calibrate)
app.command("fingerprint")(query.fingerprint_command)
app.command()(admin.remove)
app.command()(admin.stats)
app.command()(admin.optimize)
app.command("grant-read")(admin.grant_read)
app.command()(admin.schemes)
app.command()(admin.serve)
app.command()(admin.url)


# What writing standard output (or an unnamed temporary file) can fail with once a command is
# under way: a full disk (`> /dev/full`), a quota, a file too large, an I/O error, a closed pipe.
_OUTPUT_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE})


def _is_a_stream_encoding(encoding: str) -> bool:
    import codecs

    def name(value: object) -> str | None:
        try:
            return codecs.lookup(value).name if isinstance(value, str) else None
        except LookupError:
            return None

    return name(encoding) in {name(getattr(stream, "encoding", None)) for stream in (sys.stdout, sys.stderr)}


def _unwritable_character(error: UnicodeEncodeError) -> None:
    """One line for a character standard output's encoding cannot write (``PYTHONIOENCODING=ascii``,
    a Latin-1 locale: a key holding ``é`` was a traceback of rich's), exit status 1."""
    character = ascii(error.object[error.start : error.start + 1])
    sys.stderr.write(
        f"Error: standard output's encoding ({error.encoding}) cannot write the character {character}: "
        "set PYTHONIOENCODING=utf-8 or a UTF-8 locale\n"
    )
    raise SystemExit(1)


def _output_failed(error: OSError) -> None:
    """One line for an output that could not be written (``query --json > /dev/full`` printed a
    traceback of rich's), exit status 1; what was stored stays stored. Standard output is pointed
    at /dev/null, so that the interpreter's last flush of it does not fail again on the way out."""
    from .common import err

    if error.errno != errno.EPIPE:  # a reader that went away (`| head`) is no error: exit 1 silently, as click does
        err.print(f"Error: cannot write the output: {error.strerror or error}", markup=False)
    try:
        if sys.stdout is not None:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
    except (OSError, ValueError):
        pass
    raise SystemExit(1)


def _flush_standard_output() -> None:
    """Write what is still buffered for standard output before the interpreter's own last flush:
    a short output (``dups --json > /dev/full``) fails only there, where the error is printed as
    "Exception ignored" and the exit status is 120. Here it is an OSError like any other write's."""
    stdout = sys.stdout
    if stdout is not None and not stdout.closed:
        stdout.flush()


def main() -> None:
    # A connection cut off by Ctrl-C or SIGTERM in the middle of a statement cannot be reset, and
    # SQLAlchemy's pool logs that with a traceback; the command says "Interrupted" in one line.
    logging.getLogger("sqlalchemy.pool").addHandler(logging.NullHandler())
    # psycopg logs the rollback it could not send on such a connection ("error ignored in rollback").
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    try:
        try:
            app()
        except SystemExit:
            _flush_standard_output()
            raise
    except UnicodeEncodeError as exc:
        if not _is_a_stream_encoding(exc.encoding):
            raise
        _unwritable_character(exc)
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _OUTPUT_FULL:
            raise
        _output_failed(exc)
    finally:
        # The interpreter's teardown collects garbage over every object the imports made
        # (SQLAlchemy, pydantic, rich: some 90,000), which takes longer than many a command;
        # frozen, they are left to the operating system. Files are still flushed and closed,
        # atexit handlers still run (the embedded server is still stopped).
        gc.freeze()
