"""simhash-store dedup and simhash_store.dedup: kept records, pass-through fields, annotations, reruns."""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simhash_store import dedup, fingerprint, hamming
from simhash_store.cli import app
from simhash_store.dedup import ClusterDistanceError
from simhash_store.store import NewDocument, Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "corpus"


def _texts() -> dict[str, str]:
    return {path.stem: path.read_text(encoding="utf-8") for path in sorted(EXAMPLES.glob("*.txt"))}


def _copy(text: str) -> str:
    """A light variant: a footer and one character changed."""
    return text.replace("。", "，", 1) + "\n（责任编辑：王晓明）"


def _records() -> list[dict]:
    texts = _texts()
    records = []
    for n, (name, text) in enumerate(texts.items()):
        records.append({"id": name, "text": text, "rank": n, "score": n + 0.5, "tags": [name[:3]], "extra": None})
    for name, text in list(texts.items())[:3]:
        records.append(
            {"id": f"{name}-copy", "text": _copy(text), "rank": 99, "score": 0.25, "tags": [], "extra": {"a": 1}}
        )
    return records


def _write_jsonl(path: Path, records: list[dict], bad_lines: tuple[str, ...] = ()) -> None:
    lines = [json.dumps(r, ensure_ascii=False) for r in records] + list(bad_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _run(url, *args: str, input: str | None = None):
    return CliRunner().invoke(app, ["--db", url.render_as_string(hide_password=False), *args], input=input)


def test_examples_copies_are_near_duplicates():
    # The test below relies on this: each copy is within the default distance of its original.
    for name, text in list(_texts().items())[:3]:
        assert hamming(fingerprint(text), fingerprint(_copy(text))) <= 11, name


def test_dedup_keeps_originals_and_passes_every_field_through(database_url, tmp_path):
    records = _records()
    source = tmp_path / "in.jsonl"
    _write_jsonl(source, records, bad_lines=("{not json", json.dumps({"id": "no-text"})))
    result = _run(database_url, "dedup", str(source), "--key-field", "id", "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 1  # bad records: reported, the rest processed
    assert f"failed: {source}:9: bad record" in result.stderr
    assert f"failed: {source}:10: no 'text' field" in result.stderr
    assert "kept 5, duplicates 3, bad records 2" in result.stderr
    written = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert written == [json.dumps(r, ensure_ascii=False) for r in records[:5]]  # order and types as given
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]  # no temporary or lock file left


def test_annotations_name_the_representative_and_reruns_are_byte_identical(database_url, tmp_path):
    source = tmp_path / "in.jsonl"
    _write_jsonl(source, _records())
    args = ["dedup", str(source), "--key-field", "id", "--annotate"]
    first = _run(database_url, *args, "-o", str(tmp_path / "first.jsonl"))
    assert first.exit_code == 0, first.output
    rows = [json.loads(line) for line in (tmp_path / "first.jsonl").read_text(encoding="utf-8").splitlines()]
    by_id = {row["id"]: row for row in rows}
    for name in list(_texts())[:3]:
        copy, original = by_id[f"{name}-copy"], by_id[name]
        assert copy["duplicate_of"] == name and copy["cluster"] == original["cluster"]
        assert copy["distance"] == hamming(int(copy["simhash"], 16), int(original["simhash"], 16)) > 0
        assert original["duplicate_of"] is None and original["distance"] == 0
        assert original["simhash"] == f"{fingerprint(original['text']):016x}"
    assert list(rows[0]) == [
        "id",
        "text",
        "rank",
        "score",
        "tags",
        "extra",
        "simhash",
        "cluster",
        "duplicate_of",
        "distance",
        "not_compared",
    ]
    again = _run(database_url, *args, "-o", str(tmp_path / "again.jsonl"))
    assert again.exit_code == 0
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "first.jsonl").read_bytes()


def test_an_interrupted_run_finished_by_a_rerun_gives_the_uninterrupted_output(pg_server, tmp_path):
    records = _records()
    source, half = tmp_path / "in.jsonl", tmp_path / "half.jsonl"
    _write_jsonl(source, records)
    _write_jsonl(half, records[:6])  # what a run killed in its third batch had stored (batches of 3)
    outputs = []
    for interrupted in (False, True):
        name = pg_server.create_database()
        try:
            url = pg_server.url(name)
            if interrupted:
                _run(
                    url,
                    "dedup",
                    str(half),
                    "--key-field",
                    "id",
                    "--batch-size",
                    "3",
                    "-o",
                    str(tmp_path / "lost.jsonl"),
                )
            out = tmp_path / f"out-{interrupted}.jsonl"
            args = ["dedup", str(source), "--key-field", "id", "--annotate", "--batch-size", "3", "-o", str(out)]
            assert _run(url, *args).exit_code == 0
            outputs.append(out.read_bytes())
        finally:
            pg_server.drop_database(name)
    assert outputs[0] == outputs[1]


def test_a_second_batch_is_cleaned_against_the_first(database_url, tmp_path):
    texts = _texts()
    names = list(texts)
    _write_jsonl(tmp_path / "one.jsonl", [{"key": n, "text": texts[n]} for n in names[:3]])
    _write_jsonl(tmp_path / "two.jsonl", [{"key": f"{n}-again", "text": _copy(texts[n])} for n in names])
    assert _run(database_url, "dedup", str(tmp_path / "one.jsonl"), "-o", str(tmp_path / "o1.jsonl")).exit_code == 0
    second = _run(database_url, "dedup", str(tmp_path / "two.jsonl"), "-o", "-", "-q")
    assert second.exit_code == 0
    assert [json.loads(line)["key"] for line in second.stdout.splitlines()] == [f"{n}-again" for n in names[3:]]


