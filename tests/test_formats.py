"""The format registry, through the library: every input format gives the same documents, every
output format reads back what was written, and a format registered in a test is read by the same
calls as the shipped ones. No database here; the commands are tested in tests/test_format_commands.py."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from simhash_store import formats
from simhash_store.corpus import BAD_RECORD, Skip, Source
from simhash_store.errors import InputError
from simhash_store.formats import FormatError, Input, InputFormat, ReadOptions
from simhash_store.formats.registry import INPUTS

DATA = Path(__file__).parent / "data"
RECORD_FORMATS = ["jsonl", "csv", "tsv", "parquet"]


def wiki_records() -> list[dict]:
    with open(DATA / "wiki-paragraphs.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle][:12]


def write(records: list[dict], path: Path, form: str | None = None) -> Path:
    writer = formats.open_writer(str(path), form)
    for record in records:
        writer.write(record)
    writer.close()
    return path


@pytest.fixture
def inputs(tmp_path) -> dict[str, Path]:
    """The same twelve Wikipedia paragraphs in every input format (text: one file each)."""
    records = wiki_records()
    found = {form: write(records, tmp_path / f"wiki.{form}") for form in RECORD_FORMATS}
    folder = tmp_path / "wiki"
    folder.mkdir()
    for record in records:
        (folder / f"{record['id']}.txt").write_text(record["text"], encoding="utf-8")
    found["text"] = folder
    return found


@pytest.mark.parametrize("form", ["text", *RECORD_FORMATS])
def test_every_input_format_gives_the_same_documents(inputs, form):
    options = ReadOptions(key_field="id", required={"id": "the key", "text": "the text"})
    documents = list(formats.read_documents([str(inputs[form])], options=options))
    assert all(isinstance(d, Source) for d in documents)
    texts = {
        d.key.removesuffix(".txt"): d.text if d.text is not None else Path(d.path).read_text("utf-8") for d in documents
    }
    assert texts == {r["id"]: r["text"] for r in wiki_records()}
    records = [record for _, record in formats.read_records(str(inputs[form]), options=options)]
    assert sorted(r["text"] for r in records) == sorted(r["text"] for r in wiki_records())


@pytest.mark.parametrize("form", RECORD_FORMATS)
def test_each_output_format_reads_back_what_was_written(tmp_path, form):
    records = [{**r, "n": i, "score": i + 0.5, "tags": [r["title"][:2]]} for i, r in enumerate(wiki_records())]
    path = write(records, tmp_path / f"out.{form}")
    back = [record for _, record in formats.read_records(str(path))]
    if form in ("csv", "tsv"):  # cells are text: numbers and lists as JSON
        records = [
            {k: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else str(v) for k, v in r.items()}
            for r in records
        ]
    assert back == records


def test_the_format_is_told_by_name_then_by_the_first_bytes(inputs, tmp_path):
    assert formats.resolve_format(str(inputs["text"])).name == "text"
    assert formats.resolve_format("crawl.NDJSON").name == "jsonl"
    for form in ("parquet", "jsonl"):
        unnamed = tmp_path / f"no-ending-{form}"
        unnamed.write_bytes(inputs[form].read_bytes())
        assert formats.resolve_format(str(unnamed)).name == form
        # A command that reads any file as text says so: the bytes are not sniffed.
        assert formats.resolve_format(str(unnamed), default="text").name == "text"
    with pytest.raises(FormatError, match="give --format"):
        formats.resolve_format(str(inputs["text"] / "DEV_0.txt") + ".bak")
    with pytest.raises(FormatError, match="input format must be one of text, jsonl, csv, tsv, parquet"):
        formats.resolve_format("a.jsonl", "xml")


def test_a_bad_record_costs_itself_in_every_record_format(tmp_path):
    # JSONL: a broken line; CSV: a row of the wrong width. Both are Skips named by line, the rest read.
    (tmp_path / "a.jsonl").write_text(
        '{"key": "a", "text": "甲"}\n{"key": \n{"key": "b", "text": "乙"}\n', encoding="utf-8"
    )
    (tmp_path / "a.csv").write_text("key,text\na,甲\nx,y,z\nb,乙\n", encoding="utf-8")
    for name, line in (("a.jsonl", 2), ("a.csv", 3)):
        items = list(formats.read_documents([str(tmp_path / name)]))
        assert [i.key for i in items if isinstance(i, Source)] == ["a", "b"]
        [bad] = [i for i in items if isinstance(i, Skip)]
        assert bad.reason == BAD_RECORD and bad.where == f"{tmp_path / name}:{line}"


@pytest.mark.parametrize("form", RECORD_FORMATS)
def test_a_missing_field_is_one_error_in_every_record_format(inputs, form):
    options = ReadOptions(key_field="url", required={"url": "the key", "text": "the text"})
    with pytest.raises(InputError, match="'url' \\(the key\\)"):
        formats.read_documents([str(inputs[form])], options=options)


def test_metadata_fields_go_with_documents_and_bad_metadata_costs_its_record(tmp_path):
    path = tmp_path / "m.jsonl"
    lines = [
        {"key": "a", "text": "甲", "title": "标题", "n": 1},
        {"key": "b", "text": "乙", "title": "t\u0000"},
        {"key": "c", "text": "丙"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    items = list(formats.read_documents([str(path)], options=ReadOptions(metadata_fields=("title", "n"))))
    assert items[0].metadata == {"title": "标题", "n": 1}
    assert isinstance(items[1], Skip) and "NUL" in items[1].detail
    assert items[2].metadata is None


def test_stdin_is_read_by_stream_formats_but_not_parquet(inputs, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(inputs["jsonl"].read_bytes()))))
    assert formats.resolve_format("-").name == "jsonl"  # stdin is never sniffed (it would wait for its bytes)
    assert len(list(formats.read_records("-"))) == 12
    with pytest.raises(FormatError, match="parquet cannot be read from standard input"):
        formats.read_records("-", "parquet")


def test_parquet_cannot_go_to_stdout_and_an_unknown_ending_asks_for_a_format(tmp_path):
    with pytest.raises(FormatError, match="Parquet cannot go to stdout"):
        formats.open_writer("-", "parquet")
    with pytest.raises(FormatError, match="--output-format"):
        formats.open_writer(str(tmp_path / "out.dat"))
    assert not list(tmp_path.iterdir())


@pytest.fixture
def toy_format():
    """A format of the test's own: 'key | text' lines, registered for *.bar files, taken out afterwards."""

    def read(source: Input, options: ReadOptions) -> Iterator[tuple[str, dict | Skip]]:
        with source.open() as stream:
            for number, line in enumerate(stream.read().decode("utf-8").splitlines(), start=1):
                where = f"{source.name}:{number}"
                key, bar, text = line.partition(" | ")
                yield (
                    where,
                    {options.key_field: key, options.text_field: text} if bar else Skip(where, BAD_RECORD, "no ' | '"),
                )

    formats.register_input(
        InputFormat("bar", read, suffixes=(".bar",), sniff=lambda head: b" | " in head.split(b"\n")[0])
    )
    yield
    del INPUTS["bar"]


