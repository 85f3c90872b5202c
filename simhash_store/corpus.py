"""Reading a corpus: walk directories, name documents, decode bytes. No database here.

Real corpora are messy, so nothing here raises on a bad input: each one becomes a
:class:`Skip` with a reason, and whether that reason is a failure (the input should
have been read) or a deliberate skip (it is not text) is part of the reason. Bytes
become text in :mod:`decoding`; records (JSONL, CSV, Parquet, ...) are read by :mod:`formats`.

>>> decode("中文".encode("gb18030")).encoding
'gb18030'
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO

from .decoding import BINARY, EMPTY, SAMPLE_BYTES, UNDECODABLE, Decoded, DecodeError, decode, is_binary_start  # noqa: F401
from .plural import counted

# Reasons an input is not stored. Deliberate skips are not errors: the input is not text.
NO_WORDS = "no words"
SPECIAL_FILE = "not a regular file"  # a FIFO, socket or device found in a directory: never opened
# Failures: the input should have been readable text.
UNREADABLE = "unreadable"
BROKEN_SYMLINK = "broken symlink"
SYMLINK_LOOP = "symlink loop"
NOT_FOUND = "not found"
BAD_KEY = "bad key"
BAD_RECORD = "bad record"
TOO_LARGE = "too large"
KEY_COLLISION = "key collision"

NO_MAIN_CONTENT = "no main content"  # a web page that is all navigation (simhash_store/html.py says so)

DELIBERATE = frozenset({EMPTY, BINARY, NO_WORDS, SPECIAL_FILE, NO_MAIN_CONTENT})


@dataclass(frozen=True)
class Source:
    """A document to read: its key and where its bytes are (a file) or its text (a JSONL record)."""

    key: str
    path: str | None = None  # a file's path as a string: cheaper to make and to send to workers than Path
    text: str | None = None
    size: int = 0
    stamp: str | None = None  # "size:mtime_ns" of a file, to recognise it unchanged without reading it
    where: str | None = None  # how messages name it, when not by its path: "FILE:LINE" of a record
    metadata: dict[str, Any] | None = None  # fields of a record kept with the document (--metadata-field)
    keep_value: Any = None  # a record's value of the keep policy's field (keep.py), stored with it

    @property
    def shown(self) -> str:
        return self.where or self.path or self.key


@dataclass(frozen=True)
class Skip:
    """An input that is not stored, and why (``where`` is a path or ``FILE:LINE``)."""

    where: str
    reason: str
    detail: str = ""

    @property
    def deliberate(self) -> bool:
        return self.reason in DELIBERATE

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


def digest(data: bytes) -> bytes:
    """Content digest for change detection (BLAKE2b, 128 bits)."""
    return hashlib.blake2b(data, digest_size=16).digest()


def file_digest(data: bytes) -> bytes:
    """Content digest of a file's bytes: BLAKE2b personalised apart from :func:`digest` of a
    record's text, so that a record whose text is exactly a page's bytes (or a GB18030 or BOM
    file's) never passes for that file on a rerun, nor the file for the record."""
    return hashlib.blake2b(data, digest_size=16, person=b"simhash-file").digest()


# ------------------------------------------------------------ patterns


class Pattern:
    """One ``--include``/``--exclude`` pattern, read as a line of ``.gitignore`` is.

    - ``*`` and ``?`` match within one path component, ``[abc]``/``[!abc]`` one character;
      ``\\`` escapes the next character.
    - A pattern with no ``/`` (``*.txt``, ``drafts``) matches a name at any depth.
    - A pattern with a ``/`` at its start or in its middle (``drafts/*``, ``/notes.txt``)
      matches from the top of the directory argument.
    - A trailing ``/`` (``drafts/``) matches directories only.
    - ``**`` matches any number of directories: ``**/tmp``, ``drafts/**``, ``a/**/b``.
    - A directory that matches covers everything under it: ``--exclude 'drafts/*'`` leaves
      out ``drafts/sub/c.txt`` (the directory ``drafts/sub`` matches), as git and rsync do.

    >>> Pattern("drafts/*").matches("drafts/sub", directory=True)
    True
    >>> Pattern("*.txt").matches("a/b/c.txt")
    True
    """

    def __init__(self, pattern: str) -> None:
        if not pattern or pattern.strip("/") == "":
            raise ValueError(f"empty pattern {pattern!r}")
        self.pattern = pattern
        self.directory_only = pattern.endswith("/")
        body = pattern.rstrip("/")
        anchored = "/" in body
        body = body.lstrip("/")
        self._regex = re.compile(("" if anchored else "(?:.*/)?") + _translate(body) + r"\Z", re.DOTALL)

    def matches(self, relative: str, *, directory: bool = False) -> bool:
        """Whether the path (relative to the directory argument, ``/`` separators) matches."""
        return (directory or not self.directory_only) and self._regex.match(relative) is not None

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"


def _translate(body: str) -> str:
    """The regex of a pattern's body, without catastrophic backtracking: a star followed, in the
    same path component, by another star matches up to the first place the text between them
    fits, and no further (as an atomic group, written as a lookahead for Python 3.10). Plain
    ``[^/]*`` for every star made ``*a*a*a*a*b`` take hours on one long file name, and ``*-*-*-*``
    minutes: each star tried every length against each of the others. Runs of ``**/`` are one."""
    tokens: list[str | None] = []  # None: a star within a component; else a piece of regex
    i = 0
    while i < len(body):
        if body.startswith("**", i) and (i == 0 or body[i - 1] == "/"):
            end = i + 2
            if end == len(body):
                tokens.append(".*")  # "drafts/**": everything inside
                i = end
                continue
            if body[end] == "/":
                if not tokens or tokens[-1] != _ANY_DIRECTORIES:  # "**/**/" is "**/"
                    tokens.append(_ANY_DIRECTORIES)  # "**/x", "a/**/b": any number of directories
                i = end + 1
                continue
        character = body[i]
        if character == "*":
            while i + 1 < len(body) and body[i + 1] == "*":
                i += 1  # other runs of stars are one star, as in git
            tokens.append(None)
        elif character == "?":
            tokens.append("[^/]")
        elif character == "[" and (close := _class_end(body, i)) is not None:
            inside = body[i + 1 : close]
            negate = inside[:1] in ("!", "^")
            inside = inside[1:] if negate else inside
            tokens.append(_class_regex(inside, negate))
            i = close
        elif character == "\\" and i + 1 < len(body):
            i += 1
            tokens.append(re.escape(body[i]))
        else:
            tokens.append(re.escape(character))
        i += 1
    # Between two "**/", the directories the first skips end where the components between them first
    # fit (they are a fixed number of components, ending at a "/"): "**/a/" ten times before "b" took
    # each "**/" through every split of a path 40 directories deep, 23 s for ten and 4x for each more.
    pieces: list[list[str | None]] = [[]]
    for token in tokens:
        if token == _ANY_DIRECTORIES:
            pieces.append([])
        else:
            pieces[-1].append(token)
    counter = itertools.count(1)
    regex = _with_stars(pieces[0], counter)
    for index, piece in enumerate(pieces[1:], start=1):
        inner = _with_stars(piece, counter)
        if index < len(pieces) - 1:
            group = f"d{next(counter)}"
            regex += f"(?=(?P<{group}>(?:.*?/)??{inner}))(?P={group})"
        else:
            regex += _ANY_DIRECTORIES + inner
    return regex


_ANY_DIRECTORIES = "(?:.*/)?"


def _with_stars(tokens: list[str | None], counter: Iterator[int]) -> str:
    """The regex of tokens holding no "**/": each star followed by another in its component matches
    up to the first place the text between them fits."""
    tokens = list(tokens)
    parts = []
    for index, token in enumerate(tokens):
        if token is not None:
            parts.append(token)
            continue
        piece: list[str] = []
        for following in tokens[index + 1 :]:
            if following is None:  # another star in this component: match up to the piece's first fit
                group = f"s{next(counter)}"
                parts.append(f"(?=(?P<{group}>[^/]*?{''.join(piece)}))(?P={group})")
                tokens[index + 1 : index + 1 + len(piece)] = [""] * len(piece)
                break
            if following in ("/", ".*"):  # the component ends: this star is its last
                parts.append("[^/]*")
                break
            piece.append(following)
        else:
            parts.append("[^/]*")
    return "".join(parts)


def _class_regex(inside: str, negate: bool) -> str:
    """A class's regex: its characters and ranges, each escaped. A range written backwards (``[z-a]``)
    matches nothing, as in git, where the regex refused it (a traceback); ``&&``, ``||``, ``~~`` or
    ``--`` in it are characters, where Python warned of set operations on the terminal."""
    items, i = [], 0
    while i < len(inside):
        if i + 2 < len(inside) and inside[i + 1] == "-":
            low, high = inside[i], inside[i + 2]
            if low <= high:
                items.append(f"{re.escape(low)}-{re.escape(high)}")
            i += 3
        else:
            items.append(re.escape(inside[i]))
            i += 1
    if not items:
        return "[^/]" if negate else "(?!)"
    return f"(?!/)[{'^' if negate else ''}{''.join(items)}]"


def _class_end(body: str, start: int) -> int | None:
    """Index of the ``]`` closing the class opened at ``start`` (a ``]`` first in the class is literal)."""
    i = start + 1
    if i < len(body) and body[i] in "!^":
        i += 1
    if i < len(body) and body[i] == "]":
        i += 1
    close = body.find("]", i)
    return None if close < 0 else close


# ------------------------------------------------------------ walking


def walk(
    paths: Iterable[str | Path],
    *,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    hidden: bool = False,
    prefix: str = "",
) -> Iterator[Source | Skip]:
    """Files under the given paths, in a stable order, as Sources keyed as users expect.

    A file found under a directory argument is keyed by its path relative to that
    directory with ``/`` separators; a file named directly by the path as given.
    ``include``/``exclude`` are :class:`Pattern` s (gitignore rules) matched against
    that relative path, and apply to files found in directories, not to files named
    directly. A file is taken when it or a directory above it matches an include
    (or there are none), and neither it nor a directory above it matches an exclude;
    excluded directories are not entered. Hidden files and directories are left out
    unless ``hidden``. Symlinks are followed, loops detected. FIFOs, sockets and
    devices are skipped, never opened.
    """
    includes = [Pattern(p) for p in include]
    excludes = [Pattern(p) for p in exclude]
    for argument in paths:
        if Path(argument).is_dir():
            yield from _walk_directory(Path(argument), prefix, includes, excludes, hidden)
        else:
            yield file_source(argument, prefix + str(argument).replace(os.sep, "/"))


def file_source(argument: str | Path, key: str | None = None) -> Source | Skip:
    """A file named directly: a Source keyed by the path as given, or a Skip saying why not."""
    path, shown = Path(argument), str(argument)
    try:
        info = path.stat()
    except FileNotFoundError:
        return Skip(shown, BROKEN_SYMLINK if path.is_symlink() else NOT_FOUND)
    except OSError as exc:
        return Skip(shown, SYMLINK_LOOP if exc.errno == errno.ELOOP else UNREADABLE, exc.strerror or "")
    if stat.S_ISDIR(info.st_mode):
        return Skip(shown, UNREADABLE, "a directory")
    if not stat.S_ISREG(info.st_mode):
        return Skip(shown, UNREADABLE, f"not a regular file: {special_kind(info.st_mode)}")
    return Source(key if key is not None else shown.replace(os.sep, "/"), shown, size=info.st_size, stamp=_stamp(info))


def open_regular_file(path: str) -> BinaryIO:
    """``open(path, "rb")`` of a regular file, never waiting on what is not one.

    A file checked beforehand can be replaced by its name's owner, or by whoever may write its
    directory, with a FIFO before it is opened: opened by name, that waited for a writer for
    ever. The open does not block, and what it gave is checked: anything but a regular file is
    an ``OSError`` whose ``strerror`` names it (``not a regular file (a named pipe)``).

    Where there is ``O_PATH`` (Linux) the file is not even opened for reading before it is known
    to be a regular one: a link swapped in to a device is never opened (opening some has effects
    of its own: ``/dev/watchdog`` arms the watchdog, a tape device rewinds)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    o_path = getattr(os, "O_PATH", 0)
    if o_path and os.path.isdir("/proc/self/fd"):
        handle = os.open(path, o_path | getattr(os, "O_CLOEXEC", 0))
        try:
            mode = os.fstat(handle).st_mode
            if not stat.S_ISREG(mode):
                kind = "a directory" if stat.S_ISDIR(mode) else special_kind(mode)
                raise OSError(errno.EINVAL, f"not a regular file ({kind})", path)
            try:  # the file found, opened again through this process's handle: not the name again
                descriptor = os.open(f"/proc/self/fd/{handle}", flags)
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, path) from None
        finally:
            os.close(handle)
    else:
        descriptor = os.open(path, flags)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else special_kind(mode)
            raise OSError(errno.EINVAL, f"not a regular file ({kind})", path)
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def special_kind(mode: int) -> str:
    """What a file that is not a regular file or directory is, in words."""
    for test, kind in (
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return "a special file"


def _stamp(info: os.stat_result) -> str:
    return f"{info.st_size}:{info.st_mtime_ns}"


def _walk_directory(
    root: Path, prefix: str, includes: list[Pattern], excludes: list[Pattern], hidden: bool
) -> Iterator[Source | Skip]:
    root_info = root.stat()
    visited = {(root_info.st_dev, root_info.st_ino)}
    # (directory, its path relative to root with a trailing "/", whether an include matched above it)
    stack = [(str(root), "", not includes)]
    while stack:
        directory, relative_dir, included_above = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            yield Skip(str(directory), UNREADABLE, exc.strerror or "")
            continue
        subdirectories = []
        for entry in entries:
            relative = f"{relative_dir}{entry.name}"
            if not hidden and entry.name.startswith("."):
                continue
            try:
                info = entry.stat(follow_symlinks=True)
            except OSError as exc:
                if _wanted(relative, False, included_above, includes, excludes):
                    if isinstance(exc, FileNotFoundError):
                        yield Skip(entry.path, BROKEN_SYMLINK)
                    else:
                        yield Skip(
                            entry.path, SYMLINK_LOOP if exc.errno == errno.ELOOP else UNREADABLE, exc.strerror or ""
                        )
                continue
            if stat.S_ISDIR(info.st_mode):
                if any(p.matches(relative, directory=True) for p in excludes):
                    continue  # nothing under an excluded directory is wanted: do not enter it
                identity = (info.st_dev, info.st_ino)
                if identity in visited:
                    yield Skip(entry.path, SYMLINK_LOOP, "directory already visited")
                    continue
                visited.add(identity)
                included = included_above or any(p.matches(relative, directory=True) for p in includes)
                subdirectories.append((entry.path, relative + "/", included))
            elif not _wanted(relative, False, included_above, includes, excludes):
                continue
            elif stat.S_ISREG(info.st_mode):
                yield Source(prefix + relative, entry.path, size=info.st_size, stamp=_stamp(info))
            else:
                yield Skip(entry.path, SPECIAL_FILE, special_kind(info.st_mode))
        stack.extend(reversed(subdirectories))


def _wanted(
    relative: str, directory: bool, included_above: bool, includes: list[Pattern], excludes: list[Pattern]
) -> bool:
    if not included_above and not any(p.matches(relative, directory=directory) for p in includes):
        return False
    return not any(p.matches(relative, directory=directory) for p in excludes)


# ------------------------------------------------------------ reading


def read_file(source: Source, max_bytes: int) -> bytes | Skip:
    """The bytes of a file Source, or a Skip: opened without blocking and checked to be a regular file
    (it may have been replaced by a FIFO since the walk); a binary one is told from its first bytes,
    without reading the rest; one over ``max_bytes`` is refused, not read."""
    where = source.shown
    try:
        # O_NONBLOCK: opening a FIFO that replaced the file since the walk must not wait for a writer.
        descriptor = os.open(source.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))  # type: ignore[arg-type]
    except OSError as exc:
        return Skip(where, UNREADABLE, exc.strerror or str(exc))
    with os.fdopen(descriptor, "rb", buffering=0) as handle:
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                return Skip(where, SPECIAL_FILE, special_kind(info.st_mode))
            start = read_up_to(handle, SAMPLE_BYTES)
            if len(start) == SAMPLE_BYTES and is_binary_start(start):
                return Skip(where, BINARY)  # the rest need not be read: nothing after it changes that
            if info.st_size > max_bytes:
                return Skip(where, TOO_LARGE, _too_large(info.st_size, max_bytes))
            data = start + read_up_to(handle, max_bytes + 1 - len(start))
        except OSError as exc:
            return Skip(where, UNREADABLE, exc.strerror or str(exc))
        except MemoryError:
            return Skip(where, TOO_LARGE, f"out of memory reading {counted(info.st_size, 'byte', grouped=True)}")
    if len(data) > max_bytes:  # it grew since it was measured
        return Skip(where, TOO_LARGE, _too_large(len(data), max_bytes))
    return data


def _too_large(size: int, limit: int) -> str:
    return f"{counted(size, 'byte', grouped=True)}, over the limit of {limit:,}; raise it with --max-file-size"


def left_to_read_over(handle: IO[bytes], limit: int) -> bool:
    """Whether ``handle`` is a regular file (standard input redirected from one too) with more than
    ``limit`` bytes left from where it stands: refused by its size, unread. A 60 GB sparse file was
    read to the bound first and its parts joined (twice the bound held), a MemoryError traceback
    under a memory limit. Streams that cannot tell (pipes) are read."""
    try:
        descriptor = handle.fileno()
        found = os.fstat(descriptor)
        return stat.S_ISREG(found.st_mode) and found.st_size - os.lseek(descriptor, 0, os.SEEK_CUR) > limit
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both of the first two
        return False


def read_up_to(handle: IO[bytes], size: int) -> bytes:
    parts, remaining = [], size
    while remaining > 0:
        part = handle.read(min(remaining, 1 << 24))
        if not part:
            break
        parts.append(part)
        remaining -= len(part)
    return b"".join(parts)


def same_file(input_path: str, output: str) -> bool:
    """Whether writing ``output`` would replace the file read as ``input_path``; ``-`` is standard
    input, which may be that file redirected (``< out.jsonl``)."""
    try:
        if input_path != "-":
            return os.path.samefile(input_path, output)
        read, written = os.fstat(0), os.stat(output)
        return stat.S_ISREG(read.st_mode) and (read.st_dev, read.st_ino) == (written.st_dev, written.st_ino)
    except (OSError, ValueError):  # an input or output that does not exist yet is not the same file
        return False


def written_inside(output: str, directory: str) -> bool:
    """Whether a file written at ``output`` would be under ``directory`` (an input directory
    walked for files), so that this or a later run would read it as an input."""
    try:
        if not os.path.isdir(directory):
            return False
        where = os.path.realpath(os.path.dirname(os.path.abspath(output)))
        return os.path.commonpath([where, os.path.realpath(directory)]) == os.path.realpath(directory)
    except (OSError, ValueError):
        return False
