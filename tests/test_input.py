"""Input reading that never loses a good record and never hangs (issue 10; issue 11 item 4).

Each hostile input costs only itself: reported by line or path, the rest stored, exit 1.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simhash_store import fingerprint
from simhash_store.cli import app
from simhash_store.corpus import BINARY, SPECIAL_FILE, TOO_LARGE, Pattern, Skip, Source, walk
from simhash_store.decoding import decode
from simhash_store.errors import InputError
from simhash_store.formats import FingerprintRecord, lines, read_fingerprints, read_jsonl
from simhash_store.ingest import prepare
from simhash_store.scheme import DEFAULT
from simhash_store.store import Store
from simhash_store.terminal import json_line as _json_line

TEXT_A = "第一条新闻：市图书馆夜间阅览室正式开放，读者可以在晚上借阅图书。"
TEXT_B = "第二条新闻：城际铁路东线本月底开通运营，沿线居民出行更加方便。"
TEXT_C = "第三条新闻：老旧小区的空地变成了社区菜园，居民们轮流照看蔬菜。"
HEX = "1a9ffed40a667204"


def invoke(url, *args: str, input: str | bytes | None = None):
    env = {"SIMHASH_STORE_URL": url.render_as_string(hide_password=False)} if url is not None else {}
    return CliRunner().invoke(app, list(args), env=env, input=input, catch_exceptions=False)


def stored(url) -> dict[str, int]:
    with Store(url) as store:
        return {m.key: m.fingerprint for m in store.query(0, 64)}


def record(key, text) -> str:
    return json.dumps({"key": key, "text": text}, ensure_ascii=False)


def skips(items) -> dict[str, str]:
    return {item.where: f"{item.reason}: {item.detail}" for item in items if isinstance(item, Skip)}


# ------------------------------------------------------------ records, no database


def test_stray_quote_costs_its_own_line_not_the_rows_after_it():
    rows = ["key,fingerprint", f"a1,{HEX}", f'b2,"{HEX}', f"c3,{HEX}", f'"d4,{HEX}', f"e5,{HEX}", f'"f""6",{HEX}']
    items = list(read_fingerprints(io.BytesIO("\n".join(rows).encode()), "in.csv"))
    good = [i.key for i in items if isinstance(i, FingerprintRecord)]
    assert good == ["a1", "c3", "e5", 'f"6']
    assert set(skips(items)) == {"in.csv:3", "in.csv:5"}
    assert "unbalanced quote" in skips(items)["in.csv:3"]


PARAGRAPHS = [
    TEXT_A + "\n\n" + TEXT_B + '，"引号"，逗号',
    TEXT_B + "\r\n" + TEXT_C + "\r" + TEXT_A,
    TEXT_C,
]


def dictwriter_csv(**dialect) -> bytes:
    import csv

    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, ["key", "text", "n"], **dialect)
    writer.writeheader()
    for index, text in enumerate(PARAGRAPHS):
        writer.writerow({"key": f"k{index}", "text": text, "n": index})
    return out.getvalue().encode("utf-8")


@pytest.mark.parametrize("terminator", ["\r\n", "\n", "\r"], ids=["excel-CRLF", "LF", "CR"])
def test_a_spreadsheet_csv_with_paragraphs_in_quoted_fields_reads_every_record(terminator):
    from simhash_store.formats.delimited import delimited_rows

    data = dictwriter_csv(lineterminator=terminator)
    for size in (1, 5, 1 << 20):  # line ends and "\r\n" halves fall across reads
        rows = list(delimited_rows(Trickle(data, size), "in.csv", ",", {"key": "", "text": ""}, 1 << 20))
        assert [record for _, record in rows] == [
            {"key": f"k{i}", "text": text, "n": str(i)} for i, text in enumerate(PARAGRAPHS)
        ]
        assert [where for where, _ in rows] == ["in.csv:2", "in.csv:5", "in.csv:8"]  # each record's first line


def test_a_stray_quote_loses_only_its_line_before_many_rows_and_a_real_multiline_record():
    good = [f"g{i},{HEX}" for i in range(200)]
    rows = ["key,fingerprint", f'bad,"{HEX}', *good, f'multi,"{HEX}', '"', f'x"y,{HEX}', f"last,{HEX}"]
    items = list(read_fingerprints(io.BytesIO("\r\n".join(rows).encode()), "in.csv"))
    assert list(skips(items)) == ["in.csv:2"]
    assert "unbalanced quote" in skips(items)["in.csv:2"]
    keys = [i.key for i in items if isinstance(i, FingerprintRecord)]
    assert keys == [f"g{i}" for i in range(200)] + ["multi", 'x"y', "last"]  # "multi" spans two lines
    # a quote that closes a few lines on but leaves the wrong number of fields is a stray one too
    rows = ["key,text", 'a,"open', "b,plain", 'c,"closes",extra"', "d,plain"]
    items = list(read_jsonl_csv(rows))
    assert [where for where, record in items if isinstance(record, Skip)] == ["in.csv:2", "in.csv:4"]
    assert [record["key"] for _, record in items if isinstance(record, dict)] == ["b", "d"]
    # many stray quotes among quote-free rows: each costs its line (and the rows are searched once, not per quote)
    rows = ["key,text", *(f'k{i},"x' if i % 10 == 0 else f"k{i},x" for i in range(100))]
    items = list(read_jsonl_csv(rows))
    assert [where for where, record in items if isinstance(record, Skip)] == [
        f"in.csv:{i + 2}" for i in range(0, 100, 10)
    ]
    assert len([record for _, record in items if isinstance(record, dict)]) == 90


def read_jsonl_csv(rows):
    from simhash_store.formats.delimited import delimited_rows

    return delimited_rows(io.BytesIO("\n".join(rows).encode()), "in.csv", ",", {"key": "", "text": ""}, 1 << 20)


def test_lines_of_three_quotes_are_read_with_each_byte_parsed_a_bounded_number_of_times(tmp_path, monkeypatch):
    # ",a"," opens a quoted field after a closed one: an odd count of quotes, yet the field stays open
    # on every later line; each line's record runs to the end of the file and fails alone.
    from simhash_store.formats import delimited

    path = tmp_path / "quotes.csv"
    lines = ["key,text", "good1,first good record", *(['",a","'] * 150), "good2,last good record"]
    path.write_bytes("\n".join(lines).encode() + b"\n")
    parsed = []
    cells = delimited._cells
    monkeypatch.setattr(delimited, "_cells", lambda raw, *rest: parsed.append(len(raw)) or cells(raw, *rest))
    with path.open("rb") as stream:
        rows = list(delimited.delimited_rows(stream, "q.csv", ",", {"key": "", "text": ""}, 1 << 30))
    assert [record["key"] for _, record in rows if isinstance(record, dict)] == ["good1", "good2"]
    assert [where for where, record in rows if isinstance(record, Skip)] == [f"q.csv:{n}" for n in range(3, 153)]
    assert all("unbalanced quote" in record.detail for _, record in rows if isinstance(record, Skip))
    assert sum(parsed) <= 6 * path.stat().st_size  # each line parsed a few times, not once per line before it


def test_a_quote_that_does_not_close_within_the_size_limit_costs_its_line():
    from simhash_store.formats.delimited import delimited_rows

    data = ("key,text\n" + 'a,"never closed\n' + "".join(f"r{i},{'x' * 50}\n" for i in range(10)) + 'z,"x"\n').encode()
    rows = list(delimited_rows(io.BytesIO(data), "in.csv", ",", {"key": "", "text": ""}, 100))
    assert [where for where, record in rows if isinstance(record, Skip)] == ["in.csv:2"]
    assert [record["key"] for _, record in rows if isinstance(record, dict)] == [f"r{i}" for i in range(10)] + ["z"]


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n"], ids=["CR", "CRLF", "LF"])
def test_every_line_ending_gives_one_record_per_line_and_right_numbers(ending):
    csv_data = ending.join([b"key,fingerprint", f"a,{HEX}".encode(), b"b,zz", f"c,{HEX}".encode()]) + ending
    items = list(read_fingerprints(io.BytesIO(csv_data), "in.csv"))
    assert [i.key for i in items if isinstance(i, FingerprintRecord)] == ["a", "c"]
    assert list(skips(items)) == ["in.csv:3"]
    jsonl = ending.join([record("a", TEXT_A).encode(), b"{broken", record("c", TEXT_C).encode()])
    items = list(read_jsonl(io.BytesIO(jsonl), "in.jsonl"))
    assert [i.key for i in items if isinstance(i, Source)] == ["a", "c"]
    assert list(skips(items)) == ["in.jsonl:2"]


class Trickle(io.RawIOBase):
    """A stream that hands out a few bytes per read, as a pipe may: line ends fall across reads."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size = data, size

    def readable(self) -> bool:
        return True

    def read1(self, _: int = -1) -> bytes:
        piece, self.data = self.data[: self.size], self.data[self.size :]
        return piece

    read = read1


