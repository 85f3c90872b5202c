"""The multi-v2 scheme and multi-v3 (multi-v2 blind to invisible characters, the default for new stores): every script counts.

Its fingerprints are a data format like zh-jieba-v1's: the pinned values below fail as
soon as anything changes what it computes (a change is a new scheme name).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from simhash_store import DEFAULT_MAX_DISTANCE, SCHEMES, SchemeError, features, fingerprint, hamming, to_hex
from simhash_store.fingerprint import fingerprint_segmented, segment, tokens
from simhash_store.scheme import DEFAULT, MULTI_V2, MULTI_V3, ZH_RJIEBA_V1
from simhash_store.tokenizers import script_words

CRIMINAL_LAW = (
    "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验及实际情况，制定本法。"
)
ENGLISH = (
    "Quarterly profits at the media group jumped 76% to $1.13bn for the three months to December, "
    "from $639m a year earlier. The firm benefited from sales of high-speed internet connections."
)
OTHER_ENGLISH = (
    "The striker scored twice in the second half as the champions came from behind to win the cup "
    "final in front of 70,000 fans, their third trophy in four seasons under the coach."
)
RUSSIAN = "Московский метрополитен открыт в 1935 году и перевозит миллионы пассажиров ежедневно."
MIXED = "本文介绍如何在服务器上部署应用。\n" + ENGLISH + "\n部署完成后请检查日志，确认服务正常运行。"


def test_multi_v2_definition_is_frozen():
    assert MULTI_V2.to_json() == (
        '{"bigram_weight":0.5,"bits":64,"drop_punctuation":true,"extra_stopwords":[],"hash":"xxh3_64",'
        '"hmm":true,"known_words_only":true,"min_token_length":2,"name":"multi-v2","ngram":1,'
        '"normalizer":"nfkc-casefold-v2","stopwords":"jieba","tokenizer":"multi-rjieba","top_k":null,"user_dict":null,'
        '"user_dict_sha256":null,"version":1,"weighting":"log-tfidf"}'
    )
    assert SCHEMES["multi-v2"] is MULTI_V2


def test_multi_v3_definition_is_frozen():
    assert MULTI_V3.to_json() == MULTI_V2.to_json().replace('"multi-v2"', '"multi-v3"').replace(
        '"nfkc-casefold-v2"', '"nfkc-casefold-v3"'
    )
    assert SCHEMES["multi-v3"] is MULTI_V3


def test_new_stores_default_to_multi_v3():
    assert DEFAULT is MULTI_V3


# Unicode's default-ignorable characters, drawn as nothing (DerivedCoreProperties.txt).
IGNORABLE = "\u00ad\u034f\u061c\u115f\u180b\u180e\u200b\u2060\u2066\u2069\u3164\ufe0f\ufeff\uffa0\U0001d173\U000e0041"


@pytest.mark.parametrize("hidden", list(IGNORABLE))
def test_invisible_characters_between_every_two_change_nothing_under_multi_v3(hidden, sample_paragraphs):
    # One of them between every two characters left multi-v2 without a single feature: `add`
    # skipped the text as "no words" and `dedup` kept it beside the copy it was made from.
    for text in (CRIMINAL_LAW, ENGLISH, MIXED, sample_paragraphs[0]):
        assert fingerprint(hidden.join(text), "multi-v3") == fingerprint(text, "multi-v3")


def test_multi_v3_is_multi_v2_on_texts_without_invisible_characters(sample_laws, sample_paragraphs):
    for text in [CRIMINAL_LAW, ENGLISH, RUSSIAN, MIXED, *sample_laws[:5], *sample_paragraphs[:50]]:
        assert fingerprint(text, "multi-v3") == fingerprint(text, "multi-v2")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CRIMINAL_LAW, "925d839787d42440"),
        (ENGLISH, "989cc1648ca7e940"),
        (RUSSIAN, "9cf42f72b75714d2"),
        (MIXED, "189cc4448de7cd00"),
    ],
)
def test_multi_v2_gives_the_recorded_fingerprints(text, expected):
    assert to_hex(fingerprint(text, "multi-v2")) == expected
    assert to_hex(fingerprint(text)) == expected  # the default, multi-v3: the same on such texts


def test_english_text_has_features_and_distinct_fingerprints():
    """zh-jieba-v1 finds no feature in English (every English text is 0); multi-v2 reads its words."""
    assert tokens(ENGLISH, "zh-jieba-v1") == []
    assert {"quarterly", "profits", "internet"} <= set(tokens(ENGLISH, "multi-v2"))
    assert hamming(fingerprint(ENGLISH, "multi-v2"), fingerprint(OTHER_ENGLISH, "multi-v2")) > DEFAULT_MAX_DISTANCE


def test_cyrillic_words_are_features():
    assert {"московский", "метрополитен", "1935"} <= set(tokens(RUSSIAN, "multi-v2"))


def test_chinese_text_is_weighed_as_zh_rjieba_v1_does():
    """On Chinese text without Latin words or repeated lines, what made v1 good is kept unchanged."""
    assert features(CRIMINAL_LAW, "multi-v2") == features(CRIMINAL_LAW, ZH_RJIEBA_V1)
    assert fingerprint(CRIMINAL_LAW, "multi-v2") == fingerprint(CRIMINAL_LAW, ZH_RJIEBA_V1)


def test_english_paragraphs_of_a_chinese_article_count():
    """Two tech articles that differ only in their English look identical to zh-jieba-v1, not to multi-v2."""
    other = MIXED.replace(ENGLISH, OTHER_ENGLISH)
    assert fingerprint(MIXED, "zh-jieba-v1") == fingerprint(other, "zh-jieba-v1")
    assert hamming(fingerprint(MIXED, "multi-v2"), fingerprint(other, "multi-v2")) > DEFAULT_MAX_DISTANCE


def test_a_repeated_title_or_footer_line_counts_once():
    body = ENGLISH + "\n" + OTHER_ENGLISH
    title = "Media group profits jump"
    once = fingerprint(f"{title}\n{body}", "multi-v2")
    assert fingerprint(f"{title}\n{title}\n{title}\n\n{body}", "multi-v2") == once
    footer = "Copyright © 2024 Daily Courier. All rights reserved."
    assert fingerprint(f"{title}\n{body}\n{footer}\n{footer}", "multi-v2") == fingerprint(
        f"{title}\n{body}\n{footer}", "multi-v2"
    )


def test_case_width_and_number_formats_are_normalised():
    assert fingerprint("ＰＹＴＨＯＮ Release 3.11 has 1,000 users", "multi-v2") == fingerprint(
        "python release 3.11 has 1000 users", "multi-v2"
    )
    assert script_words("don’t 007 1,000.5 café") == ["don't", "7", "1000.5", "café"]


def test_spaces_after_punctuation_keep_latin_words_apart():
    """zh-jieba-v1's normaliser drops a space after a comma; multi-v2 keeps the words apart."""
    assert {"released", "1000", "users", "café"} <= set(tokens("released, 1,000 users’ café", "multi-v2"))


