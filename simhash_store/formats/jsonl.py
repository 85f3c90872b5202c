"""JSON Lines: one JSON object per line, in and out. A bad line costs that line, never its neighbours.

A JSON line nested too deeply, holding an integer of thousands of digits (kept as a
:class:`~simhash_store.formats.lines.HugeInteger` that only counts them), naming a member
twice, or not UTF-8, is one bad record. Written lines escape U+2028, U+2029 and U+0085, at
which some line splitters split.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import IO, Any

from ..corpus import BAD_RECORD, Skip
from ..plural import counted
from ..terminal import json_text
from .lines import first_line, lines, parse_int, short
from .registry import FormatError, Input, InputFormat, OutputFormat, ReadOptions, register_input, register_output
from .writing import RecordWriter, check_json, unwritable


def read(source: Input, options: ReadOptions) -> Iterator[tuple[str, dict | Skip]]:
    """The records of a JSONL file or stream, in order."""
    with source.open() as stream:
        yield from json_rows(stream, source.name, options.max_bytes)


def json_rows(stream: IO[bytes], name: str, max_line_bytes: int) -> Iterator[tuple[str, dict | Skip]]:
    for number, raw in lines(stream, max_line_bytes):
        where = f"{name}:{number}"
        if raw is None:
            yield where, Skip(where, BAD_RECORD, f"line longer than {counted(max_line_bytes, 'byte', grouped=True)}")
            continue
        if not raw.strip():
            continue
        try:
            record = json.loads(
                raw.decode("utf-8-sig" if number == 1 else "utf-8"), parse_int=parse_int, object_pairs_hook=_object
            )
        except RecursionError:
            yield where, Skip(where, BAD_RECORD, "JSON nested too deeply")
            continue
        except _RepeatedMember as exc:
            yield where, Skip(where, BAD_RECORD, f"the member {short(exc.name, 40)} appears twice in one object")
            continue
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            yield where, Skip(where, BAD_RECORD, f"not valid JSON: {first_line(exc)}")
            continue
        yield where, record if isinstance(record, dict) else Skip(where, BAD_RECORD, "not a JSON object")


class _RepeatedMember(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _object(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object as a dict; a name given twice is refused (json keeps the last silently,
    so {"key": "a", "key": "b"} would be stored under a key no one can see in the file)."""
    record = dict(pairs)
    if len(record) != len(pairs):
        seen = set()
        for name, _ in pairs:
            if name in seen:
                raise _RepeatedMember(name)
            seen.add(name)
    return record


def _sniff(head: bytes) -> bool:
    """A stream whose first character (after a byte-order mark and blanks) opens an object."""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] == b"{"


def json_line(record: dict) -> str:
    """One record as one line of JSON (UTF-8 as itself, the line splitters' characters escaped)."""
    # U+2028 and U+2029 end lines for some splitters: escape them so each line is one record.
    text = json_text(record, ensure_ascii=False, default=unwritable)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n"


class JsonlWriter(RecordWriter):
    """JSONL is written as it comes: no record waits for another."""

    spills = False

    def check(self, record: Mapping[str, Any]) -> None:
        try:
            check_json(dict(record))
        except RecursionError:
            raise FormatError("nested too deeply to be written") from None

    def write(self, record: dict) -> None:
        line = json_line(record)
        try:
            self._stream.write(line)
        except UnicodeEncodeError:
            raise FormatError(
                "holds a lone surrogate (a \\ud800-\\udfff escape alone), which UTF-8 cannot hold"
            ) from None


register_input(
    InputFormat(
        "jsonl",
        read,
        suffixes=(".jsonl", ".ndjson", ".json"),
        sniff=_sniff,
        description="JSON Lines: one object per line",
    )
)
register_output(OutputFormat("jsonl", JsonlWriter, suffixes=(".jsonl", ".ndjson", ".json"), description="JSON Lines"))