def test_line_reader_splits_the_same_however_the_bytes_arrive_and_drops_overlong_lines():
    data = b"one\r\ntwo\rthree\n\nfour" + b"x" * 50 + b"\r\nfive"
    expected = [(1, b"one"), (2, b"two"), (3, b"three"), (4, b""), (5, None), (6, b"five")]
    for size in (1, 2, 3, 7, 1000):
        assert list(lines(Trickle(data, size), max_line_bytes=20)) == expected


def test_line_endings_are_reported_as_written_however_the_bytes_arrive():
    import random

    from simhash_store.formats.lines import lines_with_endings

    generator = random.Random(7)
    for _ in range(200):
        data = bytes(generator.choice(b"a\r\n") for _ in range(generator.randint(0, 30)))
        for size in (1, 2, 3, 64):
            read = list(lines_with_endings(Trickle(data, size), 1 << 20))
            assert b"".join(body + ending for _, body, ending in read) == data  # so quoted line breaks are kept
            assert [number for number, _, _ in read] == list(range(1, len(read) + 1))


def test_tsv_is_tab_separated():
    data = f"key\tfingerprint\nwith, comma\t{HEX}\nt2\t{HEX}\n".encode()
    items = list(read_fingerprints(io.BytesIO(data), "legacy.TSV"))
    assert [i.key for i in items] == ["with, comma", "t2"]