def test_csv_and_stdin(database_url, tmp_path):
    texts = {name: text.replace("\n", " ") for name, text in _texts().items()}  # a CSV record is one line
    name = next(iter(texts))
    rows = [("k1", texts[name], "7"), ("k2", _copy(texts[name]).replace("\n", " "), "8")]
    import csv

    with open(tmp_path / "in.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["key", "text", "note"])
        writer.writerows(rows)
    result = _run(database_url, "dedup", str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv"), "--annotate")
    assert result.exit_code == 0, result.output
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        out = list(csv.reader(handle))
    assert out[0] == ["key", "text", "note", "simhash", "cluster", "duplicate_of", "distance", "not_compared"]
    assert [row[0] for row in out[1:]] == ["k1", "k2"] and out[2][5] == "k1" and out[1][5] == ""
    piped = _run(
        database_url,
        "dedup",
        "-",
        "-q",
        input=json.dumps({"key": "k3", "text": texts[name]}, ensure_ascii=False) + "\n",
    )
    assert piped.exit_code == 0 and piped.stdout == ""  # k3 duplicates k1


def test_csv_with_multiline_texts_round_trips_through_dedup(database_url, tmp_path):
    import csv

    records = [{"key": r["id"], "text": r["text"], "rank": str(r["rank"])} for r in _records()]
    assert all("\n" in r["text"] for r in records)  # paragraphs: line breaks inside quoted fields
    with open(tmp_path / "in.csv", "w", newline="", encoding="utf-8") as handle:  # Excel dialect, "\r\n" rows
        writer = csv.DictWriter(handle, ["key", "text", "rank"])
        writer.writeheader()
        writer.writerows(records)
    first = _run(database_url, "dedup", str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv"))
    assert first.exit_code == 0, first.output
    assert "kept 5, duplicates 3" in first.stderr
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.DictReader(handle)) == records[:5]
    again = _run(database_url, "dedup", str(tmp_path / "out.csv"), "-o", str(tmp_path / "again.csv"))
    assert again.exit_code == 0, again.output
    assert "kept 5, duplicates 0" in again.stderr
    assert (tmp_path / "again.csv").read_bytes() == (tmp_path / "out.csv").read_bytes()


def test_parquet_in_and_out_keeps_column_types(database_url, tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    records = _records()
    table = pyarrow.Table.from_pylist([{k: r[k] for k in ("id", "text", "rank", "score", "tags")} for r in records])
    parquet.write_table(table, tmp_path / "in.parquet")
    result = _run(
        database_url,
        "dedup",
        str(tmp_path / "in.parquet"),
        "--key-field",
        "id",
        "--annotate",
        "-o",
        str(tmp_path / "out.parquet"),
    )
    assert result.exit_code == 0, result.output
    out = parquet.read_table(tmp_path / "out.parquet")
    assert out.schema.names == [
        "id",
        "text",
        "rank",
        "score",
        "tags",
        "simhash",
        "cluster",
        "duplicate_of",
        "distance",
        "not_compared",
    ]
    assert out.schema.field("rank").type == table.schema.field("rank").type
    assert out.schema.field("tags").type == table.schema.field("tags").type
    assert out.column("duplicate_of").to_pylist()[5:] == list(_texts())[:3]
    plain = _run(
        database_url, "dedup", str(tmp_path / "in.parquet"), "--key-field", "id", "-o", str(tmp_path / "kept.parquet")
    )
    assert plain.exit_code == 0
    assert parquet.read_table(tmp_path / "kept.parquet").to_pylist() == table.to_pylist()[:5]


def test_python_api_yields_records_and_verdicts(database_url):
    records = _records()
    with Store(database_url) as store:
        results = list(dedup(records, store=store, key="id"))
    assert [record for record, _ in results] == records
    verdicts = [verdict for _, verdict in results]
    assert [v.kept for v in verdicts] == [True] * 5 + [False] * 3
    assert [v.duplicate_of for v in verdicts[5:]] == list(_texts())[:3]


def test_a_store_without_clusters_or_at_another_distance_needs_a_recluster(database_url):
    with Store(database_url) as store:
        store.add([NewDocument("a", 0)])
        with pytest.raises(
            ClusterDistanceError, match="this store keeps no clusters yet: run `simhash-store recluster`"
        ):
            list(dedup([{"key": "b", "text": "你好世界"}], store=store))
        store.recluster()
        with pytest.raises(ClusterDistanceError, match="recluster -k 5"):
            list(dedup([{"key": "b", "text": "你好世界"}], store=store, max_distance=5))
        store.recluster(5)
        assert [v.kept for _, v in dedup([{"key": "b", "text": "今天天气很好"}], store=store, max_distance=5)] == [True]


def test_unreadable_formats_are_one_line(database_url, tmp_path):
    (tmp_path / "in.dat").write_text("x", encoding="utf-8")  # neither its name nor its first bytes say
    result = _run(database_url, "dedup", str(tmp_path / "in.dat"))
    assert result.exit_code == 2 and "give --format (text, jsonl, csv, tsv, parquet, html, warc)" in result.output
    result = _run(database_url, "dedup", str(tmp_path / "missing.jsonl"))
    assert (
        result.exit_code == 1
        and result.output.strip() == f"Error: cannot open {tmp_path / 'missing.jsonl'}: no such file"
    )


# ------------------------------------------------------------ explain (no database)

LAW = "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验及实际情况，制定本法。"
EDITED = LAW.replace("制定本法", "制定此法")


def test_explain_shows_the_distance_the_differing_features_and_each_bits_margins():
    result = CliRunner().invoke(app, ["explain", "--text", LAW, EDITED, "--json"])
    assert result.exit_code == 0, result.output
    explained = json.loads(result.stdout)
    a, b = fingerprint(LAW), fingerprint(EDITED)
    assert (explained["fingerprint_a"], explained["fingerprint_b"]) == (f"{a:016x}", f"{b:016x}")
    assert explained["distance"] == hamming(a, b) == len(explained["bits"]) > 0
    assert [f["feature"] for f in explained["only_a"]] == ["本法", "制定·本法"]
    assert [f["feature"] for f in explained["only_b"]] == ["此法", "制定·此法"]
    assert explained["shared"][0]["feature"] == "犯罪"
    for bit in explained["bits"]:
        # Each margin's sign is the bit in that fingerprint: the margins explain these very bits.
        assert (bit["margin_a"] > 0) == bool(a >> bit["bit"] & 1)
        assert (bit["margin_b"] > 0) == bool(b >> bit["bit"] & 1)
    margins = [min(abs(bit["margin_a"]), abs(bit["margin_b"])) for bit in explained["bits"]]
    assert margins == sorted(margins)


def test_explain_reads_files_and_reports_a_missing_one(tmp_path):
    (tmp_path / "a.txt").write_text(LAW, encoding="utf-8")
    (tmp_path / "b.txt").write_bytes(LAW.encode("gb18030"))
    result = CliRunner().invoke(app, ["explain", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])
    assert result.exit_code == 0
    assert result.stdout.startswith("distance 0 bits: near-duplicates at the default k = 11")
    missing = CliRunner().invoke(app, ["explain", str(tmp_path / "a.txt"), str(tmp_path / "nope.txt")])
    assert missing.exit_code == 1
    assert missing.output.strip() == f"Error: cannot open {tmp_path / 'nope.txt'}: No such file or directory"


def test_keep_longest_keeps_the_longest_copy_even_one_that_comes_later(database_url, tmp_path):
    texts = _texts()
    name = list(texts)[0]
    short, longer = texts[name], _copy(texts[name])
    other = list(texts.values())[1]
    _write_jsonl(
        tmp_path / "one.jsonl",
        [{"key": "short", "text": short}, {"key": "other", "text": other}, {"key": "longer", "text": longer}],
    )
    args = ["dedup", str(tmp_path / "one.jsonl"), "--keep", "longest", "--annotate"]
    first = _run(database_url, *args, "-o", str(tmp_path / "first.jsonl"))
    assert first.exit_code == 0, first.output
    rows = [json.loads(line) for line in (tmp_path / "first.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["key"], r["duplicate_of"]) for r in rows] == [("short", "longer"), ("other", None), ("longer", None)]
    assert rows[0]["cluster"] == rows[2]["cluster"]
    assert _run(database_url, *args, "-o", str(tmp_path / "again.jsonl")).exit_code == 0
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "first.jsonl").read_bytes()
    # A later batch with a still longer copy: it replaces the stored representative, in the same cluster.
    _write_jsonl(tmp_path / "two.jsonl", [{"key": "longest", "text": longer + "\n本文转载自网络。"}])
    second = _run(
        database_url, "dedup", str(tmp_path / "two.jsonl"), "--keep", "longest", "--annotate", "-o", "-", "-q"
    )
    [row] = [json.loads(line) for line in second.stdout.splitlines()]
    assert (row["duplicate_of"], row["cluster"]) == (None, rows[0]["cluster"])
    with Store(database_url) as store:
        assert store.memberships(["longer"])["longer"].representative == "longest"
    assert _run(database_url, "dedup", "-", "--keep", "longest").exit_code == 2


def test_keep_longest_on_a_store_kept_first_is_refused_until_reclustered(database_url, tmp_path):
    # Promotion is part of each batch's transaction now, so no run can leave a batch half promoted;
    # a store clustered by another policy says how to change it instead of mixing two.
    texts = _texts()
    name = list(texts)[0]
    _write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"key": "short", "text": texts[name]},
            {"key": "other", "text": list(texts.values())[1]},
            {"key": "longer", "text": _copy(texts[name])},
        ],
    )
    assert _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "first.jsonl")).exit_code == 0
    refused = _run(
        database_url, "dedup", str(tmp_path / "in.jsonl"), "--keep", "longest", "-o", str(tmp_path / "x.jsonl")
    )
    assert refused.exit_code == 1 and not (tmp_path / "x.jsonl").exists()
    assert (
        "the store's clusters keep first, not longest: run `simhash-store recluster --keep longest` first"
        in refused.output
    )
    assert _run(database_url, "recluster", "--keep", "longest").exit_code == 0
    again = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "--annotate", "-o", str(tmp_path / "again.jsonl"))
    assert again.exit_code == 0, again.output
    rows = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["key"], r["duplicate_of"]) for r in rows] == [("short", "longer"), ("other", None), ("longer", None)]


# ------------------------------------------------------------ calibrate


