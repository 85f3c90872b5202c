"""A scheme's jieba user dictionary, as a store records it: the path is read as an untrusted one.

Any role that may write the store (its owner, e.g. a TCP client of ``serve --listen``) can change
the scheme in ``store_info``, and with it the path every later ``query``, ``add`` or ``serve
--http`` of the local user reads; the file itself can change or go missing. Each of these is one
line (``UserDictionaryError``), from the CLI and the Python API, and touches nothing stored.

The commands run in child processes with a bound on their time and their address space: before
the check, a FIFO blocked forever and ``/dev/zero`` was read until memory ran out.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from simhash_store import SimhashStoreError, fingerprint, from_hex
from simhash_store.scheme import get_scheme
from simhash_store.store import NewDocument, Store

TEXT = "自然语言处理中的近似重复检测依赖于分词结果，词典不同则指纹不同。" * 20
WORDS = "近似重复检测 100000 n\n"
# zh-jieba-v1 with WORDS as its user dictionary, as computed before the dictionary was checked.
PINNED = 0x75FEB3A8E727F340
# Far above what a command needs (under 1 GiB of address space), far below what /dev/zero took.
ADDRESS_SPACE = 2 << 30


def url_text(url) -> str:
    return url.render_as_string(hide_password=False)


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run(url, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["SIMHASH_STORE_URL"] = url_text(url)
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a FIFO opened for reading waited forever for a writer
        preexec_fn=_bounded,
    )


def cli(url, *args: str) -> subprocess.CompletedProcess:
    return run(url, "-m", "simhash_store.cli", *args)


# What a program using the library does with a store: fingerprint with its scheme, and add files.
API = """
import sys
from simhash_store import SimhashStoreError, fingerprint, ingest
from simhash_store.corpus import walk
from simhash_store.store import Store

url, path = sys.argv[1:]
with Store(url) as store:
    try:
        fingerprint(open(path, encoding="utf-8").read(), store.scheme)
        print("fingerprint: no error")
    except SimhashStoreError as exc:
        print(f"fingerprint: {type(exc).__name__}: {exc}")
    try:
        summary = ingest.add(store, walk([path]), jobs=1)
        print(f"ingest.add: no error, {summary.added} added, failures {summary.failures}")
    except SimhashStoreError as exc:
        print(f"ingest.add: {type(exc).__name__}: {exc}")
"""


def _store_with_dictionary(url, folder: Path) -> Path:
    """A store of zh-jieba-v1 with a user dictionary, holding TEXT's fingerprint; the dictionary's path.
    (Not fingerprinted here: this process would keep the dictionary it read.)"""
    dictionary = folder / "dict.txt"
    dictionary.write_text(WORDS, encoding="utf-8")
    scheme = get_scheme("zh-jieba-v1").with_user_dict(dictionary)
    with Store(url, scheme=scheme) as store:
        store.add([NewDocument("stored.txt", PINNED)])
    return dictionary


def _point_the_scheme_at(url, path: str) -> None:
    """What a role that may write the store can do: name another file in the scheme it records."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE simhash.store_info SET scheme = jsonb_set(scheme, '{user_dict}', to_jsonb(CAST(:p AS text)))"),
            {"p": path},
        )
    engine.dispose()


def _stored(url, *keys: str) -> tuple[int, dict[str, int]]:
    """How many documents the store holds, and the fingerprints of ``keys`` (stored.txt by default)."""
    with Store(url) as store:
        return store.count(), store.fingerprints(list(keys or ["stored.txt"]))