def test_huge_integers_and_deep_nesting_cost_one_line_each():
    deep = "[" * 100_000 + "]" * 100_000
    data = "\n".join(
        [
            deep,
            '{"key": "k1", "fingerprint": ' + "9" * 5000 + "}",
            '{"key": ' + "7" * 5000 + ', "fingerprint": 1}',
            '{"key": "k2", "fingerprint": 2, "other": ' + "8" * 5000 + "}",  # an unrelated field: fine
            '{"key": "k3", "fingerprint": ' + deep + "}",
            '{"key": "k4", "fingerprint": 4}',
        ]
    ).encode()
    items = list(read_fingerprints(io.BytesIO(data), "in.jsonl"))
    assert [i.key for i in items if isinstance(i, FingerprintRecord)] == ["k2", "k4"]
    problems = skips(items)
    assert problems == {
        "in.jsonl:1": "bad record: JSON nested too deeply",
        "in.jsonl:2": "bad record: an integer of 5,000 digits is outside the 64-bit range",
        "in.jsonl:3": "bad key: 'key' is an integer of 5,000 digits",
        "in.jsonl:5": "bad record: JSON nested too deeply",
    }
    csv_items = list(read_fingerprints(io.BytesIO(b"key,fingerprint\nbig," + b"9" * 5000 + b"\nok,1\n"), "in.csv"))
    assert skips(csv_items) == {"in.csv:2": "bad record: a decimal of 5,000 digits is outside the 64-bit range"}


def test_keys_postgresql_cannot_hold_are_named_by_line():
    data = "\n".join(
        [
            json.dumps({"key": "nul\x00key", "text": TEXT_A}),
            json.dumps({"key": "x" * 3000, "text": TEXT_A}),
            '{"key": "\\ud800", "text": "lone surrogate key"}',
            json.dumps({"key": "good", "text": TEXT_A}),
        ]
    ).encode()
    items = list(read_jsonl(io.BytesIO(data), "-"))
    assert [i.key for i in items if isinstance(i, Source)] == ["good"]
    assert {where: reason.split(":")[0] for where, reason in skips(items).items()} == {
        "-:1": "bad key",
        "-:2": "bad key",
        "-:3": "bad key",
    }


def test_a_missing_field_is_one_error_naming_the_fields_of_the_first_record():
    data = "\n".join(json.dumps({"id": i, "body": TEXT_A}, ensure_ascii=False) for i in range(1000)).encode()
    with pytest.raises(
        InputError,
        match=r"in.jsonl:1: the first record has no field 'key' \(the key\) or 'text' "
        r"\(the text\); its fields are 'id', 'body'",
    ):
        read_jsonl(io.BytesIO(data), "in.jsonl")
    with pytest.raises(InputError, match="its columns are 'id', 'fp'"):
        read_fingerprints(io.BytesIO(b"id,fp\n1,2\n"), "in.csv")


def test_the_same_key_twice_in_one_import_is_a_collision_not_a_merge():
    data = f"key,fingerprint\ndup,{HEX}\ndup,0000000000000001\n".encode()
    items = list(read_fingerprints(io.BytesIO(data), "in.csv"))
    assert items[0] == FingerprintRecord("dup", int(HEX, 16))
    assert items[1].reason == "key collision" and items[1].where == "in.csv:3"


# ------------------------------------------------------------ files, no database


