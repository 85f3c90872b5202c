"""How long work reports how far it got: a callback ``on_progress(done, total)``, and a reader
that reports the bytes read from a stream through one.

The library calls the callback; the command line draws it (a bar when ``total`` is known, a
spinner when it is None). ``done`` only grows, and ends at ``total`` when the work finishes.

Example::

    with open("crawl.jsonl", "rb") as raw:
        stream = counting_reader(raw, lambda done, total: print(done, total), total=os.fstat(raw.fileno()).st_size)
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable
from typing import IO, Any

OnProgress = Callable[[int, "int | None"], None]


class _CountingRaw(io.RawIOBase):
    """The bytes of ``stream``, telling ``on_progress`` the running count after every read.

    A read returns what the stream has (``read1``), as a raw read of a pipe does: waiting for a
    whole buffer would hold records from a pipe back until the writer sends 64 KiB or closes it.
    """

    def __init__(self, stream: IO[bytes], on_progress: OnProgress, total: int | None, start: int) -> None:
        self._stream = stream
        self._read = getattr(stream, "read1", stream.read)
        self._on_progress = on_progress
        self._total = total
        self.done = start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._read(len(buffer))
        size = len(data)
        buffer[:size] = data
        if size:
            self.done += size
            self._on_progress(self.done, self._total)
        return size

    def close(self) -> None:
        # Closing the reader leaves the stream to whoever opened it (stdin stays open).
        super().close()


def counting_reader(stream: IO[bytes], on_progress: OnProgress, total: int | None = None, start: int = 0) -> IO[bytes]:
    """``stream`` read through a buffer that reports ``start`` plus the bytes read so far, and ``total``."""
    return io.BufferedReader(_CountingRaw(stream, on_progress, total, start), buffer_size=1 << 16)


def size_of(stream: IO[bytes]) -> int | None:
    """The size of a regular file behind ``stream``; None for a pipe, a terminal or anything without one."""
    try:
        status = os.fstat(stream.fileno())
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


class Relay:
    """A callback to hand out before the one it forwards to exists (the display opens later):
    what it was told meanwhile is passed on when the target arrives."""

    def __init__(self) -> None:
        self._target: OnProgress | None = None
        self._last: tuple[int, int | None] | None = None

    def forward_to(self, target: OnProgress | None) -> None:
        self._target = target
        if target is not None and self._last is not None:
            target(*self._last)

    def __call__(self, done: int, total: int | None) -> None:
        self._last = (done, total)
        if self._target is not None:
            self._target(done, total)
