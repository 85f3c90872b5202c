"""One validation of what the store accepts: refused with a precise SimhashStoreError, before any I/O. No database."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_store.errors import InvalidFingerprintError, InvalidKeyError, InvalidValueError, SimhashStoreError
from simhash_store.store import NewDocument
from simhash_store.validation import (
    INT4,
    MAX_KEY_BYTES,
    MAX_METADATA_DEPTH,
    validate_distance,
    validate_fingerprint,
    validate_integer,
    validate_key,
    validate_keys,
    validate_metadata,
    validate_optional_bytes,
)


@pytest.mark.parametrize(
    "key, message",
    [
        ("a\x00b", "NUL"),
        ("x" * (MAX_KEY_BYTES + 1), "bytes long"),
        ("\ud800", "lone surrogate"),
        ("", "non-empty"),
        (7, "string"),
    ],
)
def test_bad_keys_say_what_is_wrong(key, message):
    with pytest.raises(InvalidKeyError, match=message):
        validate_key(key)


def test_a_string_is_one_key_not_its_characters():
    assert validate_keys("abc") == ["abc"]
    assert validate_keys(("abc", "中文")) == ["abc", "中文"]
    for wrong in (b"abc", 5, ["ok", None]):
        with pytest.raises(InvalidKeyError):
            validate_keys(wrong)


def test_fingerprints_accept_numpy_integers_and_refuse_the_rest():
    assert validate_fingerprint(np.uint64(2**64 - 1)) == 2**64 - 1
    assert type(validate_fingerprint(np.uint64(5))) is int
    for wrong in (-1, 2**64, True, 1.0, "0", None):
        with pytest.raises(InvalidFingerprintError):
            validate_fingerprint(wrong)
    assert validate_fingerprint(2**127, bits=128) == 2**127
    with pytest.raises(InvalidFingerprintError, match="width"):
        validate_fingerprint(1, bits=48)


def test_distances_run_from_zero_to_the_width():
    assert validate_distance(64) == 64
    for wrong in (-1, 65, True, 3.0):
        with pytest.raises(InvalidFingerprintError, match="0 to 64"):
            validate_distance(wrong)


def test_integers_out_of_their_column_are_refused_not_wrapped():
    assert validate_integer(INT4[1], "length", 0, INT4[1]) == INT4[1]
    with pytest.raises(InvalidValueError, match="length must lie in"):
        validate_integer(INT4[1] + 1, "length", 0, INT4[1])
    with pytest.raises(InvalidValueError, match="5000 digits"):
        validate_integer(10**4999, "length", 0, INT4[1])  # the message does not print all of it


@pytest.mark.parametrize(
    "metadata, message",
    [
        ({"score": float("nan")}, "at score is NaN"),
        ({"a": [1, float("inf")]}, r"at a\[1\] is infinite"),
        ({"title": "a\x00b"}, "NUL"),
        ({"title": "\udc80"}, "lone surrogate"),
        ({"\ud800": 1}, "lone surrogate"),
        ({1: "x"}, "keys must be strings"),
        ({"when": object()}, "cannot hold"),
        ({"n": 10**2000}, "digits"),
        (["not", "an", "object"], "JSON object"),
    ],
)
def test_metadata_postgresql_cannot_hold_is_refused(metadata, message):
    with pytest.raises(InvalidValueError, match=message):
        validate_metadata(metadata)


def test_deeply_nested_metadata_is_a_message_not_a_recursion_error():
    deep: dict = {}
    node = deep
    for _ in range(100_000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(SimhashStoreError, match=f"{MAX_METADATA_DEPTH} levels"):
        validate_metadata(deep)


def test_ordinary_metadata_passes_unchanged():
    metadata = {"url": "https://例子.cn", "n": 3, "ok": True, "tags": ["a", None, 1.5], "nested": {"x": []}}
    assert validate_metadata(metadata) == metadata
    assert validate_metadata(None) is None


# Every Store method that takes keys checks them as add does: a typed error naming the problem,
# never the driver's DataError quoting the SQL (the store fixture makes these database tests).
_KEY_TAKERS = {
    "get": lambda store, key: store.get(key),
    "versions": lambda store, key: store.versions([key]),
    "remove": lambda store, key: store.remove([key]),
    "memberships": lambda store, key: store.memberships([key]),
    "stored_digests": lambda store, key: store.stored_digests([key]),
    "stored_metadata": lambda store, key: store.stored_metadata([key]),
    "set_stamps": lambda store, key: store.set_stamps({key: "1:2"}),
    "add": lambda store, key: store.add([NewDocument(key, 1)]),
}


@pytest.mark.parametrize("method", sorted(_KEY_TAKERS))
@pytest.mark.parametrize("key, message", [("a\x00", "NUL"), ("a\ud800", "lone surrogate")])
def test_every_method_taking_keys_refuses_what_postgresql_text_cannot_hold(store, method, key, message):
    store.add([NewDocument("a", 1)])
    with pytest.raises(InvalidKeyError, match=message):
        _KEY_TAKERS[method](store, key)
    assert store.get("a").fingerprint == 1 and store.count() == 1  # nothing changed


def test_a_stamp_or_seed_postgresql_cannot_hold_is_a_typed_error(store):
    with pytest.raises(InvalidValueError, match="NUL"):
        store.set_stamps({"a": "1\x00"})
    with pytest.raises(InvalidValueError, match="NUL"):
        store.sample_keys(3, seed="x\x00")


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.text(max_size=30), st.just("k" * 2049), st.just("k\x00"), st.just("\ud800"), st.integers(), st.none()),
    st.one_of(st.integers(-2, 2**64 + 1), st.booleans(), st.just(np.uint64(5)), st.floats(allow_nan=False)),
    st.one_of(st.none(), st.integers(-2, 2**31 + 1), st.booleans()),
    st.one_of(st.none(), st.binary(max_size=4), st.just(bytearray(b"x")), st.text(max_size=2)),
)
def test_a_document_is_accepted_whether_checked_inline_or_field_by_field(key, value, length, digest):
    # writes.validated checks the common document (an ASCII key, no metadata) inline: it must accept
    # exactly what the checks of each field accept.
    from simhash_store.store.writes import validated

    document = NewDocument(key, value, digest, length)
    try:
        validate_key(key)
        validate_fingerprint(value)
        if length is not None:
            validate_integer(length, "length", 0, 2**31 - 1)
        validate_optional_bytes(digest, "digest")
    except SimhashStoreError:
        with pytest.raises(SimhashStoreError):
            validated(document)
    else:
        assert validated(document) is document


@pytest.mark.parametrize("keep_value", [float("nan"), float("inf"), "a\x00", "\ud800", object(), {"a": float("nan")}])
def test_a_keep_value_jsonb_cannot_hold_is_a_typed_error_before_writing(keep_value):
    # NewDocument.keep_value is written as jsonb unchecked: NaN was PostgreSQL's InvalidTextRepresentation
    # (the whole batch lost), an object json's TypeError.
    from simhash_store.store.writes import validated

    with pytest.raises(InvalidValueError, match="keep_value"):
        validated(NewDocument("k", 5, keep_value=keep_value))
    assert validated(NewDocument("k", 5, keep_value="2024-05-01")).keep_value == "2024-05-01"
    assert validated(NewDocument("k", 5, keep_value=-3.5)).keep_value == -3.5


@pytest.mark.parametrize("keep", [5, "field:a\x00b", "field:\ud800", "sideways"])
def test_a_keep_policy_that_cannot_be_is_a_typed_error(keep):
    # Store.recluster(keep=5) was a plain ValueError, keep="field:a\x00b" the driver's DataError.
    from simhash_store.keep import KeepPolicy

    with pytest.raises(InvalidValueError):
        KeepPolicy.parse(keep)