def test_exclude_reads_patterns_as_gitignore_does(tmp_path):
    for name in ("a.txt", "drafts/b.txt", "drafts/sub/c.txt", "notes/drafts/d.txt", "notes/e.log", "tmp/f.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(TEXT_A, encoding="utf-8")

    def keys(**patterns) -> list[str]:
        return sorted(item.key for item in walk([tmp_path], **patterns) if isinstance(item, Source))

    assert keys(exclude=["drafts/*"]) == ["a.txt", "notes/drafts/d.txt", "notes/e.log", "tmp/f.txt"]
    assert keys(exclude=["drafts"]) == ["a.txt", "notes/e.log", "tmp/f.txt"]  # no slash: any depth
    assert keys(exclude=["**/drafts/**", "*.log", "tmp/"]) == ["a.txt"]
    assert keys(include=["drafts/"]) == ["drafts/b.txt", "drafts/sub/c.txt", "notes/drafts/d.txt"]  # any depth
    assert keys(include=["/drafts/"]) == ["drafts/b.txt", "drafts/sub/c.txt"]
    assert keys(include=["*.txt"], exclude=["/a.txt"]) == [
        "drafts/b.txt",
        "drafts/sub/c.txt",
        "notes/drafts/d.txt",
        "tmp/f.txt",
    ]
    assert not Pattern("drafts/*").matches("notes/drafts/d.txt")


def test_a_pattern_of_many_stars_is_matched_without_backtracking_over_a_long_name():
    # Every star was [^/]* in a regex: *a*a*...*b against a file name of 250 a's (a name anyone
    # may give a file in a corpus) tried every length of every star, for hours; *-*-*-*-*.txt
    # against 250 dashes for minutes. Run apart: a regex holds the interpreter until it is done.
    code = (
        "from simhash_store.corpus import Pattern\n"
        "deep = '/'.join(['aaaaaaaa'] * 30) + '/' + 'a' * 250 + '.txt'\n"
        "print(Pattern('*a' * 19 + '*b').matches(deep), Pattern('*-*-*-*-*.txt').matches('-' * 250),\n"
        "      Pattern('**/' * 12 + 'b').matches(deep), Pattern('*a*a*a*.txt').matches(deep))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "False False False True\n"), done.stderr
    assert Pattern("*a*b*.txt").matches("x/ab.txt") and not Pattern("*a*b*.txt").matches("x/ba.txt")
    assert Pattern("a*b*c").matches("abbbc") and not Pattern("a*b*c").matches("ab/c")
    assert Pattern("**/**/x").matches("x") and Pattern("**/**/x").matches("a/b/x")


def test_a_pattern_of_many_double_stars_is_matched_without_backtracking_over_a_deep_path():
    # Each "**/" was (?:.*/)? in a regex: "**/a/" ten times before "b" against a path 40 directories
    # of "a" deep tried every split of the path among them, 23 s (4x more for each "**/" added).
    code = (
        "from simhash_store.corpus import Pattern\n"
        "deep = '/'.join(['a'] * 40) + '/c'\n"
        "print(Pattern('**/a/' * 14 + 'b').matches(deep), Pattern('**/a/' * 14 + 'c').matches(deep),\n"
        "      Pattern('a/**/' * 14 + '*b').matches(deep + '/b'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "False True True\n"), done.stderr
    assert Pattern("**/a/**/b").matches("x/a/y/z/b") and not Pattern("**/a/**/b").matches("x/ab/b")
    assert Pattern("a/**/b/**/c").matches("a/b/c") and not Pattern("a/**/b/**/c").matches("a/c/b")
    assert Pattern("**/a/**/a/x").matches("a/a/a/x") and not Pattern("**/a/**/a/x").matches("a/x")


def test_a_class_the_regex_would_read_otherwise_is_matched_as_git_matches_it():
    # [z-a] was re.error (a traceback from `add --exclude '[z-a]'`); [a&&b] printed Python's
    # FutureWarning about set operations on the terminal.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not any(Pattern("[z-a]").matches(name) for name in ("a", "z", "-"))
        assert Pattern("[!z-a]").matches("q") and not Pattern("[!z-a]").matches("/")
        assert Pattern("[a&&b]").matches("&") and Pattern("[a&&b]").matches("b")
        assert Pattern("[--]").matches("-") and Pattern("[~~]").matches("~") and Pattern("[||]").matches("|")
        assert Pattern("[a-c]x").matches("bx") and not Pattern("[a-c]x").matches("dx")


def test_an_empty_pattern_is_a_usage_error(tmp_path):
    result = invoke(None, "add", str(tmp_path), "--exclude", "")
    assert result.exit_code == 2 and "empty pattern" in result.output


def _in_thread(work, timeout: float = 20.0):
    result = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "hung"
    return result[0]


def test_fifo_socket_and_device_are_skipped_and_never_opened(tmp_path):
    (tmp_path / "good.txt").write_text(TEXT_A, encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.txt")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    (tmp_path / "null").symlink_to("/dev/null")
    items = _in_thread(lambda: list(walk([tmp_path])))
    assert [i.key for i in items if isinstance(i, Source)] == ["good.txt"]
    assert {Path(s.where).name: s.detail for s in items if isinstance(s, Skip)} == {
        "pipe.txt": "a named pipe",
        "sock": "a socket",
        "null": "a character device",
    }
    assert all(s.reason == SPECIAL_FILE and s.deliberate for s in items if isinstance(s, Skip))
    # A regular file replaced by a FIFO after the walk: opened without blocking, refused.
    raced = Source("pipe.txt", str(tmp_path / "pipe.txt"))
    prepared = _in_thread(lambda: prepare(raced, None, DEFAULT))
    assert prepared.skip.reason == SPECIAL_FILE and prepared.fingerprint is None
    server.close()


@pytest.mark.parametrize("kind", ["jsonl", "csv", "html", "warc", "parquet"])
def test_a_named_input_replaced_by_a_fifo_after_its_check_is_refused_not_waited_on(tmp_path, kind):
    # dedup and add check that a named input is a regular file before any work, then open it by
    # name: whoever may replace it (its owner, anyone who may write its directory) swapped a FIFO in
    # between, and the command waited for a writer for ever (by hand as another local user: 3 of 8
    # runs of add hung). The check is passed here by opening the FIFO where the reader opens it.
    from simhash_store.errors import SimhashStoreError
    from simhash_store.formats import read_documents

    if kind == "parquet":
        pytest.importorskip("pyarrow")
    fifo = tmp_path / f"in.{kind}"
    os.mkfifo(fifo)
    failed: list[BaseException] = []

    def read() -> None:
        try:
            list(read_documents([str(fifo)], format=kind))
        except SimhashStoreError as exc:
            failed.append(exc)

    try:
        _in_thread(read)
    finally:  # a reader still waiting (before the fix) is let go
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert failed and "not a regular file (a named pipe)" in str(failed[0]), failed
    assert "\n" not in str(failed[0])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify and O_PATH are Linux's")
@pytest.mark.parametrize("kind", ["jsonl", "html"])
def test_a_named_input_that_is_not_a_regular_file_is_never_opened_for_reading(tmp_path, kind):
    # The input was opened (without blocking) and only then found not to be a regular file: a link
    # swapped in by whoever may write its directory to a device opened that device as the victim,
    # and some act on being opened (/dev/watchdog, run as root, arms the machine's watchdog). A
    # FIFO stands in for the device: inotify reports every open for reading, none for O_PATH.
    import ctypes

    from simhash_store.errors import SimhashStoreError
    from simhash_store.formats import read_documents

    fifo = tmp_path / f"in.{kind}"
    os.mkfifo(fifo)
    libc = ctypes.CDLL(None, use_errno=True)
    watch = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert watch >= 0
    try:
        assert libc.inotify_add_watch(watch, os.fsencode(fifo), 0x20) >= 0  # IN_OPEN
        with pytest.raises(SimhashStoreError, match="not a regular file"):
            list(read_documents([str(fifo)], format=kind))
        with pytest.raises(BlockingIOError):
            os.read(watch, 4096)  # no open event: the FIFO was never opened
    finally:
        os.close(watch)


def test_a_sparse_60_gb_file_is_judged_by_its_start_or_refused_by_size(tmp_path):
    zeros = tmp_path / "zeros.txt"
    with open(zeros, "wb") as handle:
        handle.truncate(60 << 30)  # sparse: costs no disk
    text = tmp_path / "text.txt"
    with open(text, "wb") as handle:
        handle.write(TEXT_A.encode("utf-8") * 200)
        handle.truncate(60 << 30)
    binary = prepare(Source("zeros.txt", str(zeros), size=60 << 30), None, DEFAULT)
    assert binary.skip.reason == BINARY
    large = prepare(Source("text.txt", str(text), size=60 << 30), None, DEFAULT)
    assert large.skip.reason == TOO_LARGE and "64,424,509,440 bytes" in large.skip.detail


def test_explain_and_stdin_refuse_a_sparse_60_gb_file_by_its_size_in_one_line(tmp_path):
    # explain read such a file to 1 GiB before judging it, and held 2 GiB joining what it read:
    # under a memory limit a MemoryError traceback (hostile/explain_sparse_file.py).
    import resource

    small, zeros = tmp_path / "a.txt", tmp_path / "zeros.txt"
    small.write_text(TEXT_A, encoding="utf-8")
    with open(zeros, "wb") as handle:
        handle.truncate(60 << 30)  # sparse: costs no disk

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))

    for args, stdin in (([str(small), str(zeros)], None), ([str(small), "-"], zeros)):
        with open(stdin if stdin is not None else os.devnull, "rb") as given:
            done = subprocess.run(
                [sys.executable, "-m", "simhash_store.cli", "explain", *args],
                stdin=given,
                capture_output=True,
                text=True,
                timeout=300,
                preexec_fn=bounded,
            )
        shown = str(zeros) if stdin is None else "-"
        assert (done.returncode, done.stdout, done.stderr) == (
            1,
            "",
            f"Error: {shown}: too large (more than 1024 MiB)\n",
        )
    # fingerprint, add and query read standard input as one document the same way
    with open(zeros, "rb") as given:
        done = subprocess.run(
            [sys.executable, "-m", "simhash_store.cli", "fingerprint", "-"],
            stdin=given,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=bounded,
        )
    assert (done.returncode, done.stderr) == (1, "failed: -: too large (over 1,073,741,824 bytes)\n")


# ------------------------------------------------------------ encodings, no database


def test_gb18030_that_is_also_valid_utf8_reads_as_gb18030():
    data = "一些学院同时要去".encode("gb18030")
    assert data.decode("utf-8") == "һЩѧԺͬʱҪȥ"  # the premise: valid UTF-8 too
    assert decode(data).text == "一些学院同时要去" and decode(data).encoding == "gb18030"
    assert fingerprint(decode(data).text) == fingerprint("一些学院同时要去")


@pytest.mark.parametrize(
    "text",
    [
        "café résumé naïve",
        "Ελληνικά κείμενα",
        "Привет, мир",
        "שלום עולם",
        "Tiếng Việt",
        "“引号”—破折号…",
        "日本語のテキスト",
        "中",
    ],
)
def test_utf8_text_stays_utf8(text):
    assert decode(text.encode("utf-8")).text == text


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom_is_read_when_plainly_text(encoding):
    text = TEXT_A + "\nSecond line, 2024.\n"
    decoded = decode(text.encode(encoding))
    assert (decoded.text, decoded.encoding) == (text, encoding)
    assert decode((TEXT_A * 3).encode(encoding)).text == TEXT_A * 3  # no ASCII at all: no zero byte either


@pytest.mark.parametrize("encoding", ["utf-8", "gb18030", "big5"])
def test_a_few_invalid_bytes_are_replaced_and_counted(encoding):
    text = "臺北市立圖書館今日宣布，總館夜間閱覽室將延長開放時間至晚上十一點。" * 3
    data = text.encode(encoding)
    truncated = decode(data[:-1])  # cut mid-character
    left_over = 2 if encoding == "utf-8" else 1  # bytes of the cut character (3 in UTF-8, 2 in the others)
    assert truncated.encoding == encoding and truncated.replaced == left_over
    assert truncated.text == text[:-1] + "\ufffd"
    stray = data[:30] + b"\xff" + data[30:]
    decoded = decode(stray)
    assert decoded.encoding == encoding and decoded.replaced == 1 and "\ufffd" in decoded.text


# ------------------------------------------------------------ JSON lines


def test_json_lines_escape_everything_a_line_splitter_splits_at():
    breaks = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    line = _json_line({"key": f"a{breaks}b"})
    assert line.splitlines() == [line]
    assert json.loads(line)["key"] == f"a{breaks}b"


# ------------------------------------------------------------ through the CLI, on PostgreSQL


def test_add_jsonl_reports_each_bad_line_and_stores_every_good_one(database_url, tmp_path):
    hostile = [
        record("good1", TEXT_A),
        "{not json",
        '{"key": "nul\\u0000", "text": "x"}',
        '{"key": "\\udc80", "text": "x"}',
        json.dumps({"key": "k" * 3000, "text": TEXT_A}),
        '{"key": ' + "9" * 5000 + ', "text": "x"}',
        "[" * 100_000 + "]" * 100_000,
        record("good2", TEXT_B),
        '{"key": "open quote, "text": "x"}',
        record("good3", TEXT_C),
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes("\r".join(hostile).encode("utf-8"))  # CR-only line endings
    result = invoke(database_url, "add", "--jsonl", str(path))
    assert result.exit_code == 1
    reported = sorted(int(line.split(":")[2]) for line in result.output.splitlines() if line.startswith("failed:"))
    assert reported == [2, 3, 4, 5, 6, 7, 9]
    assert "added 3, updated 0, unchanged 0, skipped 0, failed 7 (of 10 inputs)" in result.output
    assert sorted(stored(database_url)) == ["good1", "good2", "good3"]


@pytest.mark.slow
def test_a_field_past_what_jsonb_holds_costs_only_its_record(database_url, tmp_path):
    # A field string over jsonb's 256 MiB (a line under --max-file-size) failed the whole run in one
    # `Error: ... string too long to represent as jsonb string`: as metadata (every record of the run
    # lost), as a keep field (dedup wrote nothing) (hostile/keep_value_past_jsonb.py).
    path = tmp_path / "big.jsonl"
    with path.open("w") as out:
        out.write(json.dumps({"key": "a", "text": TEXT_A, "x": "2024"}) + "\n")
        out.write(json.dumps({"key": "big", "text": TEXT_A + " again", "x": "y" * (1 << 28)}) + "\n")
        out.write(json.dumps({"key": "c", "text": TEXT_C, "x": "2023"}) + "\n")
    output = tmp_path / "out.jsonl"
    result = invoke(database_url, "dedup", str(path), "-o", str(output), "--keep", "field:x")
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(line)["key"] for line in output.read_text().splitlines()) == ["a", "c"]
    result = invoke(database_url, "add", "--jsonl", str(path), "--metadata-field", "x")
    assert result.exit_code == 1
    assert [line for line in result.output.splitlines() if line.startswith("failed:")] == [
        f"failed: {path}:2: bad record (metadata string at x makes the metadata more than 268,435,455 bytes, "
        "which jsonb cannot hold)"
    ]
    with Store(database_url) as store:
        assert [store.get(key).metadata for key in ("a", "big", "c")] == [{"x": "2024"}, None, {"x": "2023"}]


def test_a_missing_key_field_is_one_line(database_url, tmp_path):
    path = tmp_path / "pages.jsonl"
    path.write_text("\n".join(json.dumps({"url": f"u{i}", "body": TEXT_A}) for i in range(50)), encoding="utf-8")
    result = invoke(database_url, "add", "--jsonl", str(path))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: {path}:1: the first record has no field 'key' (the key) or 'text' (the text); "
        "its fields are 'url', 'body' (choose them with --key-field and --text-field)"
    ]


def test_dedup_of_records_without_the_named_fields_says_which_options_name_them(database_url, tmp_path):
    # dedup said which fields the first record has, but not, as add does, which options choose them.
    path = tmp_path / "pages.jsonl"
    path.write_text("\n".join(json.dumps({"url": f"u{i}", "body": TEXT_A}) for i in range(5)), encoding="utf-8")
    output = tmp_path / "clean.jsonl"
    result = invoke(database_url, "dedup", str(path), "-o", str(output))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: {path}:1: the first record has no field 'key' (the key) or 'text' (the text); "
        "its fields are 'url', 'body' (choose them with --key-field and --text-field)"
    ]
    result = invoke(database_url, "dedup", str(path), "--key-field", "url", "--html-field", "html", "-o", str(output))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: {path}:1: the first record has no field 'html' (the page); "
        "its fields are 'url', 'body' (choose them with --key-field and --html-field)"
    ]
    assert not output.exists() and stored(database_url) == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pages.jsonl"]  # no lock or temporary file left