def test_calibrate_reports_recall_and_false_matches_per_k_and_records_its_advice(database_url, tmp_path):
    texts = _texts()
    _write_jsonl(tmp_path / "docs.jsonl", [{"text": t} for t in texts.values()])
    args = [
        "calibrate",
        "--jsonl",
        str(tmp_path / "docs.jsonl"),
        "--json",
        "--apply",
        "--plot",
        str(tmp_path / "k.png"),
    ]
    result = _run(database_url, *args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = report["rows"]
    assert report["documents"] == len(texts) and report["pairs"] == len(texts) * (len(texts) - 1) // 2
    assert [row["k"] for row in rows] == list(range(21))
    for column in ("light_recall", "heavy_recall", "false_matches"):
        values = [row[column] for row in rows]
        assert values == sorted(values)  # more bits allowed never finds less
    assert rows[-1]["light_recall"] == 1.0 and rows[0]["false_matches"] == 0  # these texts are all different
    assert (tmp_path / "k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Store(database_url) as store, store.engine.connect() as connection:
        from sqlalchemy import text

        recorded = connection.execute(text("SELECT recommended_max_distance FROM simhash.store_info")).scalar()
    assert recorded == report["recommended"]
    # The same seed gives the same figures; the store keeps no text, so without inputs it says so.
    assert json.loads(_run(database_url, *args[:4], "--json").stdout)["rows"] == rows
    bare = _run(database_url, "calibrate")
    assert bare.exit_code == 1 and "the store keeps fingerprints, not texts" in bare.output


def test_calibrate_of_stored_keys_skips_keys_naming_a_fifo_or_a_device(tmp_path):
    # Without PATHS, calibrate reads the files stored keys name, and anyone who may add chooses a key:
    # one naming a FIFO waited for a writer for ever, /dev/zero was read until memory ran out (12 GB).
    import subprocess
    import sys

    os.mkfifo(tmp_path / "pipe")
    texts = list(_texts().values())
    for name, text in (("a.txt", texts[0]), ("b.txt", texts[1])):
        (tmp_path / name).write_text(text, encoding="utf-8")
    keys = [str(tmp_path / "pipe"), "/dev/zero", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    code = (
        "import sys\n"
        "from simhash_store.calibration_texts import texts_of_keys\n"
        "found = texts_of_keys(sys.argv[1:])\n"
        "print([key for key, _ in found.texts], found.skipped)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, *keys], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{keys[2:]!r} 2\n"


def test_calibrate_plot_replaces_a_link_at_its_name_and_never_writes_through_it(database_url, tmp_path):
    pytest.importorskip("matplotlib")
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me", encoding="utf-8")
    (tmp_path / "k.png").symlink_to(victim)
    _write_jsonl(tmp_path / "docs.jsonl", [{"text": t} for t in _texts().values()])
    result = _run(
        database_url, "calibrate", "--jsonl", str(tmp_path / "docs.jsonl"), "--json", "--plot", str(tmp_path / "k.png")
    )
    assert result.exit_code == 0, result.output
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not (tmp_path / "k.png").is_symlink() and (tmp_path / "k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_k_recorded_by_calibrate_is_the_default_of_query_and_dedup_and_stats_shows_it(database_url, tmp_path):
    import re

    records = _records()  # three copies, 4, 4 and 2 bits from their originals
    _write_jsonl(tmp_path / "in.jsonl", records)
    with Store(database_url) as store:
        store.record_recommended_distance(3)  # what calibrate --apply does
    info = json.loads(_run(database_url, "stats", "--json").stdout)
    assert (info["recommended_max_distance"], info["cluster_max_distance"]) == (3, None)
    assert re.search(r"recommended max distance +3 \(calibrate --apply\)", _run(database_url, "stats").stdout)
    # dedup into a store without clusters clusters at the recorded k, and says so.
    result = _run(
        database_url, "dedup", str(tmp_path / "in.jsonl"), "--key-field", "id", "-o", str(tmp_path / "out.jsonl")
    )
    assert result.exit_code == 0, result.output
    assert "kept 7, duplicates 1, bad records 0; k = 3, recommended by calibrate --apply" in result.stderr
    assert json.loads(_run(database_url, "stats", "--json").stdout)["cluster_max_distance"] == 3
    # query: the copy 4 bits from its original finds only itself at the recorded k, both at -k 11.
    name = list(_texts())[0]
    (tmp_path / "copy.txt").write_text(_copy(_texts()[name]), encoding="utf-8")
    found = _run(database_url, "query", str(tmp_path / "copy.txt"), "--json")
    assert found.exit_code == 0 and "k = 3, recommended by calibrate --apply (-k overrides)" in found.stderr
    assert [m["key"] for m in json.loads(found.stdout)["matches"]] == [f"{name}-copy"]
    wider = _run(database_url, "query", str(tmp_path / "copy.txt"), "--json", "-k", "11")
    assert [m["key"] for m in json.loads(wider.stdout)["matches"]] == [f"{name}-copy", name]
    assert "recommended" not in wider.stderr
    # A later recommendation does not re-cluster the store: dedup goes on at its distance, and says how to change it.
    with Store(database_url) as store:
        store.record_recommended_distance(8)
    again = _run(
        database_url, "dedup", str(tmp_path / "in.jsonl"), "--key-field", "id", "-o", str(tmp_path / "again.jsonl")
    )
    assert "k = 3, the store's cluster distance (calibrate --apply recommends 8: " in again.stderr
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "out.jsonl").read_bytes()
    for command in ("query", "dedup"):
        assert "calibrate --apply" in " ".join(_run(database_url, command, "--help").stdout.split())


def test_csv_output_has_a_column_for_every_field_of_every_record(database_url, tmp_path):
    import csv

    texts = list(_texts().values())
    records = [
        {"key": "a", "text": texts[0]},
        {"text": texts[1], "key": "b", "more": 1, "tags": ["x"]},
        {"key": "c", "text": texts[2], "more": "three"},
    ]
    _write_jsonl(tmp_path / "in.jsonl", records)
    result = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.csv"))
    assert result.exit_code == 0, result.output
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["key", "text", "more", "tags"]  # every record's fields, in first-seen order
    assert rows[1:] == [["a", texts[0], "", ""], ["b", texts[1], "1", '["x"]'], ["c", texts[2], "three", ""]]
    again = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.tsv"))
    assert again.exit_code == 0, again.output
    with open(tmp_path / "out.tsv", newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle, delimiter="\t")) == rows  # a .tsv output is tab-separated
    # An integer of 5,000 digits is read as a count of digits only: that record fails, not the run,
    # in JSONL and in CSV alike (CSV wrote the words "an integer of 5,000 digits" in its cell).
    line = '{"key": "h", "text": %s, "n": %s}\n' % (json.dumps(texts[3], ensure_ascii=False), "1" * 5000)
    (tmp_path / "huge.jsonl").write_text(line + json.dumps({"key": "i", "text": texts[4]}) + "\n", encoding="utf-8")
    for name in ("huge-out.jsonl", "huge-out.csv"):
        huge = _run(database_url, "dedup", str(tmp_path / "huge.jsonl"), "-o", str(tmp_path / name))
        assert huge.exit_code == 1 and "huge.jsonl:1: holds an integer of 5,000 digits" in huge.output, (
            name,
            huge.output,
        )
        assert "5,000" not in (tmp_path / name).read_text(encoding="utf-8")
    assert [json.loads(r)["key"] for r in (tmp_path / "huge-out.jsonl").read_text(encoding="utf-8").splitlines()] == [
        "i"
    ]


def test_a_text_with_a_lone_surrogate_costs_its_record_in_every_output_format(database_url, tmp_path):
    # JSON's "\\ud800" escape gives a string UTF-8 cannot hold: it was stored, then the writer died
    # with a UnicodeEncodeError traceback and no output at all.
    texts = list(_texts().values())
    bad = json.dumps({"key": "s", "text": texts[0][:50] + "\ud800" + texts[0][50:]})  # ensure_ascii: the escape
    (tmp_path / "in.jsonl").write_text(bad + "\n" + json.dumps({"key": "t", "text": texts[1]}) + "\n", encoding="utf-8")
    formats = ["jsonl", "csv"] + (["parquet"] if importlib.util.find_spec("pyarrow") else [])
    for form in formats:
        result = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / f"out.{form}"))
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert f"failed: {tmp_path / 'in.jsonl'}:1: holds a lone surrogate" in result.stderr
        assert (tmp_path / f"out.{form}").stat().st_size > 0
    assert [json.loads(line)["key"] for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()] == [
        "t"
    ]


def _heterogeneous(texts: list[str]) -> list[dict]:
    """Records as a real crawl gives them: fields missing from the first, in other orders, changing type."""
    return [
        {"key": "a", "text": texts[0], "n": 1, "m": 1, "meta": {"site": "x"}, "tags": []},
        {"text": texts[1], "key": "b", "kind": "news", "n": 2.5, "m": "two", "meta": {"lang": "zh"}, "tags": ["t"]},
        {"kind": "blog", "key": "c", "text": texts[2], "m": True, "meta": "unknown", "tags": None, "big": 2**60},
        {"key": "d", "text": texts[3], "n": None, "m": [1, {"a": 2}], "big": 0.5, "late": {"deep": [1, 2]}},
    ]


def test_parquet_output_has_every_field_of_every_record_in_a_type_that_holds_it(database_url, tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    records = _heterogeneous(list(_texts().values()))
    _write_jsonl(tmp_path / "in.jsonl", records)
    result = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.parquet"))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "kept 4, duplicates 0, bad records 0" in result.stderr
    table = parquet.read_table(tmp_path / "out.parquet")
    assert table.schema.names == ["key", "text", "n", "m", "meta", "tags", "kind", "big", "late"]  # first-seen order
    types = {field.name: str(field.type) for field in table.schema}
    assert types["n"] == "double"  # 1 and 2.5: integers that floats hold exactly become floats
    assert types["m"] == types["meta"] == types["big"] == "string"  # mixed kinds (2**60 is not exact as a float)
    assert types["tags"] == "list<element: string>" and types["late"] == "struct<deep: list<element: int64>>"
    rows = table.to_pylist()
    assert [row["key"] for row in rows] == ["a", "b", "c", "d"]
    assert [row["text"] for row in rows] == [r["text"] for r in records]  # written by name, whatever the order
    assert [row["kind"] for row in rows] == [None, "news", "blog", None]
    assert [row["n"] for row in rows] == [1.0, 2.5, None, None]
    # Text of a mixed field: a string as it was, anything else as its JSON text, so nothing is lost.
    assert [row["m"] for row in rows] == ["1", "two", "true", '[1, {"a": 2}]']
    assert [row["meta"] for row in rows] == ['{"site": "x"}', '{"lang": "zh"}', "unknown", None]
    assert [row["big"] for row in rows] == [None, None, str(2**60), "0.5"]
    assert [row["tags"] for row in rows] == [[], ["t"], None, None]
    assert rows[3]["late"] == {"deep": [1, 2]}


def test_parquet_output_of_parquet_inputs_keeps_their_types_and_adds_the_fields_of_later_inputs(database_url, tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    texts = list(_texts().values())
    first = pyarrow.table(
        {
            "key": ["a", "b"],
            "text": texts[:2],
            "rank": pyarrow.array([1, 2], pyarrow.int32()),
            "level": pyarrow.array([1, 2], pyarrow.int8()),
            "day": pyarrow.array([0, 1], pyarrow.date32()),
        }
    )
    parquet.write_table(first, tmp_path / "one.parquet")
    _write_jsonl(tmp_path / "two.jsonl", [{"key": "c", "text": texts[2], "rank": 3.5, "level": 300, "source": "feed"}])
    result = _run(
        database_url,
        "dedup",
        str(tmp_path / "one.parquet"),
        str(tmp_path / "two.jsonl"),
        "-o",
        str(tmp_path / "out.parquet"),
    )
    assert result.exit_code == 0, result.output
    table = parquet.read_table(tmp_path / "out.parquet")
    assert table.schema.names == ["key", "text", "rank", "level", "day", "source"]
    # 3.5 does not fit the input's int32 (pyarrow would truncate it to 3): the column holds floats;
    # 300 does not fit its int8: int64. The date column, which every value fits, keeps its type.
    assert [str(table.schema.field(name).type) for name in ("rank", "level", "day")] == [
        "double",
        "int64",
        "date32[day]",
    ]
    assert table.column("rank").to_pylist() == [1.0, 2.0, 3.5]
    assert table.column("level").to_pylist() == [1, 2, 300]
    assert table.column("day").to_pylist() == first.column("day").to_pylist() + [None]
    assert table.column("source").to_pylist() == [None, None, "feed"]


def test_an_output_reached_through_a_link_another_user_could_repoint_is_refused(tmp_path):
    # Another local user made /tmp/results a link to a directory of the victim's before the victim
    # wrote -o /tmp/results/clean.jsonl: the output went where she chose, over the victim's file of
    # that name there (where the kernel follows such links; by hand: hostile/output_dir_link.sh).
    # Staged as a link in a directory every user may write without the sticky bit, and as root, a
    # link of another user's.
    from simhash_store.errors import OutputError
    from simhash_store.formats.output import OutputFile

    mine = tmp_path / "docs"
    mine.mkdir()
    (mine / "clean.jsonl").write_text("precious notes\n", encoding="utf-8")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "results").symlink_to(mine)
    with pytest.raises(OutputError, match="may be written by other users without the sticky bit"):
        OutputFile(str(shared / "results" / "clean.jsonl"))
    assert (mine / "clean.jsonl").read_text(encoding="utf-8") == "precious notes\n"
    assert os.listdir(mine) == ["clean.jsonl"]  # no lock or temporary file made there
    shared.chmod(0o1777)  # sticky, as /tmp: only the link's owner may change it
    with OutputFile(str(shared / "results" / "new.jsonl")) as output:
        output.file.write("{}\n")
    if os.geteuid() == 0:
        os.lchown(shared / "results", 65534, 65534)
        with pytest.raises(OutputError, match="is a link of another user's"):
            OutputFile(str(shared / "results" / "clean.jsonl"))
    assert (mine / "clean.jsonl").read_text(encoding="utf-8") == "precious notes\n"


def test_a_symlink_planted_beside_the_output_is_never_followed(database_url, tmp_path):
    victim = tmp_path / "elsewhere" / "precious.txt"
    victim.parent.mkdir()
    victim.write_text("keep me", encoding="utf-8")
    shared = tmp_path / "shared"
    shared.mkdir()
    records = _records()
    _write_jsonl(tmp_path / "in.jsonl", records)
    # A neighbour plants links under the names an output's files had, or have.
    (shared / "out.jsonl.partial").symlink_to(victim)
    result = _run(
        database_url, "dedup", str(tmp_path / "in.jsonl"), "--key-field", "id", "-o", str(shared / "out.jsonl")
    )
    assert result.exit_code == 0, result.output
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert [json.loads(line)["id"] for line in (shared / "out.jsonl").read_text(encoding="utf-8").splitlines()] == [
        r["id"] for r in records[:5]
    ]
    (shared / ".again.jsonl.lock").symlink_to(victim)
    refused = _run(
        database_url, "dedup", str(tmp_path / "in.jsonl"), "--key-field", "id", "-o", str(shared / "again.jsonl")
    )
    assert refused.exit_code == 1 and "is a symbolic link" in refused.stderr and "Traceback" not in refused.output
    assert victim.read_text(encoding="utf-8") == "keep me" and not (shared / "again.jsonl").exists()


def test_an_output_written_over_a_private_file_stays_private(database_url, tmp_path):
    # The output is a new file renamed over the old one: it had the umask's 0644, so a rerun over
    # an output its owner had made 0600 let every local user read it (and its temporary file
    # while it was written); `> FILE` and cp keep a file's permissions.
    import os
    import stat

    from simhash_store.formats.output import OutputFile

    records = _records()
    _write_jsonl(tmp_path / "in.jsonl", records)
    private = tmp_path / "private.jsonl"
    private.write_text("", encoding="utf-8")
    private.chmod(0o600)
    result = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "--key-field", "id", "-o", str(private))
    assert result.exit_code == 0, result.output
    assert len(private.read_text(encoding="utf-8").splitlines()) == 5
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    for mode in (0o640, 0o604, 0o664):
        private.chmod(mode)
        with OutputFile(str(private)) as output:
            assert stat.S_IMODE(os.stat(output.temporary).st_mode) == mode  # not more while written
            output.file.write("x\n")
        assert stat.S_IMODE(private.stat().st_mode) == mode and private.read_text() == "x\n"
    fresh = tmp_path / "fresh.jsonl"  # a new output: the umask's mode, as any new file
    umask = os.umask(0o022)
    os.umask(umask)
    with OutputFile(str(fresh)) as output:
        output.file.write("y\n")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask


@pytest.mark.skipif(not hasattr(os, "setxattr"), reason="POSIX ACLs are set through Linux's extended attributes")
def test_an_output_written_over_a_file_with_an_acl_keeps_the_acl_not_just_the_mask(tmp_path):
    # With an ACL the mode's group bits are its mask: a 0600 output that one named user may read
    # (owner rw, that user r, the file's group nothing, mask r) shows as 0640. The new file kept
    # 0640 without the ACL: the file's whole group could read what one user could.
    import pwd
    import stat
    import struct

    from simhash_store.formats.output import OutputFile

    shared = tmp_path / "shared.jsonl"
    shared.write_text("old\n", encoding="utf-8")
    unset, reader = 0xFFFFFFFF, pwd.getpwnam("nobody").pw_uid
    entries = [(0x01, 6, unset), (0x02, 4, reader), (0x04, 0, unset), (0x10, 4, unset), (0x20, 0, unset)]
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)
    try:
        os.setxattr(shared, "system.posix_acl_access", acl)
    except OSError:
        pytest.skip("this file system keeps no POSIX ACLs")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
    with OutputFile(str(shared)) as output:
        output.file.write("new\n")
    assert shared.read_text(encoding="utf-8") == "new\n"
    assert "system.posix_acl_access" in os.listxattr(shared)
    assert os.getxattr(shared, "system.posix_acl_access") == acl  # the group still reads nothing
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can stage another user's file")
def test_an_output_written_over_another_users_file_gets_the_umask_not_their_permissions(tmp_path):
    # In a directory a team may write, another user put a file of theirs, mode 0666, under the
    # name an output of a user with umask 077 would take: the new output copied its 0666 (and
    # would have copied an ACL naming them), so they could read and change it.
    import stat

    from simhash_store.formats.output import OutputFile

    planted = tmp_path / "out.jsonl"
    planted.write_text("planted\n", encoding="utf-8")
    os.chown(planted, 65534, 65534)
    planted.chmod(0o666)
    mine = tmp_path / "mine.jsonl"  # and a link of theirs to a file of the user's open to all
    mine.write_text("", encoding="utf-8")
    mine.chmod(0o666)
    link = tmp_path / "linked.jsonl"
    link.symlink_to(mine)
    os.lchown(link, 65534, 65534)
    umask = os.umask(0o077)
    try:
        for target in (planted, link):
            with OutputFile(str(target)) as output:
                assert stat.S_IMODE(os.stat(output.temporary).st_mode) == 0o600
                output.file.write("secret\n")
            assert target.read_text(encoding="utf-8") == "secret\n"
            assert not target.is_symlink() and target.stat().st_uid == os.geteuid()
            assert stat.S_IMODE(target.stat().st_mode) == 0o600
    finally:
        os.umask(umask)


