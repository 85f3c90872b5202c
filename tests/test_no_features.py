"""Texts without features have no fingerprint, and every command says so instead of using 0.

A scheme that reads only Chinese words finds none in an English page: its fingerprint used to be
0, the same as every other such page's. The library raises a typed error; ``fingerprint`` and
``query`` fail for such a text in one line; ``add`` skips it and ``dedup`` passes it through,
each counted under its own reason. The stores here use the frozen zh-jieba-v1, whose reading of
English (none) cannot change.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from simhash_store import NoFeaturesError, dedup, fingerprint
from simhash_store.cli import app
from simhash_store.store import Store

SCHEME = "zh-jieba-v1"
ENGLISH = "Heavy rain flooded the northern districts on Monday, and schools stayed closed for a second day."
ENGLISH_OTHER = "The committee approved the railway budget after a long debate about the cost of new trains."
PUNCTUATION = "—— ★ …… ——"
NO_FEATURES = "(empty, punctuation only, or no words the scheme reads)"


def _run(url, *args: str, input: str | None = None):
    prefix = ["--db", url.render_as_string(hide_password=False)] if url is not None else []
    return CliRunner().invoke(app, [*prefix, *args], input=input)


def _files(tmp_path: Path, sample_paragraphs: list[str]) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "zh.txt").write_text(sample_paragraphs[0], encoding="utf-8")
    (folder / "en.txt").write_text(ENGLISH, encoding="utf-8")
    (folder / "stars.txt").write_text(PUNCTUATION, encoding="utf-8")
    return folder


def test_fingerprint_command_fails_in_one_line_for_a_text_without_features(tmp_path, sample_paragraphs):
    folder = _files(tmp_path, sample_paragraphs)
    result = _run(None, "fingerprint", "--scheme", SCHEME, str(folder / "zh.txt"), str(folder / "en.txt"))
    assert result.exit_code == 1
    assert result.stdout == f"{fingerprint(sample_paragraphs[0], SCHEME):016x}  {folder / 'zh.txt'}\n"
    assert result.stderr == f"failed: {folder / 'en.txt'}: no words (no features under scheme {SCHEME})\n"
    piped = _run(None, "fingerprint", "--scheme", SCHEME, "-", input=ENGLISH)
    assert piped.exit_code == 1 and piped.stdout == ""
    assert piped.stderr == f"failed: -: no words (no features under scheme {SCHEME})\n"
    # The library: a typed error, never a number shared by every such text.
    for text in (ENGLISH, ENGLISH_OTHER, PUNCTUATION, ""):
        try:
            fingerprint(text, SCHEME)
        except NoFeaturesError as exc:
            assert str(exc) == f"the text has no features under scheme {SCHEME} {NO_FEATURES}, so it has no fingerprint"
        else:
            raise AssertionError(f"{text!r} got a fingerprint")


def test_add_skips_and_query_refuses_a_text_without_features(database_url, tmp_path, sample_paragraphs):
    folder = _files(tmp_path, sample_paragraphs)
    assert _run(database_url, "init", "--scheme", SCHEME).exit_code == 0
    added = _run(database_url, "add", str(folder))
    assert added.exit_code == 0, added.output  # not text to compare: a deliberate skip, as for empty files
    assert "added 1, updated 0, unchanged 0, skipped 2, failed 0" in added.stdout
    assert "  skipped 2: no words\n" in added.stdout
    with Store(database_url) as store:
        assert store.count() == 1
    query = _run(database_url, "query", str(folder / "en.txt"))
    assert query.exit_code == 1 and query.stdout == ""
    assert query.stderr == f"failed: {folder / 'en.txt'}: no words (no features under scheme {SCHEME})\n"
    found = _run(database_url, "query", str(folder / "zh.txt"), "--json")
    assert found.exit_code == 0 and json.loads(found.stdout.splitlines()[0])["matches"][0]["key"] == "zh.txt"


def _records(sample_paragraphs: list[str]) -> list[dict]:
    copy = sample_paragraphs[0].replace("。", "，", 1) + "（责任编辑：王晓明）"
    return [
        {"key": "zh", "text": sample_paragraphs[0]},
        {"key": "en", "text": ENGLISH},
        {"key": "zh-other", "text": sample_paragraphs[1]},
        {"key": "en-other", "text": ENGLISH_OTHER},
        {"key": "stars", "text": PUNCTUATION},
        {"key": "zh-copy", "text": copy},
    ]


def test_dedup_passes_texts_without_features_through_and_counts_them(database_url, tmp_path, sample_paragraphs):
    records = _records(sample_paragraphs)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    assert _run(database_url, "init", "--scheme", SCHEME).exit_code == 0
    result = _run(database_url, "dedup", str(source), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 0, result.output
    assert "kept 2, duplicates 1, not compared 3 (no words: passed through), bad records 0" in result.stderr
    written = [json.loads(line)["key"] for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert written == ["zh", "en", "zh-other", "en-other", "stars"]  # the English pages are not each other's copies
    with Store(database_url) as store:
        assert store.count() == 3  # nothing to compare them by, so not stored

    annotated = _run(database_url, "dedup", str(source), "--annotate", "-o", str(tmp_path / "annotated.jsonl"))
    assert annotated.exit_code == 0, annotated.output
    rows = {
        r["key"]: r for r in map(json.loads, (tmp_path / "annotated.jsonl").read_text(encoding="utf-8").splitlines())
    }
    for key in ("en", "en-other", "stars"):
        assert (rows[key]["not_compared"], rows[key]["simhash"], rows[key]["duplicate_of"]) == ("no words", None, None)
    assert rows["zh"]["not_compared"] is None and rows["zh-copy"]["duplicate_of"] == "zh"

    # The library gives the same verdicts.
    with Store(database_url) as store:
        verdicts = {record["key"]: verdict for record, verdict in dedup(records, store=store)}
    assert {key for key, v in verdicts.items() if v.not_compared == "no words"} == {"en", "en-other", "stars"}
    assert all(verdicts[key].kept and verdicts[key].simhash is None for key in ("en", "en-other", "stars"))
    assert verdicts["zh-copy"].duplicate_of == "zh" and verdicts["zh-copy"].not_compared is None
