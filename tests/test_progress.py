"""Progress on long work: a bar with percentage and ETA on a terminal, nothing on a pipe or with
--quiet, and library callbacks whose counts only grow and end at the total.

The terminal is a real pseudo-terminal (``pty``) on the standard error of a real process:
rich decides from ``isatty`` alone, as it does for a user.
"""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich import filesize

from simhash_store import calibrate as calibration
from simhash_store import formats, progress
from simhash_store.dedup import dedup_files, dedup_output
from simhash_store.store import Store

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "corpus"
BAR = "━"  # rich's bar, drawn only on a terminal


def _texts() -> dict[str, str]:
    return {path.stem: path.read_text(encoding="utf-8") for path in sorted(EXAMPLES.glob("*.txt"))}


def _jsonl(path: Path) -> Path:
    lines = [json.dumps({"key": name, "text": text}, ensure_ascii=False) for name, text in _texts().items()]
    lines += [
        json.dumps({"key": f"{name}-copy", "text": text + "\n（完）"}, ensure_ascii=False)
        for name, text in _texts().items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _environment(url) -> dict[str, str]:
    env = dict(
        os.environ, TERM="xterm-256color", COLUMNS="160", SIMHASH_STORE_URL=url.render_as_string(hide_password=False)
    )
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR"):
        env.pop(name, None)
    return env


def _on_terminal(url, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, what reached the terminal) of the command with its stderr on a pseudo-terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "simhash_store.cli", *args],
        env=_environment(url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    seen = bytearray()
    stdout = bytearray()
    assert process.stdout is not None
    streams = {leader: seen, process.stdout.fileno(): stdout}
    while streams:  # both read as they come: a full terminal buffer would stop the command
        ready, _, _ = select.select(list(streams), [], [], 300)
        assert ready, "the command wrote nothing for 300 s"
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's last writer has gone
                chunk = b""
            if chunk:
                streams[fd] += chunk
            else:
                del streams[fd]
    os.close(leader)
    code = process.wait(timeout=300)
    return code, stdout.decode("utf-8", "replace"), seen.decode("utf-8", "replace")


def _piped(url, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", *args],
        env=_environment(url),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _assert_bar_with_eta(terminal: str) -> None:
    assert BAR in terminal
    assert "0%" in terminal and "100%" in terminal  # drawn at the start, and once more at the end
    assert "ETA" in terminal
    assert "B/s" in terminal  # the rate, in bytes per second (kB/s, MB/s)


def _assert_no_progress(stderr: str) -> None:
    assert BAR not in stderr and "ETA" not in stderr and "%" not in stderr
    assert "\x1b[" not in stderr  # no cursor movement or colour either


def test_add_jsonl_shows_percentage_and_eta_of_the_file_on_a_terminal(database_url, tmp_path):
    source = _jsonl(tmp_path / "crawl.jsonl")
    code, stdout, terminal = _on_terminal(database_url, "add", "--jsonl", str(source))
    assert code == 0, terminal
    _assert_bar_with_eta(terminal)
    assert "adding" in terminal and "docs" in terminal
    assert BAR not in stdout and "added 10" in stdout  # the summary, on stdout as before
    assert f"/{filesize.decimal(source.stat().st_size)}" in terminal  # the total is the file's size


def test_dedup_of_a_file_shows_percentage_and_eta_on_a_terminal(database_url, tmp_path):
    source = _jsonl(tmp_path / "crawl.jsonl")
    code, stdout, terminal = _on_terminal(database_url, "dedup", str(source), "-o", "-")
    assert code == 0, terminal
    _assert_bar_with_eta(terminal)
    assert "deduplicating" in terminal
    kept = [json.loads(line)["key"] for line in stdout.splitlines()]
    assert kept == list(_texts())  # stdout holds the records alone, no progress mixed in
    assert "kept 5, duplicates 5" in terminal


def test_import_shows_percentage_on_a_terminal(database_url, tmp_path):
    source = tmp_path / "legacy.csv"
    source.write_text("key,fingerprint\n" + "".join(f"doc-{n},{n:016x}\n" for n in range(2000)), encoding="utf-8")
    code, _, terminal = _on_terminal(database_url, "import", str(source), "--scheme", "pypi-simhash", "--no-bulk")
    assert code == 0, terminal
    _assert_bar_with_eta(terminal)
    assert "importing" in terminal


@pytest.mark.parametrize("command", ["add", "dedup"])
def test_nothing_but_the_summary_reaches_a_pipe(database_url, tmp_path, command):
    source = _jsonl(tmp_path / "crawl.jsonl")
    args = (
        ["add", "--jsonl", str(source)]
        if command == "add"
        else ["dedup", str(source), "-o", str(tmp_path / "out.jsonl")]
    )
    result = _piped(database_url, *args)
    assert result.returncode == 0, result.stderr
    _assert_no_progress(result.stderr)
    assert "kept 5" in result.stderr if command == "dedup" else "added 10" in result.stdout


@pytest.mark.parametrize("command", ["add", "dedup", "recluster", "dups"])
def test_quiet_draws_nothing_on_a_terminal(database_url, tmp_path, command):
    source = _jsonl(tmp_path / "crawl.jsonl")
    args = {
        "add": ["add", "--jsonl", str(source), "--quiet"],
        "dedup": ["dedup", str(source), "-o", str(tmp_path / "out.jsonl"), "--quiet"],
        "recluster": ["recluster", "--quiet"],
        "dups": ["dups", "--quiet"],
    }[command]
    code, _, terminal = _on_terminal(database_url, *args)
    assert code == 0, terminal
    _assert_no_progress(terminal)
    assert "finding" not in terminal and "reclustering" not in terminal  # no spinner either
    assert terminal.strip() == "" or command == "dups"  # dups still counts what it found
    if command == "dedup":
        assert len((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()) == 5


def _assert_grows_to_the_end(calls: list[tuple[int, int | None]]) -> None:
    assert calls
    done = [d for d, _ in calls]
    assert done == sorted(done) and len(set(done)) == len(done)  # only grows
    last_done, last_total = calls[-1]
    assert last_total is not None and last_done == last_total


def test_the_counting_reader_reports_every_byte_read_up_to_the_size(tmp_path):
    source = _jsonl(tmp_path / "crawl.jsonl")
    calls: list[tuple[int, int | None]] = []
    with open(source, "rb") as raw:
        size = progress.size_of(raw)
        stream = progress.counting_reader(raw, lambda done, total: calls.append((done, total)), total=size)
        lines = stream.read().splitlines()
    assert len(lines) == 10
    assert size == source.stat().st_size
    _assert_grows_to_the_end(calls)
    assert progress.size_of(io.BytesIO(b"x")) is None  # no file behind it: the total is unknown


def test_the_counting_reader_hands_on_a_record_from_a_pipe_that_is_still_open():
    # A crawler writing records into `add --jsonl -` keeps the pipe open: its first record must be
    # read as soon as it arrives (add checks it, then starts its workers), not once 64 KiB came.
    read_end, write_end = os.pipe()
    got: list[tuple[int, bytes | None]] = []
    with open(read_end, "rb") as pipe, open(write_end, "wb", buffering=0) as writer:
        stream = progress.counting_reader(pipe, lambda done, total: None)
        reader = threading.Thread(target=lambda: got.append(next(formats.lines(stream))), daemon=True)
        reader.start()
        writer.write(b'{"key": "a"}\n')
        reader.join(60)  # a deadlock guard, not a measurement: the record is there long before
        finished = not reader.is_alive()
        writer.close()  # lets a reader still waiting for more bytes end
        reader.join()
    assert finished, "the first record waited for more bytes from the pipe"
    assert got == [(1, b'{"key": "a"}')]


def test_the_input_layer_reports_the_bytes_of_a_file_read(tmp_path):
    source = _jsonl(tmp_path / "crawl.jsonl")
    size = source.stat().st_size
    calls: list[tuple[int, int | None]] = []
    read = list(formats.read_records(str(source), on_read=lambda done: calls.append((done, size))))
    assert len(read) == 10
    _assert_grows_to_the_end(calls)


def test_dedup_files_reports_the_bytes_of_every_input_up_to_their_total(database_url, tmp_path):
    first = _jsonl(tmp_path / "a.jsonl")
    second = tmp_path / "b.jsonl"
    second.write_text(
        json.dumps({"key": "other", "text": "完全不同的一段文字，讲的是另一件事情。" * 5}, ensure_ascii=False) + "\n"
    )
    calls: list[tuple[int, int | None]] = []
    inputs = [str(first), str(second)]
    writer = dedup_output(inputs, ["jsonl", "jsonl"], str(tmp_path / "out.jsonl"), "jsonl")
    with Store(database_url) as store:
        counts = dedup_files(
            inputs, ["jsonl", "jsonl"], writer, store=store, on_progress=lambda d, t: calls.append((d, t))
        )
    assert counts.kept == 6
    _assert_grows_to_the_end(calls)
    assert calls[-1][1] == first.stat().st_size + second.stat().st_size
    assert any(done == first.stat().st_size for done, _ in calls)  # the first file ends where the second starts


def test_calibrate_reports_the_fingerprints_it_computes_up_to_their_total():
    calls: list[tuple[int, int | None]] = []
    result = calibration.calibrate(list(_texts().items()), sample=3, on_progress=lambda d, t: calls.append((d, t)))
    assert result.documents == 3
    _assert_grows_to_the_end(calls)
    assert calls[-1][0] == 3 * (1 + len(calibration.LIGHT) + len(calibration.HEAVY))
