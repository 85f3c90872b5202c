"""A scheme's jieba user dictionary, read with the checks a file named by the store needs.

A scheme made with :meth:`Scheme.with_user_dict` records the dictionary's path and SHA-256,
and the store keeps that scheme in ``store_info``, where any role that may write the store
can change it. So the path is read as an untrusted one: a regular file only (a FIFO, a
device such as ``/dev/zero`` or a terminal is refused without being read, and a file opened
without blocking), at most :data:`USER_DICT_MAX_BYTES`, and its SHA-256 must be the one the
scheme records, or fingerprints would silently change with the file. jieba is given the
bytes that were checked, never the path, so the file cannot be swapped between the check
and the read.

>>> USER_DICT_MAX_BYTES // (1 << 20)
64
"""

from __future__ import annotations

import hashlib
import os
import re
import stat

from .errors import UserDictionaryError

# jieba's own dictionary of 349,000 words is 5 MB; a user dictionary is a list of words.
USER_DICT_MAX_BYTES = 64 << 20
# jieba keeps every prefix of every word (a word of n characters makes n strings of 1 to n characters),
# so its memory grows with the square of a word's length: one word of a million characters (a 3 MB
# file) took 23 GB before the kernel killed the process, and a text holding a run of a long word's
# prefix is cut in time growing with that square too. jieba's own longest word has 16 characters, and
# its 349,046 words make 1,016,260 prefixes.
USER_WORD_MAX_CHARACTERS = 100
USER_DICT_MAX_PREFIXES = 5_000_000
_FREQUENCY_MAX_DIGITS = 18  # within 64 bits; jieba adds every frequency to a total it divides by
_USER_LINE = re.compile("^(.+?)( [0-9]+)?( [a-z]+)?$", re.U)  # jieba's re_userdict, as load_userdict reads a line

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _opened_if_regular(shown: str, advice: str) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    held_flag = getattr(os, "O_PATH", 0)
    if held_flag and os.path.isdir("/proc/self/fd"):
        held = os.open(shown, held_flag | getattr(os, "O_CLOEXEC", 0))
        try:
            if not stat.S_ISREG(mode := os.fstat(held).st_mode):
                raise UserDictionaryError(f"user dictionary {shown} is not a regular file ({_kind(mode)}); {advice}")
            return os.open(f"/proc/self/fd/{held}", flags)
        finally:
            os.close(held)
    if not stat.S_ISREG(mode := os.stat(shown).st_mode):
        raise UserDictionaryError(f"user dictionary {shown} is not a regular file ({_kind(mode)}); {advice}")
    return os.open(shown, flags)


def read_regular(path: str | os.PathLike[str], advice: str) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most :data:`USER_DICT_MAX_BYTES`;
    else :class:`UserDictionaryError` ending with ``advice``."""
    shown = os.fspath(path)
    try:
        # A device or FIFO is refused before it is opened (opening some has effects of its
        # own). Where the system can (Linux), the file is first held without being opened
        # (O_PATH), checked, and that same file opened: a link swapped between a check of the
        # path and its opening made a FIFO opened twice in 20,000 tries.
        descriptor = _opened_if_regular(shown, advice)
    except OSError as exc:
        raise UserDictionaryError(f"cannot read user dictionary {shown}: {exc.strerror}; {advice}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise UserDictionaryError(f"user dictionary {shown} is not a regular file ({_kind(mode)}); {advice}")
        pieces, size = [], 0
        while size <= USER_DICT_MAX_BYTES:
            piece = os.read(descriptor, min(1 << 20, USER_DICT_MAX_BYTES + 1 - size))
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
    except OSError as exc:
        raise UserDictionaryError(f"cannot read user dictionary {shown}: {exc.strerror}; {advice}") from None
    finally:
        os.close(descriptor)
    if size > USER_DICT_MAX_BYTES:
        raise UserDictionaryError(
            f"user dictionary {shown} is larger than {USER_DICT_MAX_BYTES >> 20} MiB, "
            f"more than any list of words needs; {advice}"
        )
    return b"".join(pieces)


def checked_user_dictionary(path: str, sha256: str | None) -> bytes:
    """The content of a scheme's user dictionary at ``path``, whose SHA-256 must be ``sha256``
    (the one the scheme records); else :class:`UserDictionaryError`, one line naming the path
    and what to do."""
    if not isinstance(sha256, str) or len(sha256) != 64:
        raise UserDictionaryError(
            f"the scheme names user dictionary {path} without its SHA-256, so the file cannot be checked; "
            "make the scheme with Scheme.with_user_dict"
        )
    content = read_regular(
        path, f"put the dictionary the scheme was made with (SHA-256 {sha256}) at that path, or use another scheme"
    )
    found = hashlib.sha256(content).hexdigest()
    if found != sha256.lower():
        raise UserDictionaryError(
            f"user dictionary {path} has SHA-256 {found}, not {sha256} as the scheme records: it changed "
            "since the scheme was made, and fingerprints made with it would not compare with those stored; "
            "put the original back, or make a new scheme of the new file (Scheme.with_user_dict) for a new store"
        )
    check_words(content, path)
    return content


def check_words(content: bytes, path: str) -> None:
    """Refuse, in one line naming the line, a dictionary jieba would read into memory growing with the
    square of a word's length, or with a frequency it cannot add up: a word over
    :data:`USER_WORD_MAX_CHARACTERS`, words making more than :data:`USER_DICT_MAX_PREFIXES` prefixes
    in all, a frequency of more than 18 digits (jieba raised Python's ``ValueError`` for 4,300, which
    was reported as not UTF-8). Lines are split as jieba's ``load_userdict`` splits them.

    >>> check_words("中华人民 5 n\\n共和国\\n".encode(), "d.txt")
    >>> try:
    ...     check_words(("中" * 101).encode(), "d.txt")
    ... except UserDictionaryError as exc:
    ...     print(str(exc).split(";")[0])
    user dictionary d.txt, line 1: a word of 101 characters
    """
    prefixes = 0
    for number, raw in enumerate(content.split(b"\n"), 1):
        try:
            line = raw.strip().decode("utf-8").lstrip("\ufeff")
        except UnicodeDecodeError:
            raise not_utf8(path) from None
        if not line:
            continue
        word, frequency, _ = _USER_LINE.match(line).groups()  # type: ignore[union-attr]  # .+? matches any line
        if len(word) > USER_WORD_MAX_CHARACTERS:
            raise UserDictionaryError(
                f"user dictionary {path}, line {number}: a word of {len(word):,} characters; at most "
                f"{USER_WORD_MAX_CHARACTERS} (jieba keeps every prefix of a word, so its memory grows with the "
                "square of the word's length)"
            )
        if frequency is not None and len(frequency.strip()) > _FREQUENCY_MAX_DIGITS:
            raise UserDictionaryError(
                f"user dictionary {path}, line {number}: a frequency of {len(frequency.strip()):,} digits; "
                f"at most {_FREQUENCY_MAX_DIGITS}"
            )
        prefixes += len(word)
        if prefixes > USER_DICT_MAX_PREFIXES:
            raise UserDictionaryError(
                f"user dictionary {path}: its words make more than {USER_DICT_MAX_PREFIXES:,} prefixes by line "
                f"{number} (a word of n characters makes n; jieba's own dictionary makes 1,016,260), which jieba "
                "would all keep in memory"
            )


def not_utf8(path: str) -> UserDictionaryError:
    return UserDictionaryError(f"user dictionary {path} is not UTF-8 text; jieba reads user dictionaries in UTF-8")
