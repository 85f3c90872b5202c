"""Every input format through every command that reads, stdin, every output format, and the
crawler's conveniences (query --jsonl, query --key, add --json), through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simhash_store import fingerprint, formats, to_hex
from simhash_store.cli import app
from simhash_store.store import Store

DATA = Path(__file__).parent / "data"
RECORD_FORMATS = ["jsonl", "csv", "tsv", "parquet"]
ALL_FORMATS = ["text", *RECORD_FORMATS]
SCHEME = "zh-jieba-v1"  # fingerprints without a database: calibrate and the expected values


def invoke(url, *args: str, input: str | bytes | None = None):
    env = {"SIMHASH_STORE_URL": url.render_as_string(hide_password=False)} if url is not None else {}
    return CliRunner().invoke(app, list(args), env=env, input=input, catch_exceptions=False)


def wiki() -> list[dict]:
    with open(DATA / "wiki-paragraphs.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle][:8]


def write(records: list[dict], path: Path) -> Path:
    writer = formats.open_writer(str(path))
    for record in records:
        writer.write(record)
    writer.close()
    return path


def make_input(tmp_path: Path, form: str, records: list[dict] | None = None) -> Path:
    """The paragraphs in one format: records keyed by ``id``, or a folder of ``ID.txt`` files."""
    records = wiki() if records is None else records
    if form != "text":
        return write(records, tmp_path / f"in.{form}")
    folder = tmp_path / "in"
    folder.mkdir()
    for record in records:
        (folder / f"{record['id']}.txt").write_text(record["text"], encoding="utf-8")
    return folder


def keys_of(form: str) -> set[str]:
    return {r["id"] + (".txt" if form == "text" else "") for r in wiki()}


def stored(url) -> dict[str, int]:
    with Store(url) as store:
        return {m.key: m.fingerprint for m in store.query(0, 64)}


def read_back(path: Path) -> list[dict]:
    return [record for _, record in formats.read_records(str(path))]


@pytest.mark.parametrize("form", ALL_FORMATS)
def test_add_reads_every_format(database_url, tmp_path, form):
    result = invoke(database_url, "add", str(make_input(tmp_path, form)), "--key-field", "id", "--scheme", SCHEME, "-q")
    assert result.exit_code == 0, result.output
    assert stored(database_url) == {
        r["id"] + (".txt" if form == "text" else ""): fingerprint(r["text"], SCHEME) for r in wiki()
    }


@pytest.mark.parametrize("form", RECORD_FORMATS)
def test_add_stores_the_metadata_fields_it_is_given(database_url, tmp_path, form):
    # add --metadata-field read the fields and never stored them: every document's metadata was NULL.
    records = [{**record, "title": f"t{n}", "n": n} for n, record in enumerate(wiki())]
    path = make_input(tmp_path, form, records)
    result = invoke(
        database_url, "add", str(path), "--key-field", "id", "--metadata-field", "title", "--metadata-field", "n"
    )
    assert result.exit_code == 0, result.output
    with Store(database_url) as store:
        document = store.get(records[3]["id"])
        assert document is not None and document.metadata in ({"title": "t3", "n": 3}, {"title": "t3", "n": "3"})


def test_metadata_given_or_changed_on_a_rerun_of_the_same_texts_is_stored(database_url, tmp_path):
    # A record whose text was stored already was taken as unchanged before its metadata was
    # looked at: `--metadata-field` on a rerun, or a field corrected since, was never stored
    # ("unchanged 8", exit 0), the old metadata kept.
    records = wiki()
    plain = make_input(tmp_path, "jsonl", records)
    assert invoke(database_url, "add", str(plain), "--key-field", "id").exit_code == 0
    described = write([{**r, "url": f"http://old/{n}"} for n, r in enumerate(records)], tmp_path / "old.jsonl")
    result = invoke(database_url, "add", str(described), "--key-field", "id", "--metadata-field", "url")
    assert result.exit_code == 0 and "updated 8, unchanged 0" in result.output, result.output
    again = invoke(database_url, "add", str(described), "--key-field", "id", "--metadata-field", "url")
    assert "updated 0, unchanged 8" in again.output, again.output
    corrected = [{**r, "url": f"http://old/{n}"} for n, r in enumerate(records)]
    corrected[3]["url"] = "http://new/3"
    path = write(corrected, tmp_path / "new.jsonl")
    result = invoke(database_url, "add", str(path), "--key-field", "id", "--metadata-field", "url")
    assert "updated 1, unchanged 7" in result.output, result.output
    # without --metadata-field, what is stored stays
    assert "unchanged 8" in invoke(database_url, "add", str(plain), "--key-field", "id").output
    with Store(database_url) as store:
        assert store.get(records[3]["id"]).metadata == {"url": "http://new/3"}
        assert store.get(records[4]["id"]).metadata == {"url": "http://old/4"}
    assert stored(database_url) == {r["id"]: fingerprint(r["text"]) for r in records}


@pytest.mark.parametrize("form", ALL_FORMATS)
def test_dedup_reads_every_format(database_url, tmp_path, form):
    records = wiki()
    records.append({**records[0], "id": "copy"})  # an exact copy: a duplicate of the first
    output = tmp_path / "out.jsonl"
    result = invoke(
        database_url, "dedup", str(make_input(tmp_path, form, records)), "--key-field", "id", "-o", str(output)
    )
    assert result.exit_code == 0, result.output
    kept = read_back(output)
    assert len(kept) == 8 and "kept 8, duplicates 1" in result.output
    assert {r["id"] for r in kept} == keys_of(form)


@pytest.mark.parametrize("form", ALL_FORMATS)
def test_query_reads_every_format(database_url, tmp_path, form):
    invoke(database_url, "add", str(write(wiki(), tmp_path / "s.jsonl")), "--key-field", "id", "-q")
    query_input = make_input(tmp_path, form)
    result = invoke(database_url, "query", str(query_input), "--key-field", "id", "--json", "-k", "3")
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == 8
    for answer in answers:
        name = Path(answer["query"]).name.removesuffix(".txt")
        assert answer["matches"][0] == {"key": name, "distance": 0, "similarity": 1.0}


@pytest.mark.parametrize("form", RECORD_FORMATS)
def test_import_reads_every_record_format(database_url, tmp_path, form):
    rows = [{"id": r["id"], "fingerprint": to_hex(fingerprint(r["text"], SCHEME))} for r in wiki()]
    path = write(rows, tmp_path / f"fingerprints.{form}")
    result = invoke(database_url, "import", str(path), "--scheme", SCHEME, "--key-field", "id")
    assert result.exit_code == 0, result.output
    assert stored(database_url) == {r["id"]: fingerprint(r["text"], SCHEME) for r in wiki()}


def test_import_of_text_files_is_one_line(database_url, tmp_path):
    result = invoke(database_url, "import", str(make_input(tmp_path, "text")), "--scheme", SCHEME)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("Error: ") and "'fingerprint'" in result.output


@pytest.mark.parametrize("form", ALL_FORMATS)
def test_calibrate_reads_every_format(tmp_path, form):
    result = invoke(None, "calibrate", str(make_input(tmp_path, form)), "--scheme", SCHEME, "--sample", "8", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["documents"] == 8


def test_stdin_through_every_command_that_reads_it(database_url, tmp_path):
    jsonl = (DATA / "wiki-paragraphs.jsonl").read_bytes()
    first = wiki()[0]
    deduped = invoke(database_url, "dedup", "-", "--key-field", "id", input=jsonl)  # first: it starts the clusters
    assert deduped.exit_code == 0 and len(deduped.stdout.splitlines()) == 40
    added = invoke(database_url, "add", "--format", "jsonl", "-", "--key-field", "id", "-q", input=jsonl)
    assert added.exit_code == 0, added.output
    assert len(stored(database_url)) == 40
    queried = invoke(database_url, "query", "-", "--json", "-k", "0", input=first["text"].encode())
    assert json.loads(queried.stdout)["matches"][0]["key"] == first["id"]
    queried = invoke(
        database_url, "query", "--format", "jsonl", "-", "--key-field", "id", "--json", "-k", "0", input=jsonl
    )
    assert len(queried.stdout.splitlines()) == 40
    csv_in = "key,fingerprint\nx,0000000000000001\n"
    imported = invoke(database_url, "import", "--format", "csv", "-", "--scheme", "multi-v3", "--no-bulk", input=csv_in)
    assert imported.exit_code == 0 and stored(database_url)["x"] == 1
    calibrated = invoke(
        None, "calibrate", "--format", "jsonl", "-", "--scheme", SCHEME, "--sample", "40", "--json", input=jsonl
    )
    assert calibrated.exit_code == 0 and json.loads(calibrated.stdout)["documents"] == 40
    parquet = invoke(database_url, "dedup", "--format", "parquet", "-", input=jsonl)
    assert parquet.exit_code == 2 and "parquet cannot be read from standard input" in parquet.output


@pytest.mark.parametrize("form", RECORD_FORMATS)
def test_outputs_of_dedup_query_and_dups_read_back(database_url, tmp_path, form):
    records = wiki() + [{**wiki()[0], "id": "copy"}]
    source = write(records, tmp_path / "in.jsonl")
    deduped = invoke(database_url, "dedup", str(source), "--key-field", "id", "-o", str(tmp_path / f"clean.{form}"))
    assert deduped.exit_code == 0, deduped.output
    clean = read_back(tmp_path / f"clean.{form}")
    assert [r["id"] for r in clean] == [r["id"] for r in wiki()]
    assert [r["text"] for r in clean] == [r["text"] for r in wiki()]

    queried = invoke(
        database_url, "query", str(source), "--key-field", "id", "-k", "0", "-o", str(tmp_path / f"q.{form}")
    )
    assert queried.exit_code == 0, queried.output
    answers = read_back(tmp_path / f"q.{form}")
    assert [a["query"] for a in answers] == [r["id"] for r in records]
    matches = [json.loads(a["matches"]) if isinstance(a["matches"], str) else a["matches"] for a in answers]
    assert {m["key"] for m in matches[-1]} == {"DEV_0", "copy"}

    dups = invoke(database_url, "dups", "-k", "0", "-o", str(tmp_path / f"d.{form}"))
    assert dups.exit_code == 0, dups.output
    [group] = read_back(tmp_path / f"d.{form}")
    keys = json.loads(group["keys"]) if isinstance(group["keys"], str) else group["keys"]
    assert sorted(keys) == ["DEV_0", "copy"] and int(group["distance"]) == 0


def test_query_jsonl_gives_one_line_per_record_in_order(database_url, tmp_path):
    store_input = write(wiki(), tmp_path / "stored.jsonl")
    invoke(database_url, "add", "--jsonl", str(store_input), "--key-field", "id", "-q")
    crawl = [{"url": f"https://example.com/{n}", "body": r["text"][: len(r["text"]) - 3]} for n, r in enumerate(wiki())]
    crawl.insert(
        3, {"url": "https://example.com/unrelated", "body": "完全不同的另一段文字，讲的是天气和城市交通的事情。"}
    )
    path = write(crawl, tmp_path / "crawl.jsonl")
    result = invoke(database_url, "query", "--jsonl", str(path), "--key-field", "url", "--text-field", "body", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["query"] for line in lines] == [c["url"] for c in crawl]
    assert lines[3]["matches"] == []
    assert [line["matches"][0]["key"] for i, line in enumerate(lines) if i != 3] == [r["id"] for r in wiki()]


def test_an_output_that_is_an_input_of_query_or_calibrate_is_refused_before_any_work(database_url, tmp_path):
    # query --jsonl IN -o IN replaced its input with the answers, exit 0 (dedup refused it already).
    stored = write(wiki(), tmp_path / "stored.jsonl")
    assert invoke(database_url, "add", "--jsonl", str(stored), "--key-field", "id", "-q").exit_code == 0
    page = tmp_path / "page.txt"
    page.write_text(wiki()[0]["text"], encoding="utf-8")
    before = {path: path.read_bytes() for path in (stored, page)}
    link = tmp_path / "link.jsonl"
    link.symlink_to(stored)
    for output, arguments in (
        (stored, ["query", "--jsonl", str(stored), "-o", str(stored)]),
        (link, ["query", "--jsonl", str(stored), "-o", str(link)]),
        (page, ["query", str(page), "-o", str(page), "--output-format", "jsonl"]),
        (page, ["calibrate", str(page), "--plot", str(page), "--scheme", "zh-jieba-v1"]),
    ):
        result = invoke(database_url, *arguments)
        assert (result.exit_code, result.stdout, result.stderr.count("\n")) == (1, "", 1), arguments
        assert result.stderr.startswith(f"Error: the output {output} is the input "), result.stderr
    assert {path: path.read_bytes() for path in (stored, page)} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["link.jsonl", "page.txt", "stored.jsonl"]
    # An output inside an input directory: a later run read the answers as a query.
    inside = invoke(database_url, "query", str(tmp_path), "-o", str(tmp_path / "q.jsonl"), "--output-format", "jsonl")
    assert (inside.exit_code, inside.stdout) == (1, ""), inside.stderr
    assert "inside the input directory" in inside.stderr and not (tmp_path / "q.jsonl").exists()


def test_an_output_that_is_the_file_redirected_to_standard_input_is_refused(database_url, tmp_path):
    # dedup - -o in.jsonl < in.jsonl replaced the input with the 50 records it kept, exit 0.
    import os
    import subprocess
    import sys

    stored = write(wiki(), tmp_path / "stored.jsonl")
    assert invoke(database_url, "add", "--jsonl", str(stored), "--key-field", "id", "-q").exit_code == 0
    assert invoke(database_url, "recluster", "-k", "3", "-q").exit_code == 0
    before = stored.read_bytes()
    env = dict(os.environ, SIMHASH_STORE_URL=database_url.render_as_string(hide_password=False))
    for arguments in (
        ["dedup", "-", "--format", "jsonl", "--key-field", "id", "-k", "3", "-o", str(stored)],
        ["query", "--jsonl", "-", "--key-field", "id", "-o", str(stored)],
    ):
        with open(stored, "rb") as standard_input:
            result = subprocess.run(
                [sys.executable, "-m", "simhash_store.cli", *arguments],
                stdin=standard_input,
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
        assert (result.returncode, result.stdout, result.stderr.count("\n")) == (1, "", 1), result.stderr
        assert result.stderr == f"Error: the output {stored} is the input standard input: write to another file\n"
        assert stored.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["stored.jsonl"]


def test_query_key_finds_what_is_near_a_stored_document(database_url, tmp_path):
    records = wiki() + [{"id": "edited", "text": wiki()[2]["text"][:-5]}]
    invoke(database_url, "add", "--jsonl", str(write(records, tmp_path / "s.jsonl")), "--key-field", "id", "-q")
    result = invoke(database_url, "query", "--key", wiki()[2]["id"], "--json")
    assert result.exit_code == 0, result.output
    [answer] = [json.loads(line) for line in result.stdout.splitlines()]
    assert answer["query"] == wiki()[2]["id"]
    assert [m["key"] for m in answer["matches"]] == ["edited"]  # near it, not itself
    missing = invoke(database_url, "query", "--key", "no-such-key", "--json")
    assert missing.exit_code == 1 and "failed: no-such-key: not stored" in missing.output


def test_add_json_gives_one_line_per_skipped_or_failed_record(database_url, tmp_path):
    invoke(database_url, "add", "--jsonl", str(write(wiki()[:2], tmp_path / "first.jsonl")), "--key-field", "id", "-q")
    batch = [
        {"id": "again", "text": wiki()[0]["text"]},  # a near-duplicate of a stored document
        {"id": "new", "text": wiki()[5]["text"]},
        {"id": "", "text": "没有键"},
        {"id": "empty", "text": ""},
    ]
    path = tmp_path / "batch.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in batch) + "{broken\n", encoding="utf-8")
    result = invoke(database_url, "add", "--jsonl", str(path), "--key-field", "id", "--skip-near-duplicates", "--json")
    assert result.exit_code == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    by_status = {}
    for line in lines:
        by_status.setdefault(line["status"], []).append(line)
    [near] = by_status["near-duplicate"]
    assert near["key"] == "again" and near["matched"] == {"key": wiki()[0]["id"], "distance": 0}
    assert sorted(line["input"] for line in by_status["failed"]) == [f"{path}:3", f"{path}:5"]
    assert [line["input"] for line in by_status["skipped"]] == [f"{path}:4"]
    [summary] = by_status["summary"]
    assert summary["added"] == 1 and summary["failed"] == 2


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_sigterm_or_ctrl_c_during_query_output_removes_its_files_and_keeps_the_previous_output(
    database_url, tmp_path, how
):
    # SIGTERM killed `query -o OUT` on the spot: its `.OUT.xxxxxxxx.partial` and `.OUT.lock` stayed
    # until the next run for that output (and Ctrl-C ended it without a word).
    import signal
    import subprocess
    import time

    from test_reliability import cli, finish, url_text

    with Store(database_url) as store:
        store.init()
    out = tmp_path / "q.jsonl"
    out.write_text("the previous output\n", encoding="utf-8")
    before = set(tmp_path.iterdir())
    # Records come from a pipe kept open: the run is surely under way, its output claimed, when signalled.
    process = cli("query", "--jsonl", "-", "-o", str(out), url=url_text(database_url), stdin=subprocess.PIPE)
    process.stdin.write(json.dumps(wiki()[0], ensure_ascii=False) + "\n")
    process.stdin.flush()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
        p.name.endswith(".partial") for p in set(tmp_path.iterdir()) - before
    ):
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    assert {p.name for p in set(tmp_path.iterdir()) - before} >= {".q.jsonl.lock"}
    process.send_signal(getattr(signal, how))
    code, _, err = finish(process, timeout=120)
    assert code == (143 if how == "SIGTERM" else 130), err
    assert "Traceback" not in err and err.startswith("Interrupted:") and err.count("\n") == 1, (code, err)
    assert set(tmp_path.iterdir()) == before  # its temporary and lock files gone
    assert out.read_text(encoding="utf-8") == "the previous output\n"


def test_parquet_dates_and_times_named_as_metadata_are_stored_as_text(database_url, tmp_path):
    # jsonb has no type for a date: every row of a Parquet file naming a timestamp or date column in
    # --metadata-field failed ("metadata value at published_at is a datetime, which JSON cannot hold"),
    # nothing stored (hostile/parquet_keep_types.py).
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    records = wiki()[:3]
    utc = datetime.timezone.utc
    path = tmp_path / "in.parquet"
    pq.write_table(
        pa.table(
            {
                "id": [r["id"] for r in records],
                "text": [r["text"] for r in records],
                "published_at": pa.array(
                    [datetime.datetime(2024, 6, n + 1, 8, tzinfo=utc) for n in range(3)], pa.timestamp("us", tz="UTC")
                ),
                "day": pa.array([datetime.date(2024, 6, n + 1) for n in range(3)]),
                "seen": pa.array([[datetime.datetime(2024, 7, 1)], [], None], pa.list_(pa.timestamp("ms"))),
            }
        ),
        path,
    )
    fields = ["--metadata-field", "published_at", "--metadata-field", "day", "--metadata-field", "seen"]
    result = invoke(database_url, "add", str(path), "--key-field", "id", *fields)
    assert result.exit_code == 0 and "added 3" in result.output, result.output
    with Store(database_url) as store:
        assert store.get(records[0]["id"]).metadata == {
            "published_at": "2024-06-01 08:00:00+00:00",
            "day": "2024-06-01",
            "seen": ["2024-07-01 00:00:00"],
        }
    again = invoke(database_url, "add", str(path), "--key-field", "id", *fields)
    assert "unchanged 3" in again.output, again.output