def test_a_lock_file_another_user_left_beside_the_output_is_refused(tmp_path):
    # In a shared folder (/tmp) a lock file of another user's at .OUT.lock was taken as it was: they
    # could remove it while a run held it, and a second run of the user's writing the same output
    # then made a lock file of its own, went ahead at once and removed the first run's temporary
    # file; the first failed at its end (`.OUT.xxxxxxxx.partial: No such file or directory`), its
    # output lost. (The other user staged as root.)
    from simhash_store.formats.output import OutputError, OutputFile

    lock = tmp_path / ".out.jsonl.lock"
    lock.write_text("", encoding="utf-8")
    os.chown(lock, 65534, 65534)
    lock.chmod(0o666)
    with pytest.raises(OutputError, match="belongs to another user"):
        OutputFile(str(tmp_path / "out.jsonl"))
    assert sorted(path.name for path in tmp_path.iterdir()) == [".out.jsonl.lock"]  # nothing made, theirs left
    lock.unlink()
    with OutputFile(str(tmp_path / "out.jsonl")) as output:  # a lock file of one's own, as before
        output.file.write("kept\n")
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == "kept\n"


def test_a_second_run_writing_the_same_output_stops_in_one_line_and_never_interleaves(database_url, tmp_path):
    import subprocess
    import time

    from test_reliability import cli, finish, url_text

    texts = list(_texts().values())
    first = [{"key": f"first-{n}", "text": text} for n, text in enumerate(texts)]
    second = [{"key": f"second-{n}", "text": text + "\n另一篇文章的结尾。" * 20} for n, text in enumerate(texts)]
    _write_jsonl(tmp_path / "second.jsonl", second)
    out = tmp_path / "out.jsonl"
    # The first run reads its records from a pipe, so it holds the output for as long as the test wants.
    running = cli("dedup", "-", "-o", str(out), "--annotate", url=url_text(database_url), stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not any(p.name != "second.jsonl" for p in tmp_path.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the first run has claimed its output
        code, _, err = finish(
            cli("dedup", str(tmp_path / "second.jsonl"), "-o", str(out), "--annotate", url=url_text(database_url))
        )
        assert code == 1, err
        assert (
            err.strip() == f"Error: another run is writing {out} (it holds {tmp_path / '.out.jsonl.lock'}): "
            "wait for it to end, or write elsewhere"
        )
        _, err = running.communicate("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in first), timeout=300)
        code = running.returncode
    finally:
        if running.poll() is None:
            running.kill()
            running.communicate()
    assert code == 0, err
    assert [json.loads(line)["key"] for line in out.read_text(encoding="utf-8").splitlines()] == [
        r["key"] for r in first
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "second.jsonl"]
    # Once it is done, the same output can be written again.
    code, _, err = finish(cli("dedup", str(tmp_path / "second.jsonl"), "-o", str(out), url=url_text(database_url)))
    assert code == 0, err


def test_repeated_field_names_refuse_a_header_and_cost_a_json_record(database_url, tmp_path):
    texts = list(_texts().values())
    text_one_line = texts[0].replace("\n", " ")
    (tmp_path / "in.tsv").write_text(f"key\ttext\tkey\na\t{text_one_line}\tb\n", encoding="utf-8")
    result = _run(database_url, "dedup", str(tmp_path / "in.tsv"), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: {tmp_path / 'in.tsv'}:1: the header names two columns 'key' (columns 1 and 3): "
        "rename one, each column needs a name of its own"
    )
    assert not (tmp_path / "out.jsonl").exists()
    from test_reliability import stored

    assert stored(database_url) == {}  # refused before any work
    lines = [
        json.dumps({"key": "a", "text": texts[0]}, ensure_ascii=False),
        '{"key": "b", "text": %s, "key": "c"}' % json.dumps(texts[1], ensure_ascii=False),
        json.dumps({"key": "d", "text": texts[2], "meta": {"x": 1}}, ensure_ascii=False)[:-1]
        + ', "meta": {"y": 1, "y": 2}}',
        json.dumps({"key": "e", "text": texts[3]}, ensure_ascii=False),
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 1
    assert (
        f"failed: {tmp_path / 'in.jsonl'}:2: bad record (the member 'key' appears twice in one object)" in result.stderr
    )
    assert (
        f"failed: {tmp_path / 'in.jsonl'}:3: bad record (the member 'y' appears twice in one object)" in result.stderr
    )
    assert "kept 2, duplicates 0, bad records 2" in result.stderr
    assert [json.loads(r)["key"] for r in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()] == [
        "a",
        "e",
    ]
    with Store(database_url) as store:
        assert sorted(m.key for m in store.query(0, 64)) == ["a", "e"]


def test_a_parquet_input_with_two_columns_of_one_name_is_refused(database_url, tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    texts = list(_texts().values())
    table = pyarrow.Table.from_arrays(
        [pyarrow.array(["a"]), pyarrow.array(texts[:1]), pyarrow.array(["b"])], names=["key", "text", "key"]
    )
    parquet.write_table(table, tmp_path / "in.parquet")
    result = _run(database_url, "dedup", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 1
    assert (
        result.stderr.strip() == f"Error: {tmp_path / 'in.parquet'}: the file has two columns named 'key': rename one"
    )
    assert not (tmp_path / "out.jsonl").exists()


def test_parquet_without_pyarrow_is_one_line(tmp_path):
    # pyarrow is an optional extra: without it, asking for Parquet is a usage error, not a traceback.
    import subprocess
    import sys

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"key": "a", "text": "北京的新闻"}, ensure_ascii=False) + "\n", encoding="utf-8")
    program = "import sys; sys.modules['pyarrow'] = None; from simhash_store.cli import main; main()"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            program,
            "--db",
            "postgresql://nobody@127.0.0.1:1/none",
            "dedup",
            str(source),
            "-o",
            str(tmp_path / "out.parquet"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "Error: Parquet needs pyarrow: pip install 'simhash-store[parquet]'"
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.slow
def test_kill_9_of_dedup_then_rerun_gives_the_uninterrupted_output(pg_server, tmp_path):
    # A real process killed with SIGKILL inside a batch's transaction, as test_reliability does for
    # add: no partial output under the real name, every stored row whole, and the rerun writes byte
    # for byte what an uninterrupted run into a fresh store writes.
    import random
    import signal
    import time

    import psycopg
    from sqlalchemy import create_engine
    from sqlalchemy import text as sql
    from test_reliability import cli, finish, url_text, write_jsonl

    import sample_text

    documents = sample_text.documents(200)
    records = []
    for n, (name, body) in enumerate(documents):  # every fourth document followed by a near-duplicate copy
        records.append({"key": f"doc/{name}", "text": body, "n": n})
        if n % 4 == 0:
            records.append({"key": f"copy/{name}", "text": _copy(body), "n": n, "copy": True})
    texts = {r["key"]: r["text"] for r in records}
    source = write_jsonl(tmp_path / "in.jsonl", records)

    def command(out: Path) -> list[str]:
        return ["dedup", str(source), "-o", str(out), "--annotate", "--batch-size", "10", "-j", "1"]

    outputs = {}
    for interrupted in (False, True):
        name = pg_server.create_database()
        url = pg_server.url(name)
        out = tmp_path / f"out-{interrupted}.jsonl"
        try:
            if interrupted:
                # Killed inside a batch's transaction, once it has taken its ids (a kill between two
                # transactions would test less): another session holds an uncommitted row with a key
                # of a batch chosen at random, so that batch's insert waits for it, and is killed then.
                batch = random.Random(20261123).randrange(1, len(records) // 20)
                plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
                blocker = psycopg.connect(plain)
                blocker.execute(
                    "INSERT INTO simhash.documents (id, key, fingerprint) VALUES (1000000000, %s, 0)",
                    (records[10 * batch + 3]["key"],),
                )
                process = cli(*command(out), url=url_text(url))
                with psycopg.connect(plain, autocommit=True) as watch:
                    deadline = time.monotonic() + 120
                    while (
                        process.poll() is None
                        and time.monotonic() < deadline
                        and not watch.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND wait_event_type = 'Lock'"
                        ).fetchone()[0]
                    ):
                        time.sleep(0.02)
                time.sleep(random.Random(batch).uniform(0, 0.1))
                assert process.poll() is None, "the run ended before it could be killed"
                process.send_signal(signal.SIGKILL)
                process.communicate()
                blocker.rollback()
                blocker.close()
                assert not out.exists()  # only a temporary file, never a truncated file under the real name
                engine = create_engine(url)
                try:
                    with engine.connect() as connection:
                        rows = connection.execute(sql("SELECT key, fingerprint, cluster FROM simhash.documents")).all()
                        # The killed transaction had taken ids: the identity sequence is past every stored id.
                        assert connection.execute(
                            sql(
                                "SELECT pg_sequence_last_value(pg_get_serial_sequence('simhash.documents', 'id')::regclass) "
                                "> (SELECT max(id) FROM simhash.documents)"
                            )
                        ).scalar()
                finally:
                    engine.dispose()
                assert len(rows) == 10 * batch
                for key, value, cluster in rows:  # every stored row whole: right fingerprint, in a cluster
                    assert value % 2**64 == fingerprint(texts[key]), key
                    assert cluster is not None, key
            code, _, err = finish(cli(*command(out), url=url_text(url)))
            assert code == 0, err
            assert [
                p.name for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}")
            ] == []  # the killed run's files removed
            outputs[interrupted] = out.read_bytes()
        finally:
            pg_server.drop_database(name)
    # Byte for byte, cluster ids included: a cluster's id is its founder's document id, and ids are
    # numbered under the cluster lock from what is committed, so a kill inside a batch's transaction
    # (which used up identity values PostgreSQL never hands out again) leaves no trace in them.
    lines = {interrupted: output.decode("utf-8").splitlines() for interrupted, output in outputs.items()}
    differing = [pair for pair in zip(lines[True], lines[False]) if pair[0] != pair[1]]
    assert outputs[True] == outputs[False], differing[:3]
    rows = [json.loads(line) for line in outputs[False].decode("utf-8").splitlines()]
    assert len(rows) == len(records)
    found = {row["key"]: row["duplicate_of"] for row in rows if row.get("copy")}
    # Every copy is removed; most as a copy of its own original, the rest of an earlier document
    # near its original (the sample's mixed documents hold its paragraphs: leader clustering).
    assert all(duplicate_of is not None for duplicate_of in found.values())
    assert sum(duplicate_of == key.replace("copy/", "doc/", 1) for key, duplicate_of in found.items()) >= 0.8 * len(
        found
    )


def test_an_output_path_that_is_a_device_fifo_or_the_input_is_refused_untouched(database_url, tmp_path):
    # The finished output is renamed over its path: run as root, `-o /dev/null` turned the
    # machine's /dev/null into a regular file; a FIFO was replaced the same way, and `-o` naming
    # the input replaced the input with the output.
    import os
    import stat

    from typer.testing import CliRunner

    from simhash_store.cli import app

    source = tmp_path / "in.jsonl"
    _write_jsonl(source, _records())
    before = source.read_bytes()
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    env = {"SIMHASH_STORE_URL": database_url.render_as_string(hide_password=False)}
    for target in (fifo, source):
        result = CliRunner().invoke(app, ["dedup", str(source), "-o", str(target)], env=env)
        assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.output
        assert result.stderr.startswith("Error: ")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert source.read_bytes() == before


def test_an_output_naming_an_open_file_of_the_process_is_refused_and_its_link_kept(database_url, tmp_path):
    # `dedup IN -o /dev/stdout --format jsonl > FILE` as root replaced the machine's /dev/stdout (a link
    # to /proc/self/fd/1) with a regular file holding the output, and FILE stayed empty: the check
    # followed the link to a regular file, the rename replaced the link. The same link in tmp_path.
    import os
    import subprocess
    import sys

    from simhash_store.errors import OutputError
    from simhash_store.formats.output import OutputFile

    source = tmp_path / "in.jsonl"
    _write_jsonl(source, _records())
    link = tmp_path / "stdout.jsonl"
    link.symlink_to("/proc/self/fd/1")
    env = dict(os.environ, SIMHASH_STORE_URL=database_url.render_as_string(hide_password=False))
    with open(tmp_path / "captured", "wb") as captured:
        result = subprocess.run(
            [sys.executable, "-m", "simhash_store.cli", "dedup", str(source), "--key-field", "id", "-o", str(link)],
            stdout=captured,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "names an open file" in result.stderr
    assert os.readlink(link) == "/proc/self/fd/1"
    for name in ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", str(link)):
        with pytest.raises(OutputError, match="names an open file"):
            OutputFile(name)
    assert os.readlink(link) == "/proc/self/fd/1"


def test_parquet_timestamps_and_dates_beyond_python_are_kept_or_cost_only_their_record(database_url, tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    texts = list(_texts().values())
    year_10000 = (datetime.date(9999, 12, 31) - datetime.date(1970, 1, 1)).days + 1
    nanoseconds = 1_700_000_000_123_456_789
    table = pyarrow.table(
        {
            "key": ["a", "b", "c", "d"],
            "text": texts[:4],
            # datetime stops at microseconds (without pandas, to_pylist raised) and at the year 9999
            "seen": pyarrow.array([nanoseconds, 1_700_000_000_000_000_000, None, 0], pyarrow.timestamp("ns")),
            "day": pyarrow.array([year_10000, 0, None, 1], pyarrow.date32()),
            # inside a list there is no text to fall back on: that record alone fails
            "marks": pyarrow.array([None, None, [nanoseconds], []], pyarrow.list_(pyarrow.timestamp("ns"))),
        }
    )
    parquet.write_table(table, tmp_path / "in.parquet")
    for output in ("out.parquet", "out.jsonl"):
        result = _run(database_url, "dedup", str(tmp_path / "in.parquet"), "-o", str(tmp_path / output))
        assert result.exit_code == 1, result.output  # one record failed
        assert "Traceback" not in result.output
        failed = [line for line in result.output.splitlines() if line.startswith("failed:")]
        assert len(failed) == 1 and "in.parquet:row 3" in failed[0] and "marks" in failed[0], result.output
    written = parquet.read_table(tmp_path / "out.parquet")
    assert written.column("key").to_pylist() == ["a", "b", "d"]
    # nanoseconds kept, in their type; a date past 9999 as its text (Arrow cannot parse it back)
    assert written.schema.field("seen").type == pyarrow.timestamp("ns")
    assert written.column("seen").cast(pyarrow.int64()).to_pylist() == [nanoseconds, 1_700_000_000_000_000_000, 0]
    assert written.column("day").to_pylist() == ["10000-01-01", "1970-01-01", "1970-01-02"]
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["key"], r["seen"], r["day"]) for r in lines] == [
        ("a", "2023-11-14 22:13:20.123456789", "10000-01-01"),
        ("b", "2023-11-14 22:13:20.000000000", "1970-01-01"),
        ("d", "1970-01-01 00:00:00.000000000", "1970-01-02"),
    ]


def _strict_json(line: str):
    """A reader as strict as JavaScript's JSON.parse: NaN and Infinity are not JSON."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(line, parse_constant=refuse)


def test_nan_and_infinities_are_written_as_null_in_every_json_output(database_url, tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    from simhash_store.terminal import json_line

    texts = list(_texts().values())
    # Python's JSON reader takes NaN and Infinity; a Parquet double holds them too.
    (tmp_path / "in.jsonl").write_text(
        f'{{"key": "a", "text": {json.dumps(texts[0])}, "score": NaN, "m": {{"r": [Infinity, -Infinity, 1.5]}}}}\n',
        encoding="utf-8",
    )
    parquet.write_table(
        pyarrow.table({"key": ["b"], "text": [texts[1]], "score": pyarrow.array([float("inf")], pyarrow.float64())}),
        tmp_path / "in.parquet",
    )
    for option in ("--annotate", "--annotate"):  # the second run: every record is now a stored copy
        result = _run(
            database_url,
            "dedup",
            str(tmp_path / "in.jsonl"),
            str(tmp_path / "in.parquet"),
            option,
            "-o",
            str(tmp_path / "out.jsonl"),
        )
        assert result.exit_code == 0, result.output
        records = [_strict_json(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
        assert [(r["key"], r["score"]) for r in records] == [("a", None), ("b", None)]
        assert records[0]["m"] == {"r": [None, None, 1.5]}
    # CSV cells holding JSON (a nested field) follow the same rule
    result = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "--annotate", "-o", str(tmp_path / "out.csv"))
    assert result.exit_code == 0, result.output
    assert '"{""r"": [null, null, 1.5]}"' in (tmp_path / "out.csv").read_text(encoding="utf-8")
    # --json of query, dups, stats, explain and calibrate go through one function
    assert _strict_json(json_line({"precision": float("nan"), "rows": [float("-inf"), 2]})) == {
        "precision": None,
        "rows": [None, 2],
    }


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_sigterm_or_ctrl_c_during_dedup_removes_its_own_files_and_only_those(database_url, tmp_path, how):
    import signal
    import subprocess
    import time

    from test_reliability import cli, finish, url_text

    out = tmp_path / "out.jsonl"
    out.write_text("the previous output\n", encoding="utf-8")
    # A neighbour's file under a name like the run's temporary files: not the run's to remove.
    planted = tmp_path / ".out.jsonl.0123abcd.partial.theirs"
    planted.write_text("theirs", encoding="utf-8")
    before = set(tmp_path.iterdir())
    # Records come from a pipe kept open: the run is surely under way, between two reads, when signalled.
    process = cli("dedup", "-", "-o", str(out), "--format", "jsonl", url=url_text(database_url), stdin=subprocess.PIPE)
    text = next(iter(_texts().values()))
    process.stdin.write(json.dumps({"key": "a", "text": text}, ensure_ascii=False) + "\n")
    process.stdin.flush()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
        p.name.endswith(".partial") for p in set(tmp_path.iterdir()) - before
    ):
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    made = set(tmp_path.iterdir()) - before
    assert {p.name for p in made} >= {".out.jsonl.lock"}, made  # the run's own lock and temporary file
    process.send_signal(getattr(signal, how))
    code, _, err = finish(process, timeout=120)
    assert code == (143 if how == "SIGTERM" else 130), err
    assert "Traceback" not in err and err.startswith("Interrupted:"), err
    assert set(tmp_path.iterdir()) == before  # its temporary and lock files gone, nothing else touched
    assert out.read_text(encoding="utf-8") == "the previous output\n"
    assert planted.read_text(encoding="utf-8") == "theirs"


def test_a_csv_field_longer_than_the_csv_modules_limit_is_read_whole(database_url, tmp_path):
    import csv

    # Python's csv refuses fields over 128 KiB: a long law in one cell cost its record.
    long_text = "".join(_texts().values()) * 100
    assert len(long_text) > csv.field_size_limit()
    limit = csv.field_size_limit()
    source = tmp_path / "in.csv"
    with source.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([["key", "text"], ["long", long_text]])
    result = _run(database_url, "dedup", str(source), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 0, result.output
    (written,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert written == {"key": "long", "text": long_text}
    assert csv.field_size_limit() == limit  # the process's setting is left as it was


def test_a_compressed_parquet_file_is_read_in_batches_bounded_by_its_uncompressed_size(tmp_path):
    # 100 rows of 1 MB of text compress to a few hundred KB: batches of 4,096 rows would have
    # held all of it at once (a 38 KB file of 245 MB took 1.2 GB); a batch now holds 64 MiB.
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    from simhash_store import formats

    rows = 100
    texts = [("北京" * 350_000)[:350_000] + str(n) for n in range(rows)]
    parquet.write_table(
        pyarrow.table({"key": [f"k{n}" for n in range(rows)], "text": texts}),
        tmp_path / "wide.parquet",
        compression="zstd",
        use_dictionary=False,
    )
    assert (tmp_path / "wide.parquet").stat().st_size < 20_000_000
    metadata = parquet.ParquetFile(tmp_path / "wide.parquet").metadata
    per_row = metadata.row_group(0).total_byte_size / metadata.row_group(0).num_rows
    batch = formats.parquet._parquet_batch_rows(metadata)
    assert batch * per_row <= 64 << 20 < (batch + 1) * per_row
    read = list(formats.read_records(str(tmp_path / "wide.parquet"), "parquet"))
    assert [record["key"] for _, record in read] == [f"k{n}" for n in range(rows)]
    assert read[-1][1]["text"] == texts[-1]


def test_an_input_that_is_a_fifo_or_device_is_named_as_such(database_url, tmp_path):
    import os

    os.mkfifo(tmp_path / "in.jsonl")
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    for name in ("in.jsonl", "zero.jsonl"):
        result = _run(database_url, "dedup", str(tmp_path / name), "-o", str(tmp_path / "out.jsonl"))
        assert result.exit_code == 1
        assert result.output.strip() == f"Error: cannot open {tmp_path / name}: not a regular file (a FIFO or device)"


def test_a_record_that_would_make_parquet_columns_beyond_the_bound_costs_only_itself(database_url, tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    from simhash_store.formats.parquet import MAX_PARQUET_COLUMNS

    texts = list(_texts().values())
    wide = {"key": "wide", "text": texts[0], **{f"c{n}": n for n in range(MAX_PARQUET_COLUMNS)}}
    _write_jsonl(tmp_path / "in.jsonl", [{"key": "plain", "text": texts[1], "n": 1}, wide])
    result = _run(database_url, "dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.parquet"))
    assert result.exit_code == 1
    (failed,) = [line for line in result.output.splitlines() if line.startswith("failed:")]
    assert "in.jsonl:2" in failed and f"more than {MAX_PARQUET_COLUMNS:,}" in failed
    table = parquet.read_table(tmp_path / "out.parquet")
    assert table.column_names == ["key", "text", "n"] and table.column("key").to_pylist() == ["plain"]


def _parquet_damaged_in_its_second_row_group(path: Path, rows: int) -> None:
    """Two row groups of ``rows`` rows each; the second's text column page overwritten (metadata intact)."""
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    keys = [f"p{i}" for i in range(2 * rows)]
    texts = [f"第{i}条记录，" + "".join(f"词{i}_{j} " for j in range(30)) for i in range(2 * rows)]
    parquet.write_table(pyarrow.table({"id": keys, "text": texts}), path, row_group_size=rows, compression="none")
    start = parquet.ParquetFile(path).metadata.row_group(1).column(1).data_page_offset
    data = bytearray(path.read_bytes())
    data[start + 20 : start + 400] = b"\xff" * 380
    path.write_bytes(bytes(data))


def test_a_parquet_file_damaged_in_a_later_row_group_costs_only_the_rest_of_that_file(database_url, tmp_path):
    # An OSError traceback out of the batches, exit 1: the batch in flight lost (2,000 of 5,000 good
    # rows stored), or with a good file before it, neither stored; dedup's line named its output.
    pytest.importorskip("pyarrow")
    damaged = tmp_path / "damaged.parquet"
    _parquet_damaged_in_its_second_row_group(damaged, 2500)
    good = tmp_path / "good.jsonl"
    _write_jsonl(good, _records())
    after = tmp_path / "after.jsonl"
    _write_jsonl(after, [{"id": "after", "text": "此后的另一个文件，照常读入。" * 5}])
    written = tmp_path / "out.jsonl"
    deduped = _run(
        database_url,
        "dedup",
        str(good),
        str(damaged),
        str(after),
        "-o",
        str(written),
        "--annotate",
        "--key-field",
        "id",
    )
    assert deduped.exit_code == 1, deduped.output
    failed = [line for line in deduped.stderr.splitlines() if line.startswith("failed:")]
    assert failed == [
        f"failed: {damaged}: unreadable (after row 2,500: Couldn't deserialize thrift: "
        "Variable-length int over 10 bytes. Deserializing page header failed.)"
    ]  # the input named, in one line
    with Store(database_url) as store:
        assert store.count() == len(_records()) + 1 + 2500  # the two files, and every row before the damage
    added = _run(database_url, "add", str(good), str(damaged), str(after), "--key-field", "id")
    assert added.exit_code == 1, added.output
    assert [line for line in added.stderr.splitlines() if line.startswith("failed:")] == failed
    keys = [json.loads(line)["id"] for line in written.read_text().splitlines()]
    assert len(keys) == len(_records()) + 2500 + 1 and keys[-1] == "after"


def test_a_parquet_batch_too_large_for_memory_fails_its_file_in_one_line(database_url, tmp_path):
    # Under `ulimit -v`, a dictionary entry of 1 MB referenced by every row (a 22 KB file) ended the
    # run with a MemoryError traceback out of the conversion to Python values, nothing stored.
    import resource
    import subprocess
    import sys

    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    big = " ".join(f"w{i % 5000}" for i in range(170_000))  # about 1 MB
    bomb = tmp_path / "bomb.parquet"
    words = pyarrow.dictionary(pyarrow.int32(), pyarrow.string())
    with parquet.ParquetWriter(
        bomb, pyarrow.schema({"id": pyarrow.string(), "text": words}), compression="zstd"
    ) as out:
        texts = pyarrow.array([f"第{i}条，正常的记录" for i in range(100)]).dictionary_encode()
        out.write_table(pyarrow.table({"id": [f"g{i}" for i in range(100)], "text": texts}))
        texts = pyarrow.DictionaryArray.from_arrays(pyarrow.array([0] * 2000, pyarrow.int32()), pyarrow.array([big]))
        out.write_table(pyarrow.table({"id": [f"b{i}" for i in range(2000)], "text": texts}))
    assert bomb.stat().st_size < 100_000
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    _write_jsonl(before, [{"id": "before", "text": "此前的文件，照常读入。" * 5}])
    _write_jsonl(after, [{"id": "after", "text": "此后的另一个文件，照常读入。" * 5}])
    limit = 1_500_000_000

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {**os.environ, "SIMHASH_STORE_URL": database_url.render_as_string(hide_password=False)}
    env["ARROW_DEFAULT_MEMORY_POOL"] = "system"  # mimalloc keeps the address space it reserved: later files fail
    done = subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", "add", str(before), str(bomb), str(after), "--key-field", "id"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=bounded,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and failed[0].startswith(f"failed: {bomb}: "), failed
    assert "after row 100" in failed[0]
    with Store(database_url) as store:
        assert store.count() == 2 + 100  # the files around it, and the rows before the batch


def test_an_output_inside_an_input_directory_is_refused_before_any_work(database_url, tmp_path):
    # `dedup DIR -o DIR/out.jsonl` read its own earlier output as input at every run (9.1, 18.3,
    # 27.5, 36.8 KB over four runs), and could read its temporary file while writing it.
    from typer.testing import CliRunner

    from simhash_store.cli import app

    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("社区图书馆今年新增了周末亲子阅读活动，报名的家庭已经超过三百户。", "utf-8")
    env = {"SIMHASH_STORE_URL": database_url.render_as_string(hide_password=False)}
    for output in (folder / "out.jsonl", folder / "sub" / "out.jsonl"):
        result = CliRunner().invoke(app, ["dedup", str(folder), "-o", str(output)], env=env)
        assert result.exit_code == 1, result.output
        assert "inside the input directory" in result.output and "Traceback" not in result.output
        assert not output.exists()
    elsewhere = CliRunner().invoke(app, ["dedup", str(folder), "-o", str(tmp_path / "out.jsonl")], env=env)
    assert elsewhere.exit_code == 0, elsewhere.output


def _dedup_file(url, source: Path, output: Path, *, in_memory: bool):
    """``dedup_files`` over one JSONL file, annotated, k = 4, batches of 13: (counts, output bytes)."""
    from simhash_store.dedup import dedup_files, dedup_output

    writer = dedup_output([str(source)], ["jsonl"], str(output), "jsonl", annotate=True)
    with Store(url) as store:
        counts = dedup_files(
            [str(source)],
            ["jsonl"],
            writer,
            store=store,
            max_distance=4,
            annotate=True,
            batch_size=13,
            in_memory=in_memory,
        )
    return counts, output.read_bytes()


def _batches_refused(*arguments):
    raise AssertionError("a batch was stored through the store: the in-memory decisions were not taken")


@pytest.mark.parametrize("bad", [None, "repeated key", "a text the output cannot hold"])
def test_dedup_decided_in_memory_writes_and_stores_what_the_batches_do(pg_server, tmp_path, monkeypatch, bad):
    """``dedup_files(in_memory=True)`` (``dedup --ray``): keep first into an empty store, every record
    decided in memory and stored in one COPY, with the output and the stored clusters (ids, arrivals,
    heads) of the batches, over ties, chains, exact copies and a wordless text. A bad record: the
    batches decide, as without it; a rerun into the filled store: the batches, the same output."""
    from sample_text import edit_walks
    from stored_clusters import stored_clusters

    records = edit_walks()
    if bad == "repeated key":
        records.insert(40, {"key": records[3]["key"], "text": "另一段文字"})
    elif bad is not None:  # a lone surrogate: checked before it is stored, it costs its record
        records.insert(40, {"key": "bad", "text": "\ud800孤立的代理项"})
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    names = [pg_server.create_database(), pg_server.create_database()]
    urls = [pg_server.url(name) for name in names]
    try:
        with monkeypatch.context() as patch:
            if bad is None:
                # The module (simhash_store.dedup, the name, is the function).
                patch.setattr(importlib.import_module("simhash_store.dedup"), "_finish_batch", _batches_refused)
            decided = _dedup_file(urls[0], source, tmp_path / "memory.jsonl", in_memory=True)
        batches = _dedup_file(urls[1], source, tmp_path / "batches.jsonl", in_memory=False)
        stored = [stored_clusters(url) for url in urls]
        again = _dedup_file(urls[0], source, tmp_path / "again.jsonl", in_memory=True)
    finally:
        for name in names:
            pg_server.drop_database(name)
    assert decided[1] == batches[1] == again[1]
    assert decided[0] == batches[0]
    assert stored[0] == stored[1]
    assert decided[0].duplicates and decided[0].not_compared and decided[0].bad == (bad is not None)


_INDEXES = (
    "SELECT c.relname, c.oid::bigint, pg_catalog.pg_get_indexdef(c.oid) FROM pg_catalog.pg_index i "
    "JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'simhash.documents'::regclass ORDER BY 1"
)


@pytest.mark.parametrize("layout", ["four16", "wide3"])
def test_decided_documents_go_into_the_bare_table_unless_another_session_holds_it(pg_server, layout):
    """``Store.add_decided`` (``dedup --ray`` into an empty store) writes as ``Store.load`` does:
    COPY FREEZE into the bare table, every index built after (3.5x the indexed COPY). When another
    session holds the table (here a reader's open transaction), it writes into the indexed table
    within a bounded wait instead: the same rows, ids, clusters and arrivals either way, and the
    same indexes."""
    import numpy as np
    import psycopg

    from simhash_store.clusters import leaders_with_copies

    from stored_clusters import stored_clusters

    values = [
        0x5A5A_0000_FFFF_1234 ^ (1 << (n % 64)) if n % 3 else (n * 0x9E37_79B9_7F4A_7C15) % (1 << 64)
        for n in range(300)
    ]
    documents = [NewDocument(f"r{n:03}", value, length=100 + n) for n, value in enumerate(values)]
    batches = [n // 50 for n in range(len(documents))]
    leaders = leaders_with_copies(np.array(values, dtype=np.uint64), 4).tolist()
    names = [pg_server.create_database(), pg_server.create_database()]
    urls = [pg_server.url(name) for name in names]
    found: dict[str, dict] = {}
    try:
        for way, url in zip(("bare", "held"), urls):
            with Store(url) as store:
                store.init(layout=layout)
                store.recluster(4)
                plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
                with psycopg.connect(plain) as reader:
                    before = reader.execute(_INDEXES).fetchall()
                    reader.commit()
                    if way == "held":  # a reader's transaction left open holds ACCESS SHARE
                        reader.execute("SELECT count(*) FROM simhash.documents").fetchone()
                    ids = store.add_decided(documents, batches, leaders, 4)
                    reader.rollback()
                    after = reader.execute(_INDEXES).fetchall()
                assert ids is not None and sorted(ids) == list(range(1, len(documents) + 1))
                assert [(name, definition) for name, _, definition in after] == [
                    (name, definition) for name, _, definition in before
                ]
                rebuilt = {oid for _, oid, _ in after}.isdisjoint(oid for _, oid, _ in before)
                assert rebuilt == (way == "bare"), way
                near = store.query(values[1], 4)
                assert {m.key for m in near} == {
                    d.key for d in documents if bin(d.fingerprint ^ values[1]).count("1") <= 4
                }
            found[way] = stored_clusters(url)
    finally:
        for name in names:
            pg_server.drop_database(name)
    assert found["bare"] == found["held"]


def test_decisions_in_memory_place_a_later_copy_as_the_batches_do(pg_server):
    """A later copy of a value joins the nearest representative when it arrives, and one that
    arrived after its first copy may be nearer: at k = 2, the fourth of 0, 0b11, 0b111, 0b11 joins
    0b111 (1 bit), not 0 (2 bits), whose cluster its first copy joined. The decisions in memory
    (``dedup --ray``, ``dedup_dataset``) put it with 0; the batches, and ``recluster``, with 0b111."""
    import random

    import psycopg

    from simhash_store.dedup import decide_in_memory

    values = [0, 0b11, 0b111, 0b11]
    chance = random.Random(11)
    for _ in range(300):  # more of the same: values near a few templates, and copies of earlier ones
        if values and chance.random() < 0.3:
            values.append(chance.choice(values))
        else:
            value = chance.choice([0, 0xFF << 20, 0xF0F0 << 40])
            for _ in range(chance.randint(0, 3)):
                value ^= 1 << chance.randrange(64)
            values.append(value)
    documents = [NewDocument(f"d{i:04}", value) for i, value in enumerate(values)]
    names = [pg_server.create_database(), pg_server.create_database()]
    urls = [pg_server.url(name) for name in names]
    found = []
    try:
        with Store(urls[0]) as store:
            store.init()
            store.recluster(2)
            verdicts = decide_in_memory(store, documents, [i // 7 for i in range(len(documents))], 2)
        with Store(urls[1]) as store:
            store.init()
            store.recluster(2)
            for start in range(0, len(documents), 7):
                store.add(documents[start : start + 7])
        for url in urls:
            plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
            with psycopg.connect(plain) as connection:
                found.append(
                    connection.execute("SELECT key, id, cluster FROM simhash.documents ORDER BY id").fetchall()
                )
    finally:
        for name in names:
            pg_server.drop_database(name)
    assert verdicts is not None
    assert found[0][:4] == [("d0000", 1, 1), ("d0001", 2, 1), ("d0002", 3, 3), ("d0003", 4, 3)]
    assert found[0] == found[1]


def test_an_output_written_over_a_hard_link_keeps_nothing_of_the_linked_file(tmp_path):
    # In /tmp another user who may write a file the user shares with a group (0660) hard-linked it at
    # the name of the user's next output (the kernel's protected_hardlinks lets whoever may read and
    # write a file link it): the output took the shared file's group and mode, as an output of the
    # user's own is kept, and the other user could rewrite it. Now the output is a new file under the
    # umask; only the name is replaced, the linked file is left as it was.
    import stat

    from simhash_store.formats.output import OutputFile

    shared = tmp_path / "team" / "notes.txt"
    shared.parent.mkdir()
    shared.write_text("shared notes\n", encoding="utf-8")
    shared.chmod(0o660)
    output_name = tmp_path / "clean.jsonl"
    os.link(shared, output_name)
    umask = os.umask(0o077)
    try:
        with OutputFile(str(output_name)) as output:
            assert stat.S_IMODE(os.stat(output.temporary).st_mode) == 0o600
            output.file.write("kept\n")
    finally:
        os.umask(umask)
    assert output_name.read_text(encoding="utf-8") == "kept\n"
    assert stat.S_IMODE(output_name.stat().st_mode) == 0o600 and output_name.stat().st_nlink == 1
    assert shared.read_text(encoding="utf-8") == "shared notes\n" and stat.S_IMODE(shared.stat().st_mode) == 0o660