def test_import_hostile_csv_and_tsv_stores_every_good_row(database_url, tmp_path):
    (tmp_path / "legacy.csv").write_bytes(
        b"key,fingerprint\r" + f'a1,{HEX}\rb2,"{HEX}\rc3,{HEX}\rbig,'.encode() + b"9" * 5000 + f"\rd4,{HEX}\r".encode()
    )
    (tmp_path / "legacy.tsv").write_text(f"key\tfingerprint\nt1\t{HEX}\nt1\t0000000000000001\n", encoding="utf-8")
    result = invoke(database_url, "import", str(tmp_path / "legacy.csv"), "--scheme", "zh-jieba-v1", "--no-bulk")
    assert result.exit_code == 1
    assert [line.split(": ")[1] for line in result.output.splitlines() if line.startswith("failed:")] == [
        f"{tmp_path / 'legacy.csv'}:3",
        f"{tmp_path / 'legacy.csv'}:5",
    ]
    assert "imported: 3 added, 0 updated, 0 unchanged, 2 failed" in result.output
    result = invoke(database_url, "import", str(tmp_path / "legacy.tsv"), "--scheme", "zh-jieba-v1")
    assert result.exit_code == 1 and "legacy.tsv:3: key collision" in result.output
    assert stored(database_url) == {k: int(HEX, 16) for k in ("a1", "c3", "d4", "t1")}


