"""Compatibility schemes give other programs' fingerprints bit for bit; 32- and 128-bit schemes work.

References are recorded by the scripts in tests/compat/ from the real programs (the seed
C++ program compiled with g++, the PyPI simhash package in its own venv), so these tests
need neither. No database.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import hashlib
import importlib.util
import json
import math
import random
import re
import struct
from collections import Counter
from pathlib import Path

import pytest

from simhash_store import (
    DEFAULT,
    InvalidFingerprintError,
    Scheme,
    SchemeError,
    features,
    fingerprint,
    fingerprint_features,
    fingerprint_if_any,
    get_scheme,
    hamming,
    similarity,
    tokens,
)
from simhash_store.hashing import HASHES, md5_last64, murmurhash2, murmurhash64a
from simhash_store.seed_format import c_atof

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
COMPAT = Path(__file__).with_name("compat")
PUBLISHED_SEED_VECTORS = (
    COMPAT / "seed-murmur-vectors.json"
)  # the seed C++ program's outputs, copied from ../shared/compat
CORPUS = SHARED / "corpus"


def _load_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _seed_mismatches(cases: list[dict]) -> list[str]:
    mismatches = []
    for case in cases:
        got64 = format(fingerprint(case["input"], "seed-murmur64"), "064b")
        got32 = format(fingerprint(case["input"], "seed-murmur32"), "032b")
        if (got64, got32) != (case["simhash64"], case["simhash32"]):
            mismatches.append(case["input"][:60])
    return mismatches


# ---------------------------------------------------------------- the seed C++ program


def test_seed_schemes_reproduce_the_ten_published_vectors():
    vectors = _load_json(PUBLISHED_SEED_VECTORS)
    assert len(vectors) == 10
    assert _seed_mismatches(vectors) == []


def test_seed_schemes_match_the_compiled_program_on_generated_lines():
    cases = _load_json(COMPAT / "seed_murmur_reference.json")["cases"]
    assert len(cases) >= 250
    assert _seed_mismatches(cases) == []


def test_murmur_hashes_are_the_fingerprint_of_a_single_positive_item():
    # One item of positive weight: each bit sum is +w or -w, so the fingerprint is the hash.
    for token in ["", "a", "中国", "abcdefgh", "0123456789abcdefg"]:
        data = token.encode()
        assert fingerprint(f"{token}^1", "seed-murmur64") == murmurhash64a(data, 999999937)
        assert fingerprint(f"{token}^1", "seed-murmur32") == murmurhash2(data, 999999937)


def test_seed_sums_are_added_in_the_program_order_in_doubles():
    # In doubles 1e16 + 1 rounds back to 1e16, so every bit sums to 0: no bit is set.
    # Exact arithmetic, or merging a's two weights first, would leave b's hash instead.
    assert fingerprint("a^1e16 b^1 a^-1e16", "seed-murmur64") == 0
    assert fingerprint("a^1e16 b^1 a^-1e16", "seed-murmur32") == 0
    assert fingerprint_features([("a", 1e16), ("b", 1.0), ("a", -1e16)], "seed-murmur64") == 0
    assert fingerprint("a^1e16 a^-1e16 b^1", "seed-murmur64") == murmurhash64a(b"b", 999999937)


def test_seed_reading_matches_the_program_where_it_is_defined():
    seed = "seed-murmur64"
    # atof reads the leading number and ignores the rest; no number at all is 0.
    assert fingerprint("中国^2x 读者^1", seed) == fingerprint("中国^2 读者^1", seed)
    assert fingerprint("中国^0x1p1 读者^.1e1", seed) == fingerprint("中国^2 读者^1", seed)
    assert features("中国^abc 读者^ 知乎^1e", seed) == [("中国", 0.0), ("读者", 0.0), ("知乎", 1.0)]
    # Only the first two "^" pieces count: the token is the first, the weight the second.
    assert features("a^2^3 ^4", seed) == [("a", 2.0), ("", 4.0)]
    # Repeats are kept, in order; tabs are part of tokens, not separators.
    assert tokens("a^1 b\tc^2 a^1", seed) == ["a", "b\tc", "a"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "the line is empty"),
        ("a^1  b^2", "item 2 is empty"),
        (" a^1", "item 1 is empty"),
        ("a^1 ", "item 2 is empty"),
        ("a^1 b", "item 2 ('b') has no '^weight'"),
        ("a^1e400", "too large for a double"),
    ],
)
def test_seed_lines_the_program_leaves_undefined_raise_scheme_error(line, message):
    with pytest.raises(SchemeError, match=re.escape(message)):
        fingerprint(line, "seed-murmur64")


def _libc_atof():
    library = ctypes.util.find_library("c")
    if library is None:
        pytest.skip("no C library to compare atof with")
    atof = ctypes.CDLL(library).atof
    atof.restype, atof.argtypes = ctypes.c_double, [ctypes.c_char_p]
    return atof


def test_c_atof_equals_the_c_library_on_odd_and_random_inputs():
    atof = _libc_atof()
    odd = [
        "",
        "1e",
        "1e+",
        "0x",
        "0x.p1",
        "0x1p",
        "0x1.8p3",
        ".e1",
        "+.5",
        "-",
        " \t\n3",
        "INFINITY",
        "infinit",
        "-nan(abc)",
        "4.9e-324",
        "1e-400",
        "0x1P-1074",
        "１２",
        "1_000",
        "00000.5",
        "-0",
        "1.5.5",
        "3,25",
    ]
    rng = random.Random(6)
    alphabet = "0123456789+-.eEpPxXaAbBfFiInN() \t_"
    samples = odd + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9))) for _ in range(3000)]
    for sample in samples:
        expected = atof(sample.encode())
        if math.isinf(expected) and not sample.strip(" \t\n+-").lower().startswith("inf"):
            with pytest.raises(SchemeError):
                c_atof(sample)
            continue
        got = c_atof(sample)
        assert (math.isnan(got) and math.isnan(expected)) or struct.pack("<d", got) == struct.pack("<d", expected), (
            sample
        )


# ---------------------------------------------------------------- the PyPI simhash package


def _reference_maker():
    """The reference script, imported for its way of turning a case into its text."""
    spec = importlib.util.spec_from_file_location(
        "make_pypi_simhash_reference", COMPAT / "make_pypi_simhash_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PYPI_REFERENCE = _load_json(COMPAT / "pypi_simhash_reference.json")


def _pypi_mismatches(cases: list[dict]) -> list[str]:
    maker = _reference_maker()
    mismatches = []
    for case in cases:
        text = maker.case_text(case, CORPUS)
        if "sha256" in case:
            assert hashlib.sha256(text.encode("utf-8")).hexdigest() == case["sha256"], f"corpus changed: {case}"
        if format(fingerprint(text, "pypi-simhash"), "016x") != case["simhash"]:
            mismatches.append(repr(text[:40]))
    return mismatches


def test_pypi_reference_covers_every_kind_of_text():
    kinds = Counter(case.get("kind", "corpus") for case in PYPI_REFERENCE["cases"])
    assert sum(kinds.values()) >= 200
    assert all(kinds[kind] >= 20 for kind in ("corpus", "edge", "english", "mixed")), kinds


def test_pypi_simhash_scheme_equals_the_package_on_literal_texts():
    # The package's \w and str.lower() follow the Unicode tables of the Python that runs them.
    assert _pypi_mismatches([c for c in PYPI_REFERENCE["cases"] if "text" in c]) == []


def test_pypi_simhash_scheme_equals_the_package_on_corpus_texts(corpus):
    cases = [c for c in PYPI_REFERENCE["cases"] if "corpus" in c]
    assert len(cases) >= 100
    assert _pypi_mismatches(cases) == []


def test_pypi_simhash_gives_texts_without_word_characters_the_hash_of_the_empty_window():
    # The package slides over "" and counts it once: a constant, non-zero fingerprint.
    empty = md5_last64(b"")
    assert empty == 0xE9800998ECF8427E
    for text in ["", " \n", "!!!，。", "😀"]:
        assert tokens(text, "pypi-simhash") == [""]
        assert fingerprint(text, "pypi-simhash") == empty


def test_pypi_simhash_windows_join_word_characters_across_gaps():
    assert tokens("Hi, 中国!", "pypi-simhash") == ["hi中国"]
    assert tokens("ab cd_e", "pypi-simhash") == ["abcd", "bcd_", "cd_e"]


# ---------------------------------------------------------------- schemes at 32 and 128 bits

NEAR_A = (
    "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验及实际情况，制定本法。"
)
NEAR_B = "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的经验及实际情况，制定本法。"
OTHER = "今天天气很好，我们一起去公园散步，然后在湖边的咖啡馆喝了一杯拿铁，聊了聊最近读的小说。"


@pytest.mark.parametrize(("bits", "hash_name"), [(32, "xxh32"), (128, "xxh3_128")])
def test_the_default_scheme_works_at_other_widths(bits, hash_name):
    scheme = dataclasses.replace(DEFAULT, name=f"zh-jieba-{bits}", bits=bits, hash=hash_name)
    assert Scheme.from_json(scheme.to_json()) == scheme
    a, b, other = (fingerprint(text, scheme) for text in (NEAR_A, NEAR_B, OTHER))
    assert all(0 <= value < 2**bits for value in (a, b, other))
    if bits == 128:
        assert a >> 64 and a & (2**64 - 1)  # both halves carry bits, not only the low 64
    assert hamming(a, b, bits) < hamming(a, other, bits)
    assert similarity(a, a, bits) == 1.0
    assert similarity(a, a ^ (2**bits - 1), bits) == 0.0
    assert fingerprint_if_any("", scheme) is None  # no features: no fingerprint (fingerprint() raises)


@pytest.mark.parametrize(("bits", "hash_name"), [(32, "xxh32"), (64, "xxh3_64"), (128, "xxh3_128")])
def test_fingerprint_features_equals_the_bit_sum_definition_at_every_width(bits, hash_name):
    scheme = dataclasses.replace(DEFAULT, name=f"check-{bits}", bits=bits, hash=hash_name)
    rng = random.Random(bits)
    weighted = [(f"特征{k}", rng.choice([0.5, 1.0, 2.0, 3.25])) for k in range(40)]
    hash_function = HASHES[hash_name].function
    expected = 0
    for bit in range(bits):
        total = sum(w if hash_function(t.encode()) >> bit & 1 else -w for t, w in weighted)
        expected |= (total > 0) << bit
    assert fingerprint_features(weighted, scheme) == expected


def test_widths_that_do_not_match_the_hash_are_refused():
    with pytest.raises(SchemeError, match="gives 64 bits"):
        dataclasses.replace(DEFAULT, name="wrong", bits=128)
    with pytest.raises(InvalidFingerprintError):
        hamming(2**64, 0, 64)


def test_compat_schemes_are_registered_with_their_widths():
    assert get_scheme("seed-murmur64").bits == 64
    assert get_scheme("seed-murmur32").bits == 32
    assert get_scheme("pypi-simhash").bits == 64
    for name in ("seed-murmur64", "seed-murmur32", "pypi-simhash"):
        assert Scheme.from_json(get_scheme(name).to_json()) == get_scheme(name)


def test_pypi_windows_refuse_filters_the_package_does_not_apply():
    pypi = get_scheme("pypi-simhash")
    for change in ({"stopwords": "jieba"}, {"drop_punctuation": True}, {"extra_stopwords": ("的",)}):
        with pytest.raises(SchemeError, match="keeps every window"):
            dataclasses.replace(pypi, name="pypi-filtered", **change)


@pytest.mark.parametrize(
    ("scheme", "text"),
    [
        ("seed-murmur64", "a^1e16 b^1 a^-1e16 中国^0.1 中国^0.2 读者^-0.3"),
        ("seed-murmur32", "a^1e16 b^1 a^-1e16 中国^0.1 中国^0.2 读者^-0.3"),
        ("pypi-simhash", "Hello, 世界! Hello, 世界!"),
        ("pypi-simhash", ""),
    ],
)
def test_fingerprint_of_the_features_equals_the_fingerprint_of_the_text(scheme, text):
    # The importer fingerprints features(text) rather than text: the two must agree.
    assert fingerprint_features(features(text, scheme), scheme) == fingerprint(text, scheme)
