"""The ``simhash-store`` command (and ``python -m simhash_store``): before the command line's
imports, which take a few tenths of a second (more on a loaded machine), passwords given on the
command line are hidden from ``ps``, and Ctrl-C is taken as one line, not a traceback."""

from __future__ import annotations

import os
import sys


def hide_secrets_from_process_list(arguments: list[str]) -> None:
    """Blank out passwords given on the command line (``--db postgresql://u:secret@...``) where
    ``ps`` and /proc/PID/cmdline show them, before any worker is forked with a copy.

    Linux only, and only after the interpreter has started: between exec and this call the
    password is visible. SIMHASH_STORE_URL or ~/.pgpass keep it off the command line entirely.
    """
    from .urls import raw_secrets

    secrets = [
        os.fsencode(secret)
        for argument in arguments
        for secret in raw_secrets(argument.partition("--db=")[2] or argument)
    ]
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


def open_standard_descriptors() -> bool:
    """Put /dev/null on standard input or error if the command was started with it closed (``<&-``,
    ``2>&-``), and say whether standard output was closed (``>&-``; it gets /dev/null too).

    Python leaves ``sys.stdin`` None then, so ``fingerprint -`` was an AttributeError traceback, and
    a closed standard output lost every line a command wrote, with exit status 0; and the next file
    opened would take the descriptor, where anything writing there (a child process) writes into it.
    """
    closed_output = False
    for descriptor, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(descriptor)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != descriptor:
            os.dup2(null, descriptor)
            os.close(null)
        setattr(sys, name, open(descriptor, mode, closefd=False))  # noqa: SIM115 - the process's own stream
        closed_output = closed_output or descriptor == 1
    return closed_output


def main() -> None:
    if open_standard_descriptors():
        sys.stderr.write("Error: standard output is closed, so the output would be lost: redirect it (>/dev/null)\n")
        raise SystemExit(2)
    hide_secrets_from_process_list(sys.argv[1:])
    try:
        from .cli import main as command
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted\n")
        raise SystemExit(130) from None
    command()


if __name__ == "__main__":
    main()
