"""A per-user disk cache of arrays: what the dictionaries cost to build, loaded in milliseconds.

An entry is one file: a magic line, a JSON header (its full key, the arrays' types and
sizes, and a checksum of the rest), then the arrays' bytes. Nothing in it is code (no
pickle), and a file is used only when every check passes: a file cut short, corrupted,
written by another user or for another key is ignored, and the caller rebuilds from the
source. Writers write a temporary file and rename it over the entry, so a reader sees
a whole old file or a whole new one, never half of either; a cache directory that cannot
be written just means rebuilding each time.

The location is ``SIMHASH_STORE_CACHE_DIR``, else the user's cache directory; an empty
``SIMHASH_STORE_CACHE_DIR`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from .ownership import make_directories, writable_by_others

CACHE_DIR_VARIABLE = "SIMHASH_STORE_CACHE_DIR"
_MAGIC = b"simhash-store cache 1\n"
_log = logging.getLogger(__name__)


def cache_dir() -> Path | None:
    """Where entries live, or None when the cache is turned off."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured is not None:
        return Path(configured).expanduser() if configured.strip() else None
    import platformdirs

    return Path(platformdirs.user_cache_dir("simhash-store", appauthor=False))


def _path(kind: str, key: dict[str, Any]) -> tuple[Path, str] | None:
    directory = cache_dir()
    if directory is None:
        return None
    canonical = json.dumps(key, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    name = f"{kind}-{hashlib.sha256(canonical.encode()).hexdigest()[:32]}.bin"
    return directory / name, canonical


def load(kind: str, key: dict[str, Any]) -> dict[str, np.ndarray] | None:
    """The arrays stored for exactly this key, or None (absent, unreadable or failing a check)."""
    located = _path(kind, key)
    if located is None:
        return None
    path, canonical = located
    try:
        # Not followed if a link, and not waited on if a FIFO (another user may place either
        # where a shared cache directory expects a file): _trusted then refuses it.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(descriptor, "rb") as handle:
            if not _trusted(os.fstat(handle.fileno()), handle.fileno()):
                _log.debug("ignoring %s: not a private file of this user", path)
                return None
            content = handle.read()
    except OSError:
        return None
    try:
        return _parse(content, canonical)
    except (ValueError, KeyError, TypeError) as exc:
        _log.debug("ignoring %s: %s", path, exc)
        return None


def _trusted(status: os.stat_result, where: int) -> bool:
    """A regular file of this user that nobody else may write (its contents decide fingerprints)."""
    if not stat.S_ISREG(status.st_mode):
        return False
    if hasattr(os, "getuid") and (status.st_uid != os.getuid() or writable_by_others(status, where)):
        return False
    return True


def _parse(content: bytes, canonical: str) -> dict[str, np.ndarray]:
    if not content.startswith(_MAGIC):
        raise ValueError("not a cache file")
    end = content.index(b"\n", len(_MAGIC))
    header = json.loads(content[len(_MAGIC) : end])
    if header["key"] != canonical:
        raise ValueError("made for another key")
    body = memoryview(content)[end + 1 :]
    sizes = [int(size) for _, _, size in header["arrays"]]
    if len(body) != sum(sizes):
        raise ValueError(f"{len(body)} bytes of arrays, the header says {sum(sizes)}")
    if xxhash.xxh3_128_hexdigest(body) != header["checksum"]:
        raise ValueError("checksum mismatch")
    arrays, offset = {}, 0
    for (name, dtype, _), size in zip(header["arrays"], sizes):
        arrays[name] = np.frombuffer(body, dtype=np.dtype(dtype), count=size // np.dtype(dtype).itemsize, offset=offset)
        offset += size
    return arrays


def store(kind: str, key: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write an entry atomically; failing to (read-only or full disk) is not an error."""
    located = _path(kind, key)
    if located is None:
        return
    path, canonical = located
    parts = [np.ascontiguousarray(array) for array in arrays.values()]
    body = b"".join(part.tobytes() for part in parts)
    header = {
        "key": canonical,
        "arrays": [[name, part.dtype.str, part.nbytes] for name, part in zip(arrays, parts)],
        "checksum": xxhash.xxh3_128_hexdigest(body),
    }
    temporary = None
    try:
        make_directories(path.parent)  # ~/.cache too, 0700 under any umask
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(_MAGIC + json.dumps(header, ensure_ascii=False).encode() + b"\n")
            handle.write(body)
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        _log.debug("not caching %s: %s", path, exc)
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def join_strings(strings: list[str]) -> np.ndarray | None:
    """Strings as one UTF-8 array, newline-separated; None if one holds a newline (or cannot be encoded)."""
    if any("\n" in s for s in strings):
        return None
    try:
        return np.frombuffer("\n".join(strings).encode("utf-8"), dtype=np.uint8)
    except UnicodeEncodeError:
        return None


def split_strings(array: np.ndarray, count: int) -> list[str]:
    """The inverse of :func:`join_strings`; raises ValueError unless there are ``count`` strings."""
    strings = array.tobytes().decode("utf-8").split("\n") if count else []
    if len(strings) != count:
        raise ValueError(f"{len(strings)} strings, expected {count}")
    return strings


# ---------------------------------------------------------------- word tables
# jieba's prefix dictionary, its IDF table and the vocabularies are all words with one
# value (or a few) per word, plus a value or two for the whole table (a total, a median).


def store_word_table(kind: str, key: dict[str, Any], words: list[str], arrays: dict[str, np.ndarray]) -> None:
    """Store ``words`` with ``arrays`` (one value per word, or one value for the whole table).

    A word holding a newline cannot be stored: then nothing is, and the table is built
    again next time.
    """
    joined = join_strings(words)
    if joined is not None:
        store(kind, key, {"words": joined, **arrays})


def load_word_table(
    kind: str, key: dict[str, Any], per_word: dict[str, np.dtype], whole_table: dict[str, np.dtype] | None = None
) -> tuple[list[str], dict[str, np.ndarray]] | None:
    """The words and arrays :func:`store_word_table` stored for this key, or None.

    None unless every array named is there with exactly its type, each ``per_word`` array
    with one value per word and each ``whole_table`` array with one value: an entry that
    passes the file checks but holds anything else is rebuilt, never believed (the types
    sit in the header, which the checksum does not cover).

    >>> load_word_table("no-such-table", {}, {"values": np.dtype(np.int64)}) is None
    True
    """
    stored = load(kind, key)
    first = next(iter(per_word))
    if stored is None or first not in stored:
        return None
    count = len(stored[first])  # the number of words, checked against every array and the words themselves
    shapes = {name: (np.dtype(dtype), count) for name, dtype in per_word.items()}
    shapes |= {name: (np.dtype(dtype), 1) for name, dtype in (whole_table or {}).items()}
    for name, (dtype, size) in shapes.items():
        if name not in stored or stored[name].dtype != dtype or len(stored[name]) != size:
            return None
    try:
        words = split_strings(stored["words"], count)
    except (KeyError, ValueError):  # no words, words not UTF-8, or another number of them
        return None
    return words, {name: stored[name] for name in shapes}