def _case(case: str, url, folder: Path) -> tuple[Path, str]:
    """The store at ``url`` made unusable as ``case`` says; the path its scheme names and the
    words the error must say."""
    dictionary = _store_with_dictionary(url, folder)
    if case == "/dev/zero":
        _point_the_scheme_at(url, "/dev/zero")
        return Path("/dev/zero"), "user dictionary /dev/zero is not a regular file (a character device)"
    if case == "fifo":
        fifo = folder / "words.fifo"
        os.mkfifo(fifo)
        _point_the_scheme_at(url, str(fifo))
        return fifo, f"user dictionary {fifo} is not a regular file (a named pipe)"
    if case == "missing":
        dictionary.unlink()
        return dictionary, f"cannot read user dictionary {dictionary}: No such file or directory"
    assert case == "changed"
    dictionary.write_text("自然语言 100000 n\n处理中的近似 100000 n\n重复检测依赖 100000 n\n", encoding="utf-8")
    return dictionary, f"user dictionary {dictionary} has SHA-256 "


CASES = ["/dev/zero", "fifo", "missing", "changed"]


def _one_error_line(done: subprocess.CompletedProcess, expected: str) -> None:
    lines = done.stderr.splitlines()
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr[-2000:]
    assert expected in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("case", CASES)
def test_cli_query_and_add_refuse_a_user_dictionary_that_cannot_be_trusted_in_one_line(case, database_url, tmp_path):
    _, expected = _case(case, database_url, tmp_path)
    document = tmp_path / "doc.txt"
    document.write_text(TEXT, encoding="utf-8")
    _one_error_line(cli(database_url, "query", str(document)), expected)
    _one_error_line(cli(database_url, "add", str(document)), expected)
    assert _stored(database_url) == (1, {"stored.txt": PINNED})  # nothing stored, nothing changed


@pytest.mark.parametrize("case", CASES)
def test_the_python_api_refuses_a_user_dictionary_that_cannot_be_trusted(case, database_url, tmp_path):
    _, expected = _case(case, database_url, tmp_path)
    document = tmp_path / "doc.txt"
    document.write_text(TEXT, encoding="utf-8")
    done = run(database_url, "-c", API, url_text(database_url), str(document))
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    answers = done.stdout.splitlines()
    assert [line.split(":")[0] for line in answers] == ["fingerprint", "ingest.add"], done.stdout
    for line in answers:
        # ingest.add stops at it: not a failure of each document, not "too large (out of memory)".
        assert line.split(": ", 2)[1] == "UserDictionaryError", line
        assert expected in line
    assert _stored(database_url) == (1, {"stored.txt": PINNED})


def test_a_changed_dictionary_is_refused_in_this_process_too(database_url, tmp_path):
    dictionary, expected = _case("changed", database_url, tmp_path)
    with Store(database_url) as store:
        with pytest.raises(SimhashStoreError, match="as the scheme records") as raised:
            fingerprint(TEXT, store.scheme)
    assert type(raised.value).__name__ == "UserDictionaryError"
    assert expected in str(raised.value) and "\n" not in str(raised.value)
    dictionary.write_text("近似 100000 n\n", encoding="utf-8")  # not the recorded one either
    with Store(database_url) as store, pytest.raises(SimhashStoreError, match="as the scheme records"):
        fingerprint(TEXT, store.scheme)
    dictionary.write_text(WORDS, encoding="utf-8")  # the original back: it works again
    with Store(database_url) as store:
        assert fingerprint(TEXT, store.scheme) == PINNED
    dictionary.write_text("近似 100000 n\n", encoding="utf-8")
    with Store(database_url) as store:  # read once, checked: this process keeps what it checked
        assert fingerprint(TEXT, store.scheme) == PINNED


def test_the_unchanged_dictionary_gives_the_fingerprints_it_gave_before(database_url, tmp_path):
    _store_with_dictionary(database_url, tmp_path)
    document = tmp_path / "doc.txt"
    document.write_text(TEXT, encoding="utf-8")
    added = cli(database_url, "add", str(document))
    assert added.returncode == 0 and "added 1," in added.stdout, added.stderr[-2000:]
    assert _stored(database_url, "stored.txt", str(document)) == (2, {"stored.txt": PINNED, str(document): PINNED})
    found = cli(database_url, "query", str(document), "--json")
    assert found.returncode == 0, found.stderr[-2000:]
    answer = json.loads(found.stdout.splitlines()[0])
    assert from_hex(answer["fingerprint"]) == PINNED
    assert {match["key"]: match["distance"] for match in answer["matches"]} == {"stored.txt": 0, str(document): 0}


