"""The fingerprint core: stable values, robustness to any input, and near-duplicates found. No database.

Fingerprints are a data format: a store keeps them for years and compares new ones with
them. The known values below fail as soon as anything changes what the default schemes
compute; such a change needs a new scheme name, not new expected values.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_store import (
    DEFAULT,
    DEFAULT_MAX_DISTANCE,
    SCHEMES,
    NoFeaturesError,
    Scheme,
    SchemeError,
    SimhashStoreError,
    features,
    fingerprint,
    fingerprint_features,
    fingerprint_if_any,
    hamming,
    normalize,
    to_hex,
)
from simhash_store.fingerprint import fingerprint_segmented, segment
from simhash_store.hashing import HASHES
from simhash_store.scheme import ZH_JIEBA_V1

CRIMINAL_LAW = (
    "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验及实际情况，制定本法。"
)
RAILWAY = "大莱龙铁路位于山东省北部环渤海地区，西起位于益羊铁路的潍坊大家洼车站，向东经海化、寿光、寒亭、昌邑、平度、莱州、招远、终到龙口。"


# ---------------------------------------------------------------- stable values


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("", 3244421341483603138),
        ("a", 16629034431890738719),
        ("中国", 9822245771723986127),
        ("中华人民共和国", 14145137615987657024),
    ],
)
def test_feature_hash_is_xxh3_64_of_the_utf8_bytes(token, value):
    assert HASHES["xxh3_64"].function(token.encode("utf-8")) == value


def test_zh_jieba_v1_definition_is_frozen():
    """zh-jieba-v1, the default of stores made before multi-v2 (tests/test_multi_scheme.py), never changes."""
    assert ZH_JIEBA_V1.to_json() == (
        '{"bigram_weight":0.5,"bits":64,"drop_punctuation":true,"extra_stopwords":[],"hash":"xxh3_64",'
        '"hmm":true,"known_words_only":true,"min_token_length":2,"name":"zh-jieba-v1","ngram":1,'
        '"normalizer":"nfkc-casefold","stopwords":"jieba","tokenizer":"jieba","top_k":null,"user_dict":null,'
        '"user_dict_sha256":null,"version":1,"weighting":"log-tfidf"}'
    )
    assert SCHEMES["zh-rjieba-v1"] == replace(ZH_JIEBA_V1, name="zh-rjieba-v1", tokenizer="rjieba")
    assert DEFAULT_MAX_DISTANCE == 11


@pytest.mark.parametrize("scheme", ["zh-jieba-v1", "zh-rjieba-v1"])
@pytest.mark.parametrize(("text", "expected"), [(CRIMINAL_LAW, "925d839787d42440"), (RAILWAY, "3d71b5d0a2d63d68")])
def test_default_schemes_give_the_recorded_fingerprints(scheme, text, expected):
    assert to_hex(fingerprint(text, scheme)) == expected


def test_features_are_known_words_then_adjacent_pairs_at_half_weight():
    names = [name for name, _ in features("保护人民，制定本法。")]
    assert names == ["保护", "人民", "制定", "本法", "保护\x1f人民", "人民\x1f制定", "制定\x1f本法"]
    weights = dict(features("保护人民，制定本法。"))
    assert weights["制定\x1f本法"] == pytest.approx((weights["制定"] + weights["本法"]) / 2 / 2)


_OTHER_PROCESS = """
import json, sys
from simhash_store import fingerprint
texts, schemes = json.load(sys.stdin)
json.dump({s: [fingerprint(t, s) for t in texts] for s in schemes}, sys.stdout)
"""


def test_fingerprints_do_not_depend_on_the_process():
    """Python salts str hashes per process; fingerprints must not notice."""
    texts = [CRIMINAL_LAW, RAILWAY, "Mixed 中英文 text, ＦＵＬＬ width"]
    schemes = ["zh-jieba-v1", "zh-rjieba-v1", "classic-tfidf-top50", "multi-v2", "multi-v3"]
    here = {s: [fingerprint(t, s) for t in texts] for s in schemes}
    for seed in ("1", "4242"):
        result = subprocess.run(
            [sys.executable, "-c", _OTHER_PROCESS],
            input=json.dumps([texts, schemes]),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert json.loads(result.stdout) == here


# ---------------------------------------------------------------- any input


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.characters(blacklist_categories=())))  # every category: lone surrogates, NUL, controls
def test_fingerprint_of_any_unicode_string_is_a_64_bit_value_or_no_features(text):
    value = fingerprint_if_any(text)
    if value is None:  # no features: fingerprint() says so rather than make up a value
        with pytest.raises(NoFeaturesError):
            fingerprint(text)
        return
    assert 0 <= value < 2**64
    assert fingerprint(text) == value


@pytest.mark.parametrize("scheme", ["zh-jieba-v1", "zh-rjieba-v1", "classic-tfidf-top50", "multi-v2", "multi-v3"])
@pytest.mark.parametrize("text", ["", " ", "\n\t\u3000 \r\n", "，。！？……", "\x00\x01\ufeff"])
def test_text_without_words_has_no_fingerprint(scheme, text):
    """Not 0, which would put every such text at distance 0 from every other: a typed error."""
    with pytest.raises(NoFeaturesError, match=f"no features under scheme {scheme}"):
        fingerprint(text, scheme)
    assert fingerprint_if_any(text, scheme) is None
    assert features(text, scheme) == []


def test_english_texts_under_a_chinese_only_scheme_are_not_at_distance_zero_from_each_other():
    """zh-jieba-v1 keeps only words of jieba's dictionary, which holds no English: two unrelated
    English texts have no features. A caller of fingerprint() used to get 0 for both, so distance 0."""
    english = [
        "The committee approved the railway budget on Tuesday after a long debate about costs.",
        "Heavy rain flooded the northern districts, and schools stayed closed for a second day.",
    ]
    for text in english:
        with pytest.raises(NoFeaturesError):
            fingerprint(text, "zh-jieba-v1")
        assert fingerprint_if_any(text, "zh-jieba-v1") is None
    # One error hierarchy: a caller catching the library's base error (or ValueError) catches this too.
    assert issubclass(NoFeaturesError, SimhashStoreError) and issubclass(NoFeaturesError, ValueError)


def test_segmenting_once_gives_the_same_fingerprint():
    """Benchmarks and batch jobs may segment once and fingerprint under several schemes."""
    for scheme in ("zh-jieba-v1", "classic-tfidf-top50"):
        assert fingerprint_segmented(segment(RAILWAY, scheme), scheme) == fingerprint(RAILWAY, scheme)


# ---------------------------------------------------------------- invariances


def test_full_width_and_half_width_forms_are_equal():
    full = "第１条：本法自２０２４年１月１日起施行（ＡＢＣ）！"
    half = "第1条:本法自2024年1月1日起施行(ABC)!"
    assert normalize(full) == normalize(half)
    assert fingerprint(full) == fingerprint(half)


def test_line_reflow_and_spacing_of_chinese_text_change_nothing():
    reflowed = (
        "\u3000\u3000中华人民共和国刑法第一条：为了惩罚犯罪，\n保护人民，"
        "根据宪法，结合我国同犯罪作斗争的具\r\n体经验及实际情况， 制定本法。\n\n"
    )
    assert fingerprint(reflowed) == fingerprint(CRIMINAL_LAW)


def test_spaces_between_latin_words_still_separate_them():
    assert normalize("Hello   World 你 好") == "hello world你好"


def test_numbers_and_urls_in_boilerplate_do_not_move_the_zh_jieba_v1_fingerprint():
    """Unknown words (view counts, phone numbers, URLs) are not features of zh-jieba-v1."""
    assert fingerprint(RAILWAY + " 浏览次数：12345678 https://example.com/a/1.html", ZH_JIEBA_V1) == fingerprint(
        RAILWAY + " 浏览次数：87654321 https://example.org/b/2.htm", ZH_JIEBA_V1
    )


# ---------------------------------------------------------------- weighted input


def test_weighted_line_equals_weighted_pairs():
    line = fingerprint("中国^2 知乎^1 读者^2", "weighted-v1")
    assert line == fingerprint_features([("中国", 2.0), ("知乎", 1.0), ("读者", 2.0)])
    assert line == fingerprint_features([("中国", 1.5), ("知乎", 1.0), ("读者", 2.0), ("中国", 0.5)])
    assert fingerprint("中国 知乎", "weighted-v1") == fingerprint_features(["中国", "知乎"])


def test_bit_sums_are_exact_ties_give_zero_and_the_majority_wins():
    """Sums are exact integers, so a tie is a tie on every machine (and never a rounding error)."""
    a, b, c = (HASHES["xxh3_64"].function(word.encode()) for word in ("甲", "乙", "丙"))
    assert fingerprint_features(["甲", "乙"]) == a & b
    assert fingerprint_features(["甲", "乙", "丙"]) == (a & b) | (a & c) | (b & c)
    assert fingerprint_features([("甲", 1e-300), ("乙", 1e300)]) == b


def test_a_weight_that_is_not_a_number_is_refused():
    with pytest.raises(SchemeError, match="not a number"):
        fingerprint("中国^abc", "weighted-v1")


# ---------------------------------------------------------------- schemes


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_every_registered_scheme_survives_json(name):
    assert Scheme.from_json(SCHEMES[name].to_json()) == SCHEMES[name]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(min_token_length=0), "min_token_length"),
        (dict(min_token_length=True), "min_token_length"),
        (dict(bigram_weight=-0.5), "bigram_weight"),
        (dict(bigram_weight=float("nan")), "bigram_weight"),
        (dict(bigram_weight=True), "bigram_weight"),
        (dict(bigram_weight=0.5, ngram=2), "ngram 1"),
        (dict(known_words_only="yes"), "known_words_only"),
        (dict(tokenizer="char-windows", ngram=4, bigram_weight=0.0, known_words_only=True), "jieba tokenizer"),
    ],
)
def test_invalid_scheme_fields_are_refused_with_the_field_named(changes, message):
    with pytest.raises(SchemeError, match=message):
        replace(ZH_JIEBA_V1, name="bad", **changes)


def test_user_dictionary_words_count_as_known(tmp_path):
    dictionary = tmp_path / "words.txt"
    dictionary.write_text("大莱龙铁路 10 n\n", encoding="utf-8")
    names = [name for name, _ in features(RAILWAY, ZH_JIEBA_V1.with_user_dict(dictionary))]
    assert "大莱龙铁路" in names
    assert "大莱龙铁路" not in [name for name, _ in features(RAILWAY, ZH_JIEBA_V1)]


# ---------------------------------------------------------------- near-duplicates in real text


def test_lightly_revised_laws_are_within_the_default_distance(revision_pairs):
    light = [(older, newer) for older, newer, jaccard in revision_pairs if jaccard >= 0.9]
    assert len(light) == 5
    for older, newer in light:
        assert hamming(fingerprint(older), fingerprint(newer)) <= DEFAULT_MAX_DISTANCE


def test_rewritten_laws_are_beyond_the_default_distance(revision_pairs):
    rewritten = [(older, newer) for older, newer, jaccard in revision_pairs if jaccard < 0.3]
    assert len(rewritten) == 2
    for older, newer in rewritten:
        assert hamming(fingerprint(older), fingerprint(newer)) > DEFAULT_MAX_DISTANCE


def test_reposted_paragraph_is_closer_than_unrelated_paragraphs(sample_paragraphs):
    assert len(sample_paragraphs) == 40
    values = [fingerprint(p) for p in sample_paragraphs]
    for paragraph, value in zip(sample_paragraphs[:10], values):
        repost = (
            "来源：东方资讯网　2023-05-12 14:32　责任编辑：王晓明\n\n"
            + paragraph.replace("，", ", ")
            + "\n（编辑：李静）"
        )
        distance = hamming(value, fingerprint(repost))
        assert distance <= DEFAULT_MAX_DISTANCE
        assert all(distance < hamming(value, other) for other in values if other != value)


def test_unrelated_laws_are_beyond_the_default_distance(sample_laws):
    values = [fingerprint(text) for text in sample_laws]
    distances = [hamming(a, b) for i, a in enumerate(values) for b in values[i + 1 :]]
    assert len(distances) == 190
    assert min(distances) > DEFAULT_MAX_DISTANCE


def _long_text(sample_laws, sample_paragraphs, revision_pairs) -> str:
    """Every shipped text, over and over in a shifting order, until it is cut in two pieces."""
    from simhash_store.fingerprint import PIECE_CHARACTERS

    texts = sample_laws + sample_paragraphs + [text for pair in revision_pairs for text in pair[:2]]
    parts: list[str] = []
    length, round_ = 0, 0
    while length <= PIECE_CHARACTERS * 1.1:
        for text in texts[round_ % len(texts) :] + texts[: round_ % len(texts)]:
            parts.append(text)
            length += len(text)
        round_ += 7
    return "\n".join(parts)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", [ZH_JIEBA_V1, DEFAULT])
def test_long_text_is_segmented_in_pieces_with_the_same_result(scheme, sample_laws, sample_paragraphs, revision_pairs):
    from simhash_store.fingerprint import PIECE_CHARACTERS, _segment_in_pieces

    # One line (multi-v2 counts a repeated line once), with words of Latin script and numbers.
    text = _long_text(sample_laws, sample_paragraphs, revision_pairs).replace("\n", "")
    text += " ".join(f"English words and numbers 1,{i:03d} of line {i}." for i in range(2000))
    normalized = normalize(text, scheme.normalizer)
    assert len(normalized) > PIECE_CHARACTERS
    pieces = list(_segment_in_pieces(normalized, scheme))
    assert len(pieces) == 2
    whole = segment(text, scheme)
    # Cut only after punctuation: the pieces' tokens are exactly the whole text's.
    assert [token for piece in pieces for token in piece] == whole
    # Counted piece by piece (bounded memory) equals one segmentation of the whole text.
    assert fingerprint(text, scheme) == fingerprint_segmented(whole, scheme)


@pytest.mark.parametrize("scheme", ["zh-jieba-v1", "classic-tfidf-top50", "multi-v2", "multi-v3"])
def test_fingerprint_is_the_simhash_of_its_features(scheme, sample_laws, sample_paragraphs, revision_pairs):
    # The default schemes sum hash values looked up by word number (and pairs hashed from
    # their words' bytes); hashing each feature's name must give the same bits.
    texts = sample_laws + sample_paragraphs + [text for pair in revision_pairs for text in pair[:2]]
    texts += [CRIMINAL_LAW, RAILWAY]
    assert len(texts) == 76
    for text in texts:
        assert fingerprint(text, scheme) == fingerprint_features(features(text, scheme), scheme)


def test_copied_stop_words_and_idf_reader_are_jiebas():
    import jieba.analyse

    from simhash_store.fingerprint import JIEBA_STOP_WORDS, _idf_table

    extractor = jieba.analyse.default_tfidf
    assert JIEBA_STOP_WORDS == frozenset(extractor.STOP_WORDS)
    table, median = _idf_table()
    assert table == extractor.idf_freq and median == extractor.median_idf
