"""Hostile input never crashes the readers or the fingerprint: a value, or a clear error."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_store import features, fingerprint, fingerprint_features, fingerprint_if_any, normalize
from simhash_store.corpus import DecodeError, Skip, decode
from simhash_store.errors import InputError
from simhash_store.formats import FingerprintRecord, parse_fingerprint, read_fingerprints, read_jsonl

NASTY_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(),  # includes lone surrogates
        st.sampled_from(["\x00", "\r", "\n", "\u2028", "\ufeff", "\u200b", "。", "，", "中", "国", " ", "^", "\x1f"]),
    ),
    max_size=400,
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_decode_gives_text_or_a_reason(data):
    try:
        decoded = decode(data)
    except DecodeError as exc:
        assert exc.reason in {"empty", "binary", "undecodable"}
    else:
        assert isinstance(decoded.text, str) and decoded.text.strip()


@settings(max_examples=300, deadline=None)
@given(NASTY_TEXT)
def test_fingerprint_of_any_text_is_the_simhash_of_its_features(text):
    # The fast path (word numbers, hash tables, byte bincounts) equals the definition,
    # whatever the text holds: NUL, lone surrogates, BOMs, line separators. A text without
    # features has no fingerprint.
    found = features(text)
    assert fingerprint_if_any(text) == (fingerprint_features(found) if found else None)


LINE_UNIT = "中文\x00\x07长行"  # two words and two control characters, no punctuation


@settings(max_examples=20, deadline=None)
@given(st.integers(50, 20_000))
def test_a_line_repeated_any_number_of_times_keeps_its_fingerprint(repeats):
    # Control characters are boundaries, not words, and only relative weights count.
    assert fingerprint(LINE_UNIT * repeats) == fingerprint(LINE_UNIT * 50) != 0


@pytest.mark.slow
def test_a_line_longer_than_a_piece_without_punctuation_keeps_its_fingerprint():
    from simhash_store.fingerprint import PIECE_CHARACTERS

    text = LINE_UNIT * (PIECE_CHARACTERS // 4 + 5000)
    # No punctuation to cut after: the piece is cut at its nominal size, inside the line.
    assert len(normalize(text)) > PIECE_CHARACTERS
    assert fingerprint(text) == fingerprint(LINE_UNIT * 50)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=20))
def test_jsonl_reader_never_raises(lines):
    stream = io.BytesIO(b"\n".join(line.replace(b"\n", b" ") for line in lines))
    try:
        items = read_jsonl(stream, "in.jsonl")
    except InputError:  # the first record has no key or text field: the whole input is refused
        return
    for item in items:
        assert isinstance(item, Skip) or (item.key and isinstance(item.text, str))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=100), max_size=20), st.sampled_from(["csv", "jsonl"]))
def test_fingerprint_file_reader_never_raises(lines, format):
    stream = io.BytesIO(b"key,fingerprint\n" + b"\n".join(lines))
    try:
        items = read_fingerprints(stream, f"in.{format}", format=format)
    except InputError:  # the header (or first record) lacks a field: the whole input is refused
        return
    for item in items:
        assert isinstance(item, Skip) or (isinstance(item, FingerprintRecord) and 0 <= item.fingerprint < 2**64)


@given(st.one_of(st.integers(), st.text(max_size=30), st.none(), st.floats(), st.booleans()))
def test_parse_fingerprint_value_or_value_error(value):
    try:
        parsed = parse_fingerprint(value)
    except ValueError:
        return
    assert 0 <= parsed < 2**64
