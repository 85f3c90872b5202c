"""The texts ``calibrate`` samples: JSONL records, files under paths, or the stored keys that
name readable files. No database here: stored keys are handed in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import corpus
from .decoding import DecodeError, decode
from .errors import InputError
from .formats import read_records


@dataclass
class Texts:
    """``(key, text)`` pairs to calibrate on, and how many inputs could not be read."""

    texts: list[tuple[str, str]] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # how a JSONL record is shown (FILE:LINE), by its key
    skipped: int = 0

    def extend(self, other: Texts) -> None:
        self.texts += other.texts
        self.names.update(other.names)
        self.skipped += other.skipped


def texts_of_jsonl(path: str, text_field: str) -> Texts:
    """The ``text_field`` of each JSONL record (``-``: standard input), keyed by the record's
    number, which seeds its variants; a record without that text is skipped."""
    found = Texts()
    try:
        for number, (where, record) in enumerate(read_records(path, "jsonl", key_field=text_field, text_field=text_field)):
            if isinstance(record, dict) and isinstance(record.get(text_field), str):
                found.texts.append((str(number), record[text_field]))
                found.names[str(number)] = where
            else:
                found.skipped += 1
    except OSError as exc:
        raise InputError(f"cannot open {path}: {exc.strerror}") from None
    return found


def texts_of_paths(paths: Iterable[str | Path]) -> Texts:
    """The files under ``paths`` (walked as ``add`` walks them), keyed as ``add`` keys them."""
    found = Texts()
    for item in corpus.walk(paths):
        if isinstance(item, corpus.Source):
            _read_into(found, item.key, Path(str(item.path)))
    return found


def texts_of_keys(keys: Iterable[str]) -> Texts:
    """The stored keys that name readable files here. Raises InputError for fewer than two."""
    found = Texts()
    for key in keys:
        _read_into(found, key, Path(key))
    if len(found.texts) < 2:
        raise InputError("the store keeps fingerprints, not texts, and fewer than two stored keys name readable files "
                         "here: give the documents (PATHS or --jsonl)")
    return found


def _read_into(found: Texts, key: str, path: Path) -> None:
    try:
        found.texts.append((key, decode(path.read_bytes()).text))
    except (OSError, DecodeError):
        found.skipped += 1