def test_a_format_registered_in_a_test_is_read_by_every_reading_call(tmp_path, toy_format):
    path = tmp_path / "docs.bar"
    path.write_text("a | 第一篇文章\nno separator\nb | 第二篇文章\n", encoding="utf-8")
    items = list(formats.read_documents([str(path)]))
    assert [(i.key, i.text) for i in items if isinstance(i, Source)] == [("a", "第一篇文章"), ("b", "第二篇文章")]
    assert [str(i) for i in items if isinstance(i, Skip)] == [f"{path}:2: bad record (no ' | ')"]
    # By its sniffer, too, and by name; the same field options and fingerprint records as any format.
    unnamed = tmp_path / "docs"
    unnamed.write_bytes(path.read_bytes())
    assert formats.resolve_format(str(unnamed)).name == "bar"
    assert [
        r["body"]
        for _, r in formats.read_records(str(unnamed), "bar", ReadOptions(text_field="body"))
        if isinstance(r, dict)
    ] == ["第一篇文章", "第二篇文章"]
    fingerprints = tmp_path / "f.bar"
    fingerprints.write_text("a | 0000000000000001\n", encoding="utf-8")
    options = ReadOptions(text_field="fingerprint")
    assert list(
        formats.fingerprint_records(
            formats.read_records(str(fingerprints), options=options), "key", "fingerprint", "auto"
        )
    ) == [formats.FingerprintRecord("a", 1)]