def test_segmenting_once_gives_the_same_fingerprint():
    for text in (CRIMINAL_LAW, ENGLISH, RUSSIAN, MIXED):
        assert fingerprint_segmented(segment(text, "multi-v2"), "multi-v2") == fingerprint(text, "multi-v2")


def test_multi_jieba_is_the_same_scheme_on_jieba():
    twin = replace(MULTI_V2, name="multi-jieba-check", tokenizer="multi-jieba")
    for text in (CRIMINAL_LAW, ENGLISH, MIXED):
        assert tokens(text, twin) == tokens(text, MULTI_V2)


def test_scripts_tokenizer_needs_known_words_and_single_words():
    with pytest.raises(SchemeError, match="known_words_only"):
        replace(MULTI_V2, name="bad", known_words_only=False)
    with pytest.raises(SchemeError, match="ngram 1"):
        replace(MULTI_V2, name="bad", ngram=2, bigram_weight=0.0)


_WITHOUT_RJIEBA = """
import sys
sys.modules["rjieba"] = None  # as if it were not installed
from simhash_store import SchemeError, fingerprint
try:
    fingerprint("中文", "multi-v2")
except SchemeError as error:
    print(error)
"""


def test_a_missing_rjieba_is_one_clear_error():
    result = subprocess.run([sys.executable, "-c", _WITHOUT_RJIEBA], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == (
        "this scheme segments with rjieba, a dependency of simhash-store that is not installed: pip install rjieba==0.2.2"
    )


_BATCH_WITHOUT_RJIEBA = """
import sys
sys.modules["rjieba"] = None  # as if it were not installed
from simhash_store import SchemeError
from simhash_store.ingest import Fingerprinter
from simhash_store.scheme import MULTI_V2
try:
    Fingerprinter(MULTI_V2, jobs=2)
except SchemeError as error:
    print("refused before any document:", error)
"""


def test_a_batch_without_rjieba_is_refused_once_before_any_document():
    result = subprocess.run([sys.executable, "-c", _BATCH_WITHOUT_RJIEBA], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("refused before any document: this scheme segments with rjieba")


def test_a_text_of_listed_english_words_only_has_a_fingerprint():
    sentence = "The quick brown fox jumps over the lazy dog again and again today."
    other = "Another quick brown cat sleeps under the old tree every single afternoon."
    assert hamming(fingerprint(sentence, "multi-v2"), fingerprint(other, "multi-v2")) > DEFAULT_MAX_DISTANCE


def test_english_paragraphs_weigh_four_times_the_latin_words_of_a_chinese_footer():
    """A Chinese page's "Copyright" line stays light (half its IDF); an English paragraph
    counts about as its share of the text (twice its IDF)."""
    footer = dict(features("本文介绍如何在服务器上部署应用。\nCopyright 2024 华夏网 版权所有", "multi-v2"))
    paragraph = dict(features("本文介绍如何在服务器上部署应用。\n" + ENGLISH, "multi-v2"))
    english_only = dict(features(ENGLISH + " copyright", "multi-v2"))
    assert paragraph["quarterly"] == pytest.approx(english_only["quarterly"])
    assert footer["copyright"] == pytest.approx(english_only["copyright"] / 4)


# ---------------------------------------------------------------- stores (a database)


def _add_files(url, folder, *extra: str):
    from typer.testing import CliRunner

    from simhash_store.cli import app

    env = {"SIMHASH_STORE_URL": url.render_as_string(hide_password=False)}
    result = CliRunner().invoke(app, ["add", str(folder), *extra], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.mark.db
def test_a_new_store_records_multi_v3_and_an_old_store_keeps_zh_jieba_v1(database_url, empty_database_url, tmp_path):
    from simhash_store.store import Store

    (tmp_path / "law.txt").write_text(CRIMINAL_LAW + "\n" + ENGLISH, encoding="utf-8")
    _add_files(database_url, tmp_path)
    with Store(database_url) as store:
        assert store.scheme.name == "multi-v3"
        assert [m.key for m in store.query(fingerprint(CRIMINAL_LAW + "\n" + ENGLISH, "multi-v3"), 0)] != []

    # A store made before multi-v2 became the default records zh-jieba-v1: a later add
    # without --scheme fingerprints with zh-jieba-v1, so its answers do not change.
    with Store(empty_database_url, scheme="zh-jieba-v1") as old:
        old.add([])
    _add_files(empty_database_url, tmp_path)
    with Store(empty_database_url) as store:
        assert store.scheme.name == "zh-jieba-v1"
        assert store.query(fingerprint(CRIMINAL_LAW + "\n" + ENGLISH, "zh-jieba-v1"), 0) != []