def test_import_a_spreadsheet_csv_whose_notes_hold_paragraphs(database_url, tmp_path):
    import csv

    with open(tmp_path / "sheet.csv", "w", newline="", encoding="utf-8") as handle:  # Excel dialect
        writer = csv.DictWriter(handle, ["key", "note", "fingerprint"])
        writer.writeheader()
        for index, text in enumerate(PARAGRAPHS):
            writer.writerow({"key": f"k{index}", "note": text, "fingerprint": f"{index:016x}"})
    result = invoke(database_url, "import", str(tmp_path / "sheet.csv"), "--scheme", "zh-jieba-v1")
    assert result.exit_code == 0, result.output
    assert "failed:" not in result.output and "imported: 3 added" in result.output
    assert stored(database_url) == {f"k{index}": index for index in range(3)}


def test_two_folders_with_one_file_name_collide_and_a_rerun_never_flips(database_url, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.txt").write_text(TEXT_A, encoding="utf-8")
    (tmp_path / "b" / "x.txt").write_text(TEXT_B, encoding="utf-8")
    arguments = ("add", str(tmp_path / "a"), str(tmp_path / "b"))
    first = invoke(database_url, *arguments)
    assert first.exit_code == 1
    assert (
        f"failed: {tmp_path / 'b' / 'x.txt'}: key collision (key 'x.txt' was given by an earlier input" in first.output
    )
    assert "added 1, updated 0, unchanged 0, skipped 0, failed 1 (of 2 inputs)" in first.output
    for _ in range(2):
        again = invoke(database_url, *arguments, "--checksum")
        assert "added 0, updated 0, unchanged 1, skipped 0, failed 1 (of 2 inputs)" in again.output
        assert stored(database_url) == {"x.txt": fingerprint(TEXT_A)}


def test_a_corpus_with_a_fifo_a_socket_a_sparse_file_and_bad_bytes(database_url, tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good.txt").write_text(TEXT_A, encoding="utf-8")
    (root / "cut.txt").write_bytes(TEXT_B.encode("utf-8")[:-1])
    (root / "gb.txt").write_bytes("一些学院同时要去".encode("gb18030"))
    (root / "utf16.txt").write_bytes((TEXT_C + "\n").encode("utf-16-le"))
    os.mkfifo(root / "pipe.txt")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "sock"))
    with open(root / "sparse.txt", "wb") as handle:
        handle.truncate(60 << 30)
    result = _in_thread(lambda: invoke(database_url, "add", str(root), "--max-file-size", "1G"), timeout=120)
    server.close()
    assert result.exit_code == 0, result.output
    assert f"skipped: {root / 'pipe.txt'}: not a regular file (a named pipe)" in result.output
    assert f"warning: {root / 'cut.txt'}: 2 invalid bytes replaced by U+FFFD (read as utf-8)" in result.output
    assert "added 4, updated 0, unchanged 0, skipped 3, failed 0 (of 7 inputs)" in result.output
    assert stored(database_url) == {
        "good.txt": fingerprint(TEXT_A),
        "cut.txt": fingerprint(TEXT_B[:-1] + "\ufffd"),
        "gb.txt": fingerprint("一些学院同时要去"),
        "utf16.txt": fingerprint(TEXT_C + "\n"),
    }