# Scheme.with_user_dict reads the path it is given: the caller's own, but a FIFO must not block it.
WITH_USER_DICT = """
import sys
from simhash_store import SimhashStoreError
from simhash_store.scheme import get_scheme

for path in sys.argv[1:]:
    try:
        get_scheme("zh-jieba-v1").with_user_dict(path)
        print("no error")
    except SimhashStoreError as exc:
        print(f"{type(exc).__name__}: {exc}")
"""


def test_with_user_dict_refuses_what_is_not_a_file_of_words_without_blocking(tmp_path):
    fifo = tmp_path / "words.fifo"
    os.mkfifo(fifo)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café 3\n".encode("latin-1"))
    large = tmp_path / "large.txt"
    with large.open("wb") as sparse:
        sparse.truncate((64 << 20) + 1)
    cases = {
        fifo: "is not a regular file (a named pipe)",
        Path("/dev/zero"): "is not a regular file (a character device)",
        tmp_path: "is not a regular file (a directory)",
        tmp_path / "missing.txt": "No such file or directory",
        large: "is larger than 64 MiB",
        latin1: "is not UTF-8 text",
    }
    done = subprocess.run(
        [sys.executable, "-c", WITH_USER_DICT, *map(str, cases)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_bounded,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers = done.stdout.splitlines()
    assert len(answers) == len(cases), done.stdout
    for (path, expected), answer in zip(cases.items(), answers):
        assert answer.startswith("UserDictionaryError: ") and str(path) in answer and expected in answer, answer


def test_a_dictionary_jieba_would_hold_in_memory_growing_with_a_words_square_is_refused(database_url, tmp_path):
    # jieba keeps every prefix of a word: one word of a million characters (a 3 MB file, within the
    # 64 MiB bound) took 23 GB before the kernel killed the process; a frequency of 5,000 digits was
    # jieba's ValueError, reported as "not UTF-8" (hostile/user_dict_long_word.py). The scheme records
    # the file's SHA-256, so a role that may write the store can name such a file as well as make one.
    import hashlib

    long_word = tmp_path / "long.txt"
    long_word.write_text("近似重复检测 5 n\n" + "近" * 200_000 + " 5 n\n", encoding="utf-8")
    huge_frequency = tmp_path / "frequency.txt"
    huge_frequency.write_text("近似重复检测 " + "9" * 5000 + " n\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", WITH_USER_DICT, str(long_word), str(huge_frequency)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_bounded,
    )
    assert done.stdout.splitlines() == [
        f"UserDictionaryError: user dictionary {long_word}, line 2: a word of 200,000 characters; at most 100 "
        "(jieba keeps every prefix of a word, so its memory grows with the square of the word's length)",
        f"UserDictionaryError: user dictionary {huge_frequency}, line 1: a frequency of 5,000 digits; at most 18",
    ], done.stderr[-2000:]

    _store_with_dictionary(database_url, tmp_path)
    engine = create_engine(database_url)
    with engine.begin() as connection:
        connection.execute(
            text(
                "UPDATE simhash.store_info SET scheme = scheme || jsonb_build_object('user_dict', CAST(:p AS text), "
                "'user_dict_sha256', CAST(:d AS text))"
            ),
            {"p": str(long_word), "d": hashlib.sha256(long_word.read_bytes()).hexdigest()},
        )
    engine.dispose()
    document = tmp_path / "doc.txt"
    document.write_text(TEXT, encoding="utf-8")
    _one_error_line(cli(database_url, "query", str(document)), "line 2: a word of 200,000 characters; at most 100")
    assert _stored(database_url) == (1, {"stored.txt": PINNED})
