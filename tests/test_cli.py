"""The command line as users meet it: exit codes, exact messages, JSON that parses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from simhash_store import fingerprint, hamming, to_hex
from simhash_store.cli import app
from simhash_store.scheme import DEFAULT_MAX_DISTANCE
from simhash_store.store import Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TRADITIONAL = (
    "臺北市立圖書館今日宣布，總館夜間閱覽室將延長開放時間至晚上十一點，方便上班族與學生在下班、放學後前來閱讀。"
    "館方表示，閱覽室座位共二百四十個，並提供插座與檯燈，讀者憑借書證即可入場。"
)


def url_text(url) -> str:
    return url.render_as_string(hide_password=False)


def invoke(url, *args: str, input: str | bytes | None = None):
    runner = CliRunner()
    env = {"SIMHASH_STORE_URL": url_text(url)} if url is not None else {}
    return runner.invoke(app, list(args), env=env, input=input, catch_exceptions=False)


def run_process(url, *args: str, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("SIMHASH_STORE_URL", None)
    if url is not None:
        env["SIMHASH_STORE_URL"] = url_text(url)
    return subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        **{"timeout": 300, **kwargs},
    )


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def stored(url) -> dict[str, int]:
    with Store(url) as store:
        return {m.key: m.fingerprint for m in store.query(0, 64)}


# ------------------------------------------------------------ no database needed


def test_every_command_has_help_with_an_example():
    command = get_command(app)
    for name in command.commands:
        result = CliRunner().invoke(app, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Example: simhash-store" in result.output, f"{name} --help shows no example"


def test_fingerprint_is_the_same_in_every_encoding(tmp_path, sample_laws):
    simplified = sample_laws[0][:3000]
    cases = {
        "utf8.txt": simplified.encode("utf-8"),
        "utf8-bom.txt": b"\xef\xbb\xbf" + simplified.encode("utf-8"),
        "utf16.txt": simplified.encode("utf-16"),
        "gb18030.txt": simplified.encode("gb18030"),
        "trad-utf8.txt": TRADITIONAL.encode("utf-8"),
        "trad-big5.txt": TRADITIONAL.encode("big5"),
        "trad-utf16be.txt": b"\xfe\xff" + TRADITIONAL.encode("utf-16-be"),
        "trad-gb18030.txt": TRADITIONAL.encode("gb18030"),
    }
    files = [str(write(tmp_path / name, data)) for name, data in cases.items()]
    result = invoke(None, "fingerprint", *files)
    assert result.exit_code == 0, result.output
    printed = dict(reversed(line.split("  ", 1)) for line in result.output.splitlines())
    assert (
        printed[files[0]]
        == printed[files[1]]
        == printed[files[2]]
        == printed[files[3]]
        == to_hex(fingerprint(simplified))
    )
    assert len({printed[f] for f in files[4:]}) == 1
    assert printed[files[4]] == to_hex(fingerprint(TRADITIONAL))


def test_usage_errors_exit_2():
    assert CliRunner().invoke(app, ["add"]).exit_code == 2
    assert CliRunner().invoke(app, ["query"]).exit_code == 2
    assert CliRunner().invoke(app, ["query", "-k", "65", "x"]).exit_code == 2
    assert CliRunner().invoke(app, ["fingerprint", "--scheme", "nope", "x"]).exit_code == 2
    assert CliRunner().invoke(app, ["query", "--fingerprint", "xyz"]).exit_code == 2


def test_bad_url_is_one_line_without_password(tmp_path):
    result = invoke(None, "--db", "mysql://user:hunter2@localhost/db", "stats")
    assert result.exit_code == 1
    assert result.output.strip().startswith("Error: unsupported database URL scheme 'mysql'")
    assert "hunter2" not in result.output


def test_unreachable_database_is_one_line_no_traceback():
    result = run_process(None, "--db", "postgresql://me:hunter2@127.0.0.1:9/none", "stats")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("Error: database postgresql+psycopg://me:***@127.0.0.1:9/none")
    assert "hunter2" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_url_leaves_out_a_given_password_unless_asked():
    given = "postgresql://me:hunter2@db.example:5433/corpus?sslmode=require"
    shown = run_process(None, "--db", given, "url")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "postgresql://me@db.example:5433/corpus?connect_timeout=10&sslmode=require"
    assert "hunter2" not in shown.stdout + shown.stderr
    assert "~/.pgpass" in shown.stderr
    asked = run_process(None, "--db", given, "url", "--show-password")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.strip() == "postgresql://me:hunter2@db.example:5433/corpus?connect_timeout=10&sslmode=require"
    for parameters in ("password=hunter2", "sslpassword=hunter2&sslmode=require"):  # libpq takes these too
        hidden = run_process(None, "--db", f"postgresql://me@db.example/corpus?{parameters}", "url")
        assert hidden.returncode == 0 and "hunter2" not in hidden.stdout + hidden.stderr, hidden.stdout
        assert "~/.pgpass" in hidden.stderr and hidden.stdout.startswith("postgresql://me@db.example/corpus?")
    plain = run_process(None, "--db", "postgresql://me@db.example/corpus", "url")
    assert (plain.stdout.strip(), plain.stderr) == ("postgresql://me@db.example/corpus?connect_timeout=10", "")


# ------------------------------------------------------------ with a database


def test_add_then_query_finds_the_repost(database_url):
    result = invoke(database_url, "add", str(EXAMPLES / "corpus"))
    assert result.exit_code == 0, result.output
    assert "added 5, updated 0, unchanged 0, skipped 0" in result.output
    repost = EXAMPLES / "query" / "library-repost.txt"
    unrelated = EXAMPLES / "query" / "rail-line-unrelated.txt"
    result = invoke(database_url, "query", "--json", "-k", str(DEFAULT_MAX_DISTANCE), str(repost), str(unrelated))
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [line["query"] for line in lines] == [str(repost), str(unrelated)]
    assert lines[0]["fingerprint"] == to_hex(fingerprint(repost.read_text(encoding="utf-8")))
    assert [m["key"] for m in lines[0]["matches"]] == ["library-night-reading.txt"]
    match = lines[0]["matches"][0]
    assert match["similarity"] == pytest.approx(1 - match["distance"] / 64)
    assert lines[1]["matches"] == []


def test_keys_are_relative_to_directory_arguments_and_as_given_for_files(database_url, tmp_path):
    write(tmp_path / "root" / "a" / "one.txt", "第一篇文章的内容，讲的是城市图书馆。")
    write(tmp_path / "root" / ".hidden" / "two.txt", "隐藏目录里的文章不应该被收录。")
    write(tmp_path / "root" / "notes.md", "一篇不是文本后缀的文章，讲的是社区菜园。")
    single = write(tmp_path / "single.txt", "直接点名的文件，以给出的路径作为键。")
    result = invoke(database_url, "add", str(tmp_path / "root"), str(single), "--prefix", "crawl:", "--exclude", "*.md")
    assert result.exit_code == 0, result.output
    assert set(stored(database_url)) == {"crawl:a/one.txt", f"crawl:{single}"}


def test_bad_inputs_are_reported_and_the_rest_stored(database_url, tmp_path):
    root = tmp_path / "mixed"
    write(root / "good.txt", "正常的文章内容，讲述了水库蓄水量回升的情况。")
    write(root / "empty.txt", b"")
    write(root / "image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    write(root / "garbage.txt", b"\x80\xff" * 20)
    (root / "broken.txt").symlink_to(root / "missing-target.txt")
    (root / "loop").symlink_to(root / "loop")
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to(root)
    os.mkfifo(root / "pipe.txt")
    result = run_process(database_url, "add", str(root))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    failures = sorted(line for line in result.stderr.splitlines())
    assert failures == sorted(
        [
            f"failed: {root / 'broken.txt'}: broken symlink",
            f"failed: {root / 'garbage.txt'}: undecodable (not UTF-8, UTF-16, GB18030 or Big5)",
            f"failed: {root / 'loop'}: symlink loop (Too many levels of symbolic links)",
            f"skipped: {root / 'pipe.txt'}: not a regular file (a named pipe)",  # never opened: tests/test_input.py
            f"failed: {root / 'sub' / 'up'}: symlink loop (directory already visited)",
        ]
    )
    assert "added 1," in result.stdout
    assert "skipped 1: binary" in result.stdout and "skipped 1: empty" in result.stdout
    assert list(stored(database_url)) == ["good.txt"]


def test_only_deliberate_skips_exit_0(database_url, tmp_path):
    write(tmp_path / "good.txt", "正常的文章内容，讲述了城际铁路开通的消息。")
    write(tmp_path / "empty.txt", b"   \n")
    write(tmp_path / "blob.bin", bytes(range(256)) * 4)
    result = invoke(database_url, "add", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "added 1, updated 0, unchanged 0, skipped 2" in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_a_failure(database_url, tmp_path):
    secret = write(tmp_path / "secret.txt", "读不到的文件。")
    secret.chmod(0)
    result = invoke(database_url, "add", str(tmp_path))
    assert result.exit_code == 1
    assert f"failed: {secret}: unreadable (Permission denied)" in result.output


def test_readd_is_idempotent_and_changed_files_are_updated(database_url, tmp_path):
    for name in ("a", "b", "c"):
        write(tmp_path / f"{name}.txt", f"文章{name}：" + "城市的公共交通在不断发展，地铁线路越来越多。" * 3)
    first = invoke(database_url, "add", str(tmp_path))
    assert "added 3, updated 0, unchanged 0" in first.output
    again = invoke(database_url, "add", str(tmp_path))
    assert "added 0, updated 0, unchanged 3" in again.output
    write(tmp_path / "b.txt", "完全不同的新内容：老旧小区的空地变成了社区菜园，居民们轮流照看。")
    changed = invoke(database_url, "add", str(tmp_path))
    assert "added 0, updated 1, unchanged 2" in changed.output
    assert stored(database_url)["b.txt"] == fingerprint((tmp_path / "b.txt").read_text(encoding="utf-8"))


def test_jsonl_from_stdin_with_broken_lines(database_url):
    lines = [
        json.dumps({"id": "n1", "body": "第一条新闻：市图书馆夜间阅览室正式开放。"}, ensure_ascii=False),
        "{not json",
        json.dumps({"id": "n2"}),
        json.dumps({"id": "n3", "body": "第三条新闻：城际铁路东线本月底开通运营。"}, ensure_ascii=False),
    ]
    result = invoke(
        database_url, "add", "--jsonl", "-", "--key-field", "id", "--text-field", "body", input="\n".join(lines) + "\n"
    )
    assert result.exit_code == 1
    assert "failed: -:2: bad record (not valid JSON:" in result.output
    assert "failed: -:3: bad record (no 'body' field with a string)" in result.output
    assert sorted(stored(database_url)) == ["n1", "n3"]


def test_skip_near_duplicates_keeps_the_first_of_each_group(database_url, tmp_path):
    original = (EXAMPLES / "corpus" / "library-night-reading.txt").read_text(encoding="utf-8")
    write(tmp_path / "1-original.txt", original)
    write(tmp_path / "2-copy.txt", original.replace("本报讯", "本报讯（记者 王芳）"))
    write(tmp_path / "3-other.txt", (EXAMPLES / "corpus" / "rail-line-opening.txt").read_text(encoding="utf-8"))
    assert (
        hamming(fingerprint(original), fingerprint(original.replace("本报讯", "本报讯（记者 王芳）")))
        <= DEFAULT_MAX_DISTANCE
    )
    result = invoke(database_url, "add", str(tmp_path), "--skip-near-duplicates")
    assert result.exit_code == 0, result.output
    assert "2-copy.txt ~ 1-original.txt" in result.output
    assert sorted(stored(database_url)) == ["1-original.txt", "3-other.txt"]


def test_scheme_mismatch_is_refused(database_url, tmp_path):
    write(tmp_path / "a.txt", "一篇文章。")
    assert invoke(database_url, "add", str(tmp_path)).exit_code == 0
    other = "classic-tfidf-top50"
    result = invoke(database_url, "add", str(tmp_path), "--scheme", other)
    assert result.exit_code == 1
    assert result.output.startswith("Error: the store was created with scheme")


def _components(keys, pairs) -> list[list[str]]:
    """Connected groups of keys joined by pairs (an oracle sharing no code with the store)."""
    group_of = {key: {key} for key in keys}
    for a, b in pairs:
        if group_of[a] is not group_of[b]:
            merged = group_of[a] | group_of[b]
            for key in merged:
                group_of[key] = merged
    return sorted({tuple(sorted(group)) for group in group_of.values() if len(group) > 1})


def test_dups_equals_brute_force(database_url, tmp_path, sample_laws):
    for number, text in enumerate(sample_laws[:12]):
        write(tmp_path / f"law-{number:02}.txt", text)
        write(tmp_path / f"copy-{number:02}.txt", "来源：法律法规数据库\n" + text)
    assert invoke(database_url, "add", str(tmp_path)).exit_code == 0
    values = stored(database_url)
    assert len(values) == 24
    for k in (0, 3, 8):
        result = invoke(database_url, "dups", "-k", str(k), "--json")
        lines = [json.loads(line) for line in result.output.splitlines()]
        # Identical fingerprints come as one group line; a pair names the first key of each side's group.
        groups = {line["keys"][0]: line["keys"] for line in lines if "keys" in line}
        got = sorted(
            [(a, b, 0) for keys in groups.values() for i, a in enumerate(keys) for b in keys[i + 1 :]]
            + [
                (min(a, b), max(a, b), p["distance"])
                for p in lines
                if "a" in p
                for a in groups.get(p["a"], [p["a"]])
                for b in groups.get(p["b"], [p["b"]])
            ]
        )
        keys = sorted(values)
        expected = sorted(
            (a, b, hamming(values[a], values[b]))
            for i, a in enumerate(keys)
            for b in keys[i + 1 :]
            if hamming(values[a], values[b]) <= k
        )
        assert got == expected
        if k == 8:  # every law and its copy at least
            assert {(f"copy-{n:02}.txt", f"law-{n:02}.txt") for n in range(12)} <= {(a, b) for a, b, _ in got}
            near = [(a, b) for a, b, _ in expected]
    clusters = invoke(database_url, "dups", "-k", "8", "--clusters", "--json")
    groups = sorted(tuple(sorted(json.loads(line)["keys"])) for line in clusters.output.splitlines())
    assert groups == _components(values, near)


def test_import_round_trip_then_query_finds_imported(database_url, tmp_path):
    repost = (EXAMPLES / "query" / "library-repost.txt").read_text(encoding="utf-8")
    originals = {p.name: fingerprint(p.read_text(encoding="utf-8")) for p in (EXAMPLES / "corpus").glob("*.txt")}
    names = sorted(originals)
    signed = lambda v: v - 2**64 if v >= 2**63 else v  # noqa: E731
    csv_rows = ["key,fingerprint"] + [
        f"{names[0]},{to_hex(originals[names[0]])}",
        f"{names[1]},{originals[names[1]]}",
        "broken,12345zz",
    ]
    write(tmp_path / "legacy.csv", "\n".join(csv_rows) + "\n")
    jsonl_rows = [json.dumps({"key": n, "fingerprint": signed(originals[n])}) for n in names[2:]] + ["{oops"]
    write(tmp_path / "legacy.jsonl", "\n".join(jsonl_rows) + "\n")
    for file, bad_line in (("legacy.csv", 4), ("legacy.jsonl", len(names) - 1)):
        result = invoke(database_url, "import", str(tmp_path / file), "--scheme", "zh-jieba-v1")
        assert result.exit_code == 1
        assert f"failed: {tmp_path / file}:{bad_line}: bad record" in result.output
    assert stored(database_url) == originals
    again = invoke(database_url, "import", str(tmp_path / "legacy.csv"), "--scheme", "zh-jieba-v1")
    assert "0 added, 0 updated, 2 unchanged, 1 failed" in again.output
    result = invoke(database_url, "query", "-", "--json", "-k", "12", input=repost.encode("utf-8"))
    assert "library-night-reading.txt" in [m["key"] for m in json.loads(result.output)["matches"]]


def test_remove_and_stats(database_url):
    invoke(database_url, "add", str(EXAMPLES / "corpus"))
    result = invoke(database_url, "remove", "community-garden.txt", "nope")
    assert result.stdout.strip() == "removed 1 of 2"
    assert result.stderr.strip() == "not stored, so not removed: nope"
    info = json.loads(invoke(database_url, "stats", "--json").output)
    assert info["documents"] == 4 and info["default_max_distance"] == DEFAULT_MAX_DISTANCE
    assert set(info["largest_block_buckets"]) == {"block0", "block1", "block2", "block3"}


@pytest.mark.slow
def test_killed_add_then_rerun_gives_the_clean_store(database_url, pg_server, tmp_path, sample_laws, sample_paragraphs):
    # 120 distinct documents from the shipped sample: each paragraph followed by three laws.
    laws = []
    for number in range(120):
        text = sample_paragraphs[number % 40] + "".join(
            sample_laws[(number + i) % 20] for i in range(3 * (number // 40 + 1))
        )
        laws.append(write(tmp_path / "laws" / f"doc-{number:03}.txt", text))
    process = subprocess.Popen(
        [sys.executable, "-m", "simhash_store.cli", "add", str(tmp_path / "laws"), "--batch-size", "10", "-j", "1"],
        env=dict(os.environ, SIMHASH_STORE_URL=url_text(database_url)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        with Store(database_url) as store:
            if store.count() >= 20:
                break
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    partial = stored(database_url)
    assert 20 <= len(partial) < len(laws)
    for key, value in partial.items():  # whatever got in is right
        assert value == fingerprint((tmp_path / "laws" / key).read_text(encoding="utf-8"))
    rerun = run_process(database_url, "add", str(tmp_path / "laws"))
    assert rerun.returncode == 0, rerun.stderr
    assert f"unchanged {len(partial)}" in rerun.stdout
    clean_name = pg_server.create_database()
    try:
        clean_url = pg_server.url(clean_name)
        assert run_process(clean_url, "add", str(tmp_path / "laws")).returncode == 0
        assert stored(database_url) == stored(clean_url)
    finally:
        pg_server.drop_database(clean_name)


def test_unchanged_size_and_time_skip_reading_and_checksum_reads(database_url, tmp_path):
    path = write(tmp_path / "a.txt", "城际铁路东线本月底开通运营，全长六十二公里。")
    assert "added 1," in invoke(database_url, "add", str(tmp_path)).output
    before = path.stat()
    # Same size, same modification time, other content: only --checksum can tell.
    write(path, "城际铁路西线本月底开通运营，全长六十二公里。")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert "updated 0, unchanged 1" in invoke(database_url, "add", str(tmp_path)).output
    assert "updated 1, unchanged 0" in invoke(database_url, "add", str(tmp_path), "--checksum").output
    assert stored(database_url)["a.txt"] == fingerprint(path.read_text(encoding="utf-8"))
    # Touched but identical: not fingerprinted again, and its new stamp is recorded.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert "updated 0, unchanged 1" in invoke(database_url, "add", str(tmp_path)).output
    with Store(database_url) as store:
        assert store.versions(["a.txt"])["a.txt"][1] == f"{path.stat().st_size}:{path.stat().st_mtime_ns}"


# ------------------------------------------------------------ what a new user meets first


def test_version_and_short_help():
    from importlib.metadata import version

    result = CliRunner().invoke(app, ["--version"])
    assert (result.exit_code, result.output) == (0, f"simhash-store {version('simhash-store')}\n")
    assert CliRunner().invoke(app, ["-h"]).output == CliRunner().invoke(app, ["--help"]).output
    result = CliRunner().invoke(app, ["query", "-h"])
    assert result.exit_code == 0 and "Example: simhash-store query" in result.output


def test_help_shows_plain_types():
    command = get_command(app)
    for name in command.commands:
        output = CliRunner().invoke(app, [name, "--help"], terminal_width=200).output
        assert not re.search(r"<(list|int|str|float|bool|Path|path)\b", output), f"{name} --help: {output}"
    add = CliRunner().invoke(app, ["add", "--help"], terminal_width=200).output
    assert "PATHS PATH..." in add and "--jsonl TEXT" in add and "--max-distance INTEGER" in add


def test_usage_lines_name_arguments_plainly():
    command = get_command(app)
    for name in command.commands:
        usage = CliRunner().invoke(app, [name, "--help"], terminal_width=200).output.splitlines()[0]
        assert "{" not in usage and "}" not in usage, usage
    usage = {
        name: CliRunner().invoke(app, [name, "--help"]).output.splitlines()[0] for name in ("query", "import", "remove")
    }
    assert usage["query"] == "Usage: simhash-store query [OPTIONS] [FILES]..."  # optional
    assert usage["import"] == "Usage: simhash-store import [OPTIONS] FILE"  # required, as click writes it
    assert usage["remove"] == "Usage: simhash-store remove [OPTIONS] KEYS..."


def test_help_shows_the_choices_and_the_metavars_given():
    imported = CliRunner().invoke(app, ["import", "--help"], terminal_width=200).output
    assert "--format [auto|text|jsonl|csv|tsv|parquet|html|warc]" in imported
    assert "--fingerprint-format [auto|hex|decimal]" in imported
    assert "--lock-timeout SECONDS" in imported and "--db URL" in imported
    result = CliRunner().invoke(app, ["import", "x.csv", "--scheme", "pypi-simhash", "--format", "xml"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: Invalid value for --format: must be one of auto, text, jsonl, csv, tsv, parquet, html, warc, not 'xml'"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["query", "-k", "99", "-f", "0" * 16], "Invalid value for -k/--max-distance: must be from 0 to 64, not 99"),
        (["query", "-k", "abc", "-f", "0" * 16], "Invalid value for -k/--max-distance: 'abc' is not a whole number"),
        (["query", "--limit", "0", "-f", "0" * 16], f"Invalid value for --limit: must be from 1 to {2**63 - 2}, not 0"),
        (["recluster", "-k", "65"], "Invalid value for -k/--max-distance: must be from 0 to 64, not 65"),
        (["optimize", "--lock-timeout", "0"], "Invalid value for --lock-timeout: must be from 0.001 to 86400, not 0"),
        # Bounds were shown as floats ("from 1 to 2.14748e+09"), and --limit past a bigint said "not N+1".
        (
            ["add", "-", "--batch-size", "2147483648"],
            "Invalid value for --batch-size: must be from 1 to 2147483647, not 2147483648",
        ),
        (
            ["query", "--limit", str(2**63), "-f", "0" * 16],
            f"Invalid value for --limit: must be from 1 to {2**63 - 2}, not {2**63}",
        ),
    ],
)
def test_a_number_out_of_range_is_said_plainly_before_any_io(arguments, message):
    result = run_process(None, "--db", "postgresql://nobody@127.0.0.1:9/never", *arguments)  # never reached
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == f"Error: {message}"
    assert "Input should" not in result.stderr and "Traceback" not in result.stderr


def test_a_whole_number_at_a_large_bound_is_taken_as_it_is(database_url):
    # Compared as floats, --limit 2**63 - 2 was refused as past a bound of 2**63 - 2.
    result = invoke(database_url, "query", "-f", "0" * 16, "-k", "0", "--limit", str(2**63 - 2), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["matches"] == []


def test_counts_take_the_singular_for_one():
    from simhash_store.plural import counted

    assert [counted(n, "cluster") for n in (0, 1, 2)] == ["0 clusters", "1 cluster", "2 clusters"]
    assert counted(1, "pair", grouped=True) == "1 pair" and counted(20_000, "pair", grouped=True) == "20,000 pairs"


def test_summaries_say_1_document_not_1_documents(database_url, tmp_path):
    text = (EXAMPLES / "corpus" / "library-night-reading.txt").read_text(encoding="utf-8")
    write(tmp_path / "one" / "a.txt", text)
    added = invoke(database_url, "add", str(tmp_path / "one"))
    assert added.exit_code == 0 and "(of 1 input)" in added.output, added.output
    assert (
        "1 document" in invoke(database_url, "init").output and "1 documents" not in invoke(database_url, "init").output
    )
    unrelated = EXAMPLES / "query" / "rail-line-unrelated.txt"
    nothing = invoke(database_url, "query", "-k", "1", str(unrelated))
    assert nothing.output.endswith("nothing stored within 1 bit\n"), nothing.output
    write(tmp_path / "two" / "b.txt", text)  # the same text under a second key
    assert invoke(database_url, "add", str(tmp_path / "two")).exit_code == 0
    pairs = run_process(database_url, "dups", "-k", "1")
    assert pairs.stderr == "1 group of identical fingerprints and 0 pairs within 1 bit\n"
    clusters = run_process(database_url, "dups", "--clusters", "-k", "1")
    assert clusters.stderr.splitlines()[0] == "1 cluster of two or more documents at distance 1"
    reclustered = invoke(database_url, "recluster", "-k", "1")
    assert reclustered.output == "2 documents in 1 cluster at distance 1\n"


def test_db_is_accepted_before_or_after_the_command(database_url):
    url = url_text(database_url)
    before = CliRunner().invoke(app, ["--db", url, "stats", "--json"], env={"SIMHASH_STORE_URL": ""})
    after = CliRunner().invoke(app, ["stats", "--json", "--db", url], env={"SIMHASH_STORE_URL": ""})
    assert before.exit_code == after.exit_code == 0, before.output + after.output
    assert json.loads(before.output)["documents"] == json.loads(after.output)["documents"] == 0
    # After the command it wins over the environment, as before it does.
    bad = CliRunner().invoke(app, ["stats", "--db", "mysql://x/y"], env={"SIMHASH_STORE_URL": url})
    assert bad.exit_code == 1 and "unsupported database URL scheme 'mysql'" in bad.output


def test_schemes_marks_the_default_and_what_the_store_holds():
    lines = CliRunner().invoke(app, ["schemes"]).output.splitlines()
    default = [line for line in lines if line.startswith("* multi-v3")]
    assert len(default) == 1 and "store and fingerprint" in default[0]
    assert sum(line.startswith("* ") for line in lines) == 1
    narrow = [line for line in lines if "seed-murmur32" in line]
    assert narrow and "fingerprint only (the store holds 64-bit fingerprints)" in narrow[0]


def test_import_into_a_store_of_another_scheme_does_not_advise_relabelling(database_url, tmp_path):
    write(tmp_path / "a.txt", "一篇文章。")
    assert invoke(database_url, "add", str(tmp_path)).exit_code == 0
    write(tmp_path / "legacy.csv", "key,fingerprint\nx,1a9ffed40a667204\n")
    result = invoke(database_url, "import", str(tmp_path / "legacy.csv"), "--scheme", "pypi-simhash")
    assert result.exit_code == 1
    assert result.output.startswith("Error: these fingerprints were computed with scheme pypi-simhash")
    assert "--scheme" not in result.output and "--db URL" in result.output
    assert set(stored(database_url)) == {"a.txt"}


def test_remove_names_the_keys_that_are_not_stored(database_url):
    invoke(database_url, "add", str(EXAMPLES / "corpus"))
    result = run_process(database_url, "remove", "community-garden.txt", "nope", "nope/2")
    assert result.returncode == 0  # what should be gone is gone
    assert result.stdout == "removed 1 of 3\n"
    assert result.stderr == "not stored, so not removed: nope, nope/2\n"


def test_progress_moves_with_the_first_small_documents_not_after_a_chunk_of_the_largest(sample_laws):
    from simhash_store import corpus, ingest
    from simhash_store.scheme import DEFAULT

    large = [corpus.Source(f"large-{n}", text=law * 8, size=len(law * 8)) for n, law in enumerate(sample_laws)] * 3
    small = [corpus.Source(f"small-{n}", text=law[:200], size=200) for n, law in enumerate(sample_laws[:2])]
    tasks = [(source, None) for source in large[:30] + small + large[30:]]
    reported: list[int] = []
    with ingest.Fingerprinter(DEFAULT, jobs=2) as fingerprinter:
        results = fingerprinter.submit(tasks)(lambda documents, size: reported.append(size))
    assert len(results) == len(reported) == 62
    # Each worker starts with a small document alone: the bar moves at once.
    assert reported[0] == 200


# ------------------------------------------------------------ refused before the work, and what cannot be compared


def test_explain_of_texts_without_words_says_so_and_fails():
    # Both fingerprints are 0 (no features): "distance 0 bits: near-duplicates" said nothing true.
    for texts, who in (
        (("   ...", "!!!"), "the two texts have"),
        (("保护人民，制定本法。", "，。！"), "the second text (B) has"),
    ):
        for extra in ([], ["--json"]):
            result = invoke(None, "explain", "--text", *texts, *extra)
            assert result.exit_code == 1 and result.stdout == ""
            assert result.stderr.startswith(f"Error: {who} no features under scheme multi-v3")
            assert result.stderr.count("\n") == 1


def _calibration_input(tmp_path, sample_paragraphs) -> Path:
    lines = [json.dumps({"text": text}, ensure_ascii=False) for text in sample_paragraphs[:12]]
    return write(tmp_path / "docs.jsonl", "\n".join(lines) + "\n")


def test_calibrate_plot_that_cannot_be_drawn_is_refused_before_the_work(
    database_url, tmp_path, sample_paragraphs, monkeypatch
):
    # It failed after the calibration (and after --apply had recorded its k), with the results lost,
    # or (a missing directory) with a traceback.
    documents = str(_calibration_input(tmp_path, sample_paragraphs))
    invoke(database_url, "init")
    arguments = ["calibrate", "--jsonl", documents, "--sample", "10", "--apply"]
    missing = invoke(database_url, *arguments, "--plot", str(tmp_path / "no-such-dir" / "k.png"))
    assert (missing.exit_code, missing.stdout) == (1, "")
    assert missing.stderr.startswith(f"Error: cannot write {tmp_path / 'no-such-dir' / 'k.png'}: ")
    assert missing.stderr.count("\n") == 1
    with monkeypatch.context() as patched:
        patched.setitem(sys.modules, "matplotlib", None)  # as if not installed: importing it fails
        result = invoke(database_url, *arguments, "--plot", str(tmp_path / "k.png"))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "Error: the plot needs matplotlib: pip install 'simhash-store[plot]'\n"
    with Store(database_url) as store:
        assert store.recommended_distance() is None  # nothing was done, so nothing recorded
    drawn = invoke(database_url, *arguments, "--plot", str(tmp_path / "k.png"))
    assert drawn.exit_code == 0 and (tmp_path / "k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.jsonl", "k.png"]  # no temporary left


# Chinese in GB18030 whose bytes are also valid UTF-8 (of letters in seven scripts): a phrase of the
# corpus, repeated as a boilerplate line is; and phrases of the shipped sample (tests/data), run together.
GB18030_ALSO_UTF8 = ["一些学院同时要去" * 30, "实施洗钱诈骗投注一业一证山路水闸" * 15]


@pytest.mark.parametrize("text", GB18030_ALSO_UTF8)
def test_a_gb18030_file_whose_bytes_are_also_utf8_is_read_as_gb18030(database_url, tmp_path, text):
    data = text.encode("gb18030")
    data.decode("utf-8")  # valid UTF-8 too: the ambiguity this test is about
    path = write(tmp_path / "notice.txt", data)
    printed = invoke(None, "fingerprint", str(path))
    assert printed.stdout == f"{to_hex(fingerprint(text))}  {path}\n"
    added = invoke(database_url, "add", str(path))
    assert added.exit_code == 0 and added.stdout.startswith("added 1, updated 0, unchanged 0, skipped 0")
    assert stored(database_url) == {str(path): fingerprint(text)}


# ------------------------------------------------------------ keys, paths and texts reach the terminal inert

# What a key or file name may hold (any user's data): a terminal title and a screen clear, a line
# break (splits a line a script reads), a right-to-left override (shows what follows backwards),
# a C1 CSI (a control sequence on many terminals), a zero-width space, markup and an emoji code.
HOSTILE = {
    "title": "t\x1b]0;owned\x07\x1b[2J.txt",
    "newline": "line\nbreak.txt",
    "override": "rev\u202eabc.txt",
    "csi": "c1\x9b31m.txt",
    "zero-width": "z\u200bw.txt",
    "markup": ":smile:[bold]b[/bold].txt",
}
SHOWN = {
    "title": "t\\x1b]0;owned\\x07\\x1b[2J.txt",
    "newline": "line\\nbreak.txt",
    "override": "rev\\u202eabc.txt",
    "csi": "c1\\x9b31m.txt",
    "zero-width": "z\\u200bw.txt",
    "markup": ":smile:[bold]b[/bold].txt",
}


def _inert(output: str) -> str:
    """``output`` if no character in it is one a terminal acts on or that hides or reorders text."""
    import unicodedata

    acting = [c for c in output if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")]
    assert not acting, acting
    return output


def test_keys_and_paths_are_printed_visibly_escaped_and_json_stays_exact(database_url, tmp_path, sample_paragraphs):
    root = tmp_path / "in"
    for n, key in enumerate(HOSTILE.values()):
        write(root / key, sample_paragraphs[n])
    write(root / "copy\x1b[2J.txt", sample_paragraphs[0])  # the same text as "title", and stored first
    write(root / "garbage\x1b[2J.txt", b"\x80\xff" * 20)  # fails: named on stderr
    shown_root = str(root)
    added = invoke(database_url, "add", str(root), "--skip-near-duplicates")
    assert added.exit_code == 1
    _inert(added.stdout), _inert(added.stderr)
    assert f"failed: {shown_root}/garbage\\x1b[2J.txt: undecodable" in added.stderr
    assert "    t\\x1b]0;owned\\x07\\x1b[2J.txt ~ copy\\x1b[2J.txt (distance 0)" in added.stdout.splitlines()

    query = invoke(database_url, "query", str(root / HOSTILE["title"]), "-k", "0")
    _inert(query.stdout)
    assert f"{shown_root}/{SHOWN['title']} (" in query.stdout and "│ copy\\x1b[2J.txt │" in query.stdout
    exact = json.loads(invoke(database_url, "query", str(root / HOSTILE["override"]), "-k", "0", "--json").stdout)
    assert (exact["query"], exact["matches"][0]["key"]) == (str(root / HOSTILE["override"]), HOSTILE["override"])

    write(root / "again.txt", sample_paragraphs[1])  # "newline" again, so dups pairs it
    invoke(database_url, "add", str(root / "again.txt"))
    dups = invoke(database_url, "dups", "-k", "0")
    again = f"{root}/again.txt"  # a file named on the command line: its key is the path given
    assert _inert(dups.stdout).splitlines() == [f" 0  {again}  {SHOWN['newline']}"]  # one line, not two
    assert [
        json.loads(line)["keys"] for line in invoke(database_url, "dups", "-k", "0", "--json").stdout.splitlines()
    ] == [[again, HOSTILE["newline"]]]
    invoke(database_url, "recluster", "-k", "0")
    clusters = invoke(database_url, "dups", "--clusters", "-k", "0")
    assert _inert(clusters.stdout).endswith(f": {SHOWN['newline']} <- {again} (0)\n")

    removed = invoke(database_url, "remove", HOSTILE["csi"], "gone\x1b[2J\u202e")
    assert removed.stdout == "removed 1 of 2\n"
    assert _inert(removed.stderr) == "not stored, so not removed: gone\\x1b[2J\\u202e\n"

    legacy = write(tmp_path / "legacy\x1b[2J.csv", f"key,fingerprint\n{HOSTILE['zero-width']}x,zz\n")
    imported = invoke(
        database_url, "import", str(legacy), "--scheme", "multi-v3"
    )  # the scheme the store was created with
    assert imported.exit_code == 1 and f"failed: {tmp_path}/legacy\\x1b[2J.csv:2: " in _inert(imported.stderr)

    lines = [{"key": HOSTILE["markup"], "body": sample_paragraphs[7]}, {"key": HOSTILE["title"] + "2"}]  # no body: bad
    records = write(tmp_path / "crawl\x1b[2J.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    deduped = invoke(database_url, "dedup", str(records), "--text-field", "body", "-o", str(tmp_path / "out.jsonl"))
    assert deduped.exit_code == 1 and f"failed: {tmp_path}/crawl\\x1b[2J.jsonl:2: " in _inert(deduped.stderr)
    stats = invoke(database_url, "stats")
    _inert(stats.stdout)


def test_paths_and_texts_in_messages_without_a_database_are_escaped(tmp_path):
    for name, shown in zip(HOSTILE.values(), SHOWN.values()):
        path = write(tmp_path / name, "保护人民，制定本法。")
        printed = invoke(None, "fingerprint", str(path))
        assert _inert(printed.stdout) == f"{to_hex(fingerprint('保护人民，制定本法。'))}  {tmp_path}/{shown}\n"
        missing = invoke(None, "explain", str(tmp_path / ("no-" + name)), str(path))
        assert (missing.exit_code, _inert(missing.stderr)) == (
            1,
            f"Error: cannot open {tmp_path}/no-{shown}: No such file or directory\n",
        )
        calibrated = invoke(None, "calibrate", "--jsonl", str(tmp_path / ("no-" + name)), "--scheme", "zh-jieba-v1")
        assert calibrated.exit_code == 1 and _inert(calibrated.stderr).startswith(
            f"Error: cannot open {tmp_path}/no-{shown}"
        )
    explained = invoke(None, "explain", "--text", "保护\u202e人民，制定本法。\x1b[2J", "保护人民，制定此法。")
    _inert(explained.stdout)
    as_json = json.loads(
        invoke(None, "explain", "--json", "--text", "保护人民\u202e，制定本法。", "保护人民，制定此法。").stdout
    )
    assert as_json["distance"] >= 0


def test_a_long_key_in_a_query_table_is_wrapped_never_cut(database_url, tmp_path, sample_paragraphs):
    # Piped output is 80 columns wide: a crawler's URL used to end in "…", and could not be copied.
    key = "https___news.example.com_" + "a_long_path_segment_" * 8 + "end.txt"
    write(tmp_path / "in" / key, sample_paragraphs[0])
    assert invoke(database_url, "add", str(tmp_path / "in")).exit_code == 0
    result = invoke(database_url, "query", str(write(tmp_path / "q.txt", sample_paragraphs[0])))
    cells = [line.split("│")[1].strip() for line in result.stdout.splitlines() if line.startswith("│")]
    assert "".join(cells).startswith(key) and "…" not in result.stdout


def test_explain_refuses_a_fifo_and_a_stream_without_end_in_one_line(tmp_path):
    # explain read whatever it was given whole: a FIFO waited for a writer forever, and
    # /dev/zero on stdin grew without bound (5.6 GB in 8 s).
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    other = write(tmp_path / "a.txt", "保护人民，制定本法。")
    done = subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", "explain", str(fifo), str(other)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "not a regular file (a named pipe)" in done.stderr and done.stderr.count("\n") == 1


def test_records_named_as_a_fifo_or_a_device_are_refused_by_every_command(database_url, tmp_path):
    # add, query, import and calibrate opened a FIFO named as JSONL or CSV and waited for a writer for
    # ever; /dev/zero behind a .jsonl name was read for ever (dedup and the text format refused both).
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.csv"
    zero.symlink_to("/dev/zero")
    for arguments, name, what in (
        (["add", str(fifo)], fifo, "a named pipe"),
        (["add", "--jsonl", str(fifo)], fifo, "a named pipe"),
        (["add", str(zero), "--max-file-size", "1M"], zero, "a character device"),
        (["query", "--jsonl", str(fifo)], fifo, "a named pipe"),
        (["import", str(zero), "--scheme", "multi-v3"], zero, "a character device"),
        (["calibrate", "--format", "jsonl", str(fifo)], fifo, "a named pipe"),
    ):
        done = run_process(database_url, *arguments, timeout=120)
        assert (done.returncode, done.stdout) == (1, ""), (arguments, done.stderr)
        assert done.stderr == (
            f"Error: cannot open {name}: not a regular file ({what}); give its records on standard input ('-')\n"
        ), arguments


def _run_with_stdout(url, stdout, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # As in a user's shell: standard output buffered, so a short output is only written, and
    # fails, at the command's end (PYTHONUNBUFFERED=1, set where the tests ran, hid that).
    env.pop("PYTHONUNBUFFERED", None)
    env["SIMHASH_STORE_URL"] = url_text(url)
    return subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", *args],
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_an_output_that_cannot_be_written_is_one_line_and_keeps_what_was_stored(database_url, tmp_path):
    """`query --json > /dev/full` (a full disk) printed a traceback of rich's; `dedup -o -` with
    standard output closed an AttributeError's. Now one line, exit 1, and an add's rows stored."""
    records = tmp_path / "records.jsonl"
    texts = [f"第{i}号通知：{TRADITIONAL[i:]}编号{i * 7919}" for i in range(5)]
    write(
        records,
        "".join(json.dumps({"key": f"r{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)),
    )
    closed = _run_with_stdout(database_url, subprocess.DEVNULL, "dedup", str(records), "-o", "-")
    assert closed.returncode == 0  # the same command with standard output open (into an empty store: it keeps clusters)
    shut = subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", "dedup", str(records), "-o", "-"],
        env={**os.environ, "SIMHASH_STORE_URL": url_text(database_url)},
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.close(1),  # started as with `>&-`: no standard output at all
    )
    assert shut.returncode == 1 and shut.stderr.splitlines() == ["Error: standard output is closed: give -o FILE"]
    with open("/dev/full", "w") as full:
        results = {
            "add --json": _run_with_stdout(database_url, full, "add", str(records), "--json", "--prefix", "full/"),
            "query --json": _run_with_stdout(database_url, full, "query", str(records), "--json"),
            "query": _run_with_stdout(database_url, full, "query", str(records)),
            "dups --json": _run_with_stdout(database_url, full, "dups", "--json"),
            "dups": _run_with_stdout(database_url, full, "dups"),
            "stats --json": _run_with_stdout(database_url, full, "stats", "--json"),
            "fingerprint": _run_with_stdout(database_url, full, "fingerprint", str(records)),
        }
    for command, result in results.items():
        assert result.returncode == 1, (command, result.stderr)
        lines = result.stderr.splitlines()
        if command == "dups":  # its count of what it found comes first, then the error
            lines = lines[1:]
        assert lines == ["Error: cannot write the output: No space left on device"], command
    assert {key for key in stored(database_url) if key.startswith("full/")} == {f"full/r{i}" for i in range(5)}


def test_a_short_output_into_a_pipe_its_reader_closed_ends_silently_with_status_1(database_url, tmp_path):
    """`simhash-store dups --json | head -0`: a short output is written only at the end, where the
    interpreter's last flush printed "Exception ignored ... BrokenPipeError" and exited 120. Now as
    for a long output (click's rule for a reader that went away): nothing on stderr, exit status 1."""
    source = write(tmp_path / "a.txt", TRADITIONAL)
    other = write(tmp_path / "b.txt", "城际铁路东线本月底开通运营，沿线设站十二座。")
    assert _run_with_stdout(database_url, subprocess.DEVNULL, "add", str(source), str(other)).returncode == 0
    for command in (["dups", "--json", "-k", "64"], ["stats", "--json"], ["fingerprint", str(source)]):
        reader, writer = os.pipe()
        os.close(reader)  # the reader has gone before the command writes anything
        try:
            result = _run_with_stdout(database_url, writer, *command)
        finally:
            os.close(writer)
        assert (result.returncode, result.stderr) == (1, ""), command


def test_a_batch_size_past_any_transaction_is_a_usage_error_not_a_traceback(tmp_path):
    # --batch-size 99999999999999999999 reached itertools.islice: a ValueError traceback, exit 1.
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps({"key": "a", "text": "保护人民的合法权利"}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    for command in (["add", "--jsonl", str(source)], ["dedup", str(source), "-o", str(tmp_path / "out.jsonl")]):
        for size in ("99999999999999999999", str(2**63 - 1), str(2**31)):
            result = CliRunner().invoke(
                app, [*command, "--batch-size", size, "--db", "postgresql://nobody@127.0.0.1:1/none"]
            )
            assert result.exit_code == 2, (command, size, result.output)
            assert "Traceback" not in result.output and "--batch-size" in result.output, result.output
    assert not (tmp_path / "out.jsonl").exists()


def test_more_jobs_than_cores_start_no_more_workers_than_cores(sample_laws):
    # The executor forks every worker at once, each loading the dictionaries (about 160 MB): -j 1000
    # on a two-core machine asked for 160 GB to fingerprint no faster.
    from simhash_store import corpus, ingest
    from simhash_store.scheme import DEFAULT

    most = max(2, len(os.sched_getaffinity(0)))
    tasks = [(corpus.Source(f"law-{n}", text=law, size=len(law)), None) for n, law in enumerate(sample_laws[:20])]
    with ingest.Fingerprinter(DEFAULT, jobs=1000) as fingerprinter:
        assert fingerprinter.jobs == most
        results = fingerprinter.submit(tasks)(None)
        assert fingerprinter._pool is not None and fingerprinter._pool._max_workers == most
    assert [result.key for result in results] == [f"law-{n}" for n in range(20)]
    with ingest.Fingerprinter(DEFAULT, jobs=1) as fingerprinter:
        assert fingerprinter.jobs == 1


def test_a_large_max_file_size_reads_standard_input_in_pieces(database_url):
    # One read(n) of a pipe allocates n bytes before reading: `add - --max-file-size 100G` was a
    # MemoryError traceback (under a 4 GB address-space limit; 1T on any machine), and a size past
    # 2**63 an OverflowError one, however short the input.
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    for size, form in [("100G", "text"), ("1T", "html"), ("99999999999999999999999T", "text")]:
        result = run_process(
            database_url,
            "add",
            "-",
            "--format",
            form,
            "--max-file-size",
            size,
            "-j",
            "1",
            input="<p>中华人民共和国保护人民的合法权益，维护社会秩序。</p>",
            preexec_fn=limited,
        )
        assert result.returncode == 0, (size, result.stderr[-500:])
        assert "Traceback" not in result.stderr


def test_fingerprint_of_standard_input_does_not_allocate_its_bound_first():
    # fingerprint - read(1 GiB + 1) of the pipe: under a 1 GiB address-space limit a MemoryError
    # traceback for a line of text.
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    result = run_process(None, "fingerprint", "-", input="中华人民共和国保护人民的合法权益。", preexec_fn=limited)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-500:]
    assert len(result.stdout.split()[0]) == 16


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_character_standard_output_cannot_encode_is_one_line(tmp_path, encoding):
    # PYTHONIOENCODING=ascii (or a Latin-1 locale) and a key of "é" or "文": a traceback of rich's.
    (tmp_path / "caf\u00e9\u6587.txt").write_text("北京的新闻，今天的天气很好。", encoding="utf-8")
    environment = {**os.environ, "PYTHONIOENCODING": encoding}
    done = subprocess.run(
        [sys.executable, "-m", "simhash_store", "fingerprint", str(tmp_path)],
        errors="replace",
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-800:]
    assert done.stderr.startswith(f"Error: standard output's encoding ({encoding}) cannot write the character ")
    assert done.stderr.count("\n") == 1


def test_a_closed_standard_descriptor_is_one_line_or_read_as_empty(tmp_path):
    # Started with standard input closed (<&-), `fingerprint -` was an AttributeError traceback; with
    # standard output closed (>&-), every line a command printed was lost, exit status 0.
    (tmp_path / "a.txt").write_text("北京的新闻，今天的天气很好。", encoding="utf-8")

    def run(closed: int, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "simhash_store", *args],
            capture_output=closed != 1 and closed != 2,
            stdout=subprocess.PIPE if closed == 2 else None,
            stderr=subprocess.PIPE if closed == 1 else None,
            text=True,
            timeout=120,
            check=False,
            preexec_fn=lambda: os.close(closed),
        )

    done = run(0, "fingerprint", "-")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "failed: -: empty\n")
    done = run(1, "fingerprint", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr == "Error: standard output is closed, so the output would be lost: redirect it (>/dev/null)\n"
    done = run(2, "fingerprint", str(tmp_path))
    assert done.returncode == 0 and done.stdout.endswith("a.txt\n")


def test_ctrl_c_while_the_command_line_is_imported_is_one_line():
    # The imports take a few tenths of a second (more on a loaded machine): an interrupt in them
    # ended the command with a KeyboardInterrupt traceback. Here it arrives in the middle of them.
    script = (
        "import os, signal, sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'simhash_store.cli.common':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "sys.argv = ['simhash-store', 'stats']\n"
        "from simhash_store.__main__ import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stderr, done.stdout) == (130, "Interrupted\n", "")


def test_the_package_imports_its_public_names_on_first_use():
    # `import simhash_store` is what the command's entry point pays before it hides passwords and
    # takes Ctrl-C: a few milliseconds, not numpy, SQLAlchemy and jieba.
    script = (
        "import sys, simhash_store\n"
        "print(sorted(m for m in ('numpy', 'sqlalchemy', 'jieba', 'psycopg') if m in sys.modules))\n"
        "import simhash_store.fingerprint, simhash_store.dedup\n"
        "from simhash_store import dedup, fingerprint, hamming\n"
        "print(callable(dedup), callable(fingerprint), hamming(1, 2))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "True True 2"]