def test_query_takes_directories_and_json_lines_never_split(database_url, tmp_path):
    key = "odd\u2028key\u2029with\x85breaks"
    invoke(database_url, "add", "--jsonl", "-", input=record(key, TEXT_A) + "\n" + record("plain", TEXT_A + "。"))
    folder = tmp_path / "queries"
    (folder / "sub").mkdir(parents=True)
    (folder / "one.txt").write_text(TEXT_A, encoding="utf-8")
    (folder / "sub" / "two.txt").write_text(TEXT_A + "！", encoding="utf-8")
    result = invoke(database_url, "query", str(folder), "--json")
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["query"] for a in answers] == [str(folder / "one.txt"), str(folder / "sub" / "two.txt")]
    assert key in [m["key"] for m in answers[0]["matches"]]
    lines = [json.loads(line) for line in invoke(database_url, "dups", "--json").stdout.splitlines()]
    # A pair, or (identical fingerprints) one group line naming both.
    found = {(p["a"], p["b"]) for p in lines if "a" in p} | {tuple(sorted(p["keys"])) for p in lines if "keys" in p}
    assert found == {tuple(sorted([key, "plain"]))}


def test_near_duplicates_are_counted_in_the_summary_line(database_url, tmp_path):
    (tmp_path / "a.txt").write_text(TEXT_A, encoding="utf-8")
    (tmp_path / "b.txt").write_text(TEXT_A + "。", encoding="utf-8")
    result = invoke(database_url, "add", str(tmp_path), "--skip-near-duplicates")
    assert result.exit_code == 0
    assert (
        "added 1, updated 0, unchanged 0, skipped 0, failed 0, near-duplicates not stored 1 (of 2 inputs)"
        in result.output
    )


# ------------------------------------------------------------ repeated field names


def test_import_refuses_a_header_that_names_a_column_twice(database_url, tmp_path):
    # Read as a dict, the row kept the last "key" (b1) and the user never knew which column was stored.
    for name, separator in (("legacy.csv", ","), ("legacy.tsv", "\t")):
        path = tmp_path / name
        path.write_text(
            separator.join(["key", "fingerprint", "key"]) + f"\na1{separator}{HEX}{separator}b1\n", encoding="utf-8"
        )
        result = invoke(database_url, "import", str(path), "--scheme", "zh-jieba-v1")
        assert result.exit_code == 1
        assert result.output.splitlines() == [
            f"Error: {path}:1: the header names two columns 'key' (columns 1 and 3): "
            "rename one, each column needs a name of its own"
        ]
    from test_reliability import stored as stored_if_any

    assert stored_if_any(database_url) == {}


def test_a_json_record_with_a_repeated_member_costs_only_itself(database_url, tmp_path):
    path = tmp_path / "pages.jsonl"
    path.write_text(
        "\n".join(
            [
                record("good1", TEXT_A),
                '{"key": "shown", "text": %s, "key": "hidden"}' % json.dumps(TEXT_B, ensure_ascii=False),
                '{"key": "nested", "text": "x", "meta": {"a": 1, "a": 2}}',
                record("good2", TEXT_C),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    result = invoke(database_url, "add", "--jsonl", str(path))
    assert result.exit_code == 1
    failed = [line for line in result.output.splitlines() if line.startswith("failed:")]
    assert failed == [
        f"failed: {path}:2: bad record (the member 'key' appears twice in one object)",
        f"failed: {path}:3: bad record (the member 'a' appears twice in one object)",
    ]
    assert "added 2, updated 0, unchanged 0, skipped 0, failed 2 (of 4 inputs)" in result.output
    assert sorted(stored(database_url)) == ["good1", "good2"]
    prints = tmp_path / "prints.jsonl"
    prints.write_text(
        '{"key": "p1", "fingerprint": "%s"}\n{"key": "p2", "fingerprint": "%s", "fingerprint": 1}\n' % (HEX, HEX),
        encoding="utf-8",
    )
    imported = invoke(
        database_url, "import", str(prints), "--scheme", "multi-v3"
    )  # the scheme the store was created with
    assert imported.exit_code == 1
    assert f"failed: {prints}:2: bad record (the member 'fingerprint' appears twice in one object)" in imported.output


def test_judging_a_long_text_with_one_stray_byte_costs_memory_of_its_alphabet_not_its_length():
    # A list of every non-ASCII character was built to score the reading: 20 MB of Chinese with
    # one stray byte took 772 MB against 348 MB clean (100 MB: 3.49 GB).
    import tracemalloc

    from simhash_store import decoding

    laws = Path(__file__).parent / "data" / "laws"
    text = "".join(path.read_text("utf-8") for path in sorted(laws.glob("*.txt")))
    data = (text * (1_500_000 // len(text.encode()) + 1)).encode()[:1_500_000]
    data = data[: len(data) // 2] + b"\xff" + data[len(data) // 2 :]
    decoding._character_frequencies()  # the dictionary's table, loaded once per process
    tracemalloc.start()
    try:
        decoded = decoding.decode(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert decoded.encoding == "utf-8" and decoded.replaced >= 1
    assert peak < 8 * len(data), f"{peak:,} bytes at the peak for {len(data):,}"


def test_sixteen_decimal_digits_are_read_as_the_files_other_fingerprints_are(database_url, tmp_path):
    # A decimal fingerprint of exactly 16 digits (about 1 in 2,000 of them) was read as hex, and
    # a signed one of 16 characters refused; a hex file's all-digit values stay hex.
    decimal = tmp_path / "decimal.csv"
    decimal.write_text(
        "key,fingerprint\nfirst,1234567890123456\nlong,12345678901234567890\n"
        "signed,-123456789012345\nlater,9876543210987654\n",
        encoding="utf-8",
    )
    hexadecimal = tmp_path / "hex.csv"
    hexadecimal.write_text("key,fingerprint\nh1,1111111111111111\nh2,1a9ffed40a667204\n", encoding="utf-8")
    alone = tmp_path / "alone.jsonl"
    alone.write_text('{"key": "only", "fingerprint": "0000000000000010"}\n', encoding="utf-8")
    for path in (decimal, hexadecimal, alone):
        result = invoke(database_url, "import", str(path), "--scheme", "zh-jieba-v1", "--no-bulk")
        assert result.exit_code == 0, result.output
    assert stored(database_url) == {
        "first": 1234567890123456,
        "long": 12345678901234567890,
        "signed": (1 << 64) - 123456789012345,
        "later": 9876543210987654,
        "h1": 0x1111111111111111,
        "h2": 0x1A9FFED40A667204,
        "only": 0x10,
    }
    rows = list(read_fingerprints(io.BytesIO(decimal.read_bytes()), "d.csv", format="csv"))
    assert [row.key for row in rows] == ["first", "long", "signed", "later"]  # in the file's order
