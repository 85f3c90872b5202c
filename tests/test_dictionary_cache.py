"""The dictionary cache and the tokenizer registry: speed may depend on them, fingerprints never. No database.

A command's first run builds jieba's prefix dictionary and the scheme's vocabulary and
keeps them in the per-user cache; later runs load them. Whatever state the cache is in
(missing, damaged, another user's, unwritable, written by several processes at once),
fingerprints are those of the pinned values in test_fingerprint.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from simhash_store import DEFAULT, SchemeError, cache, fingerprint, tokens
from simhash_store.tokenizers import TOKENIZERS, Tokenizer, register_tokenizer

# One test process for the module (--dist loadgroup): the reference and the filled cache, each a
# process building jieba's tables, are then made once rather than once per process.
pytestmark = pytest.mark.xdist_group("dictionary-cache")

CRIMINAL_LAW = (
    "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，结合我国同犯罪作斗争的具体经验及实际情况，制定本法。"
)
RAILWAY = "大莱龙铁路位于山东省北部环渤海地区，西起位于益羊铁路的潍坊大家洼车站，向东经海化、寿光、寒亭、昌邑、平度、莱州、招远、终到龙口。"
# zh-jieba-v1, as pinned in test_fingerprint.py.
PINNED = {CRIMINAL_LAW: 0x925D839787D42440, RAILWAY: 0x3D71B5D0A2D63D68}

# A fresh process: the cache is read (or written) once per process.
_RUN = """
import json, sys
from simhash_store import cache
written = []
original = cache.store
def store(kind, key, arrays):
    if cache.cache_dir() is not None:
        written.append(kind)
    original(kind, key, arrays)
cache.store = store
from simhash_store import fingerprint
texts = json.loads(sys.argv[1])
print(json.dumps({"fingerprints": [fingerprint(t) for t in texts] + [fingerprint(t, "classic-tfidf-top50") for t in texts],
                  "written": sorted(written)}))
"""


def run(cache_dir: str | Path, tmp_path: Path) -> dict:
    """Fingerprints of the pinned texts (default scheme, then classic-tfidf-top50) in a new process."""
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(list(PINNED))],
        env={**os.environ, "SIMHASH_STORE_CACHE_DIR": str(cache_dir), "TMPDIR": str(temporary)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stderr == ""
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list[int]:
    """Fingerprints with the cache turned off: everything built from jieba's files."""
    tmp_path = tmp_path_factory.mktemp("reference")
    values = run("", tmp_path)
    assert values["written"] == []
    assert values["fingerprints"][: len(PINNED)] == list(PINNED.values())
    return values["fingerprints"]


@pytest.fixture(scope="module")
def _filled(tmp_path_factory, reference) -> Path:
    """A cache directory as a first run leaves it (that run is checked in the test below); copied per test."""
    tmp_path = tmp_path_factory.mktemp("filled")
    first = run(tmp_path / "cache", tmp_path)
    assert first == {"fingerprints": reference, "written": ["jieba-idf", "jieba-prefix-dictionary", "vocabulary"]}
    return tmp_path / "cache"


@pytest.fixture
def filled_cache(tmp_path, _filled) -> Path:
    """A private copy of a cache directory filled by a first run: its files, modes and all."""
    return Path(shutil.copytree(_filled, tmp_path / "cache"))


def test_first_run_fills_the_cache_and_the_next_reads_it_with_the_same_fingerprints(tmp_path, reference):
    first = run(tmp_path / "cache", tmp_path)
    assert first["fingerprints"] == reference
    assert first["written"] == ["jieba-idf", "jieba-prefix-dictionary", "vocabulary"]
    assert all((path.stat().st_mode & 0o077) == 0 for path in (tmp_path / "cache").iterdir())
    second = run(tmp_path / "cache", tmp_path)
    assert second == {"fingerprints": reference, "written": []}
    # jieba's own cache in the shared temporary directory is neither read nor written.
    assert list((tmp_path / "tmp").iterdir()) == []


def test_damaged_cache_files_are_rebuilt_not_believed(tmp_path, reference, filled_cache):
    directory = filled_cache
    entries = sorted(directory.iterdir())
    assert len(entries) == 3
    idf, prefix, vocabulary = entries
    prefix.write_bytes(prefix.read_bytes()[: prefix.stat().st_size // 2])  # cut short
    content = bytearray(vocabulary.read_bytes())
    content[-5] ^= 0x01  # one bit of one word's hash
    vocabulary.write_bytes(bytes(content))
    idf.write_bytes(b"")
    damaged = run(directory, tmp_path)
    assert damaged == {"fingerprints": reference, "written": ["jieba-idf", "jieba-prefix-dictionary", "vocabulary"]}
    assert run(directory, tmp_path) == {"fingerprints": reference, "written": []}


def _entries(directory: Path) -> dict[str, tuple[dict, dict[str, np.ndarray]]]:
    """Every entry of a cache directory: kind -> (key, arrays), read through the cache itself."""
    entries = {}
    for path in directory.iterdir():
        kind = path.name.rsplit("-", 1)[0]
        header = json.loads(path.read_bytes().split(b"\n", 2)[1])
        key = json.loads(header["key"])
        entries[kind] = (key, cache.load(kind, key))
    return entries


def _a_word_short(arrays: dict) -> dict:
    words = arrays["words"].tobytes().decode("utf-8").split("\n")
    return arrays | {"words": cache.join_strings(words[:-1])}


def _second_array_missing(arrays: dict) -> dict:
    second = list(arrays)[1]  # frequencies, idf, idf
    return {name: array for name, array in arrays.items() if name != second}


def _last_array_one_value_short(arrays: dict) -> dict:
    last = list(arrays)[-1]  # total, median, hashes
    return arrays | {last: arrays[last][:-1]}


def _second_array_narrowed(arrays: dict) -> dict:
    second = list(arrays)[1]  # int64 frequencies and float64 IDFs, stored as float32
    return arrays | {second: arrays[second].astype(np.float32)}


def _last_array_reinterpreted(arrays: dict) -> dict:
    last = list(arrays)[-1]  # the same bytes, read big-endian: the header's type is outside the checksum
    return arrays | {last: arrays[last].view(arrays[last].dtype.newbyteorder(">"))}


@pytest.mark.parametrize(
    "damage",
    [
        _a_word_short,
        _second_array_missing,
        _last_array_one_value_short,
        _second_array_narrowed,
        _last_array_reinterpreted,
    ],
)
def test_well_formed_entries_holding_the_wrong_table_are_rebuilt(
    tmp_path, monkeypatch, reference, damage, filled_cache
):
    """Entries that pass every file check (header, key, checksum) but hold another table's shape."""
    directory = filled_cache
    entries = _entries(directory)
    assert sorted(entries) == ["jieba-idf", "jieba-prefix-dictionary", "vocabulary"]
    assert list(entries["vocabulary"][1]) == ["words", "idf", "hashes"]
    monkeypatch.setenv(cache.CACHE_DIR_VARIABLE, str(directory))
    for kind, (key, arrays) in entries.items():
        cache.store(kind, key, damage(arrays))
        assert cache.load(kind, key) is not None  # the file checks pass: only the table's checks can refuse it
    damaged = run(directory, tmp_path)
    assert damaged == {"fingerprints": reference, "written": ["jieba-idf", "jieba-prefix-dictionary", "vocabulary"]}
    assert run(directory, tmp_path) == {"fingerprints": reference, "written": []}


def test_a_cache_directory_that_cannot_be_written_only_costs_time(tmp_path, reference):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert run(blocker / "cache", tmp_path)["fingerprints"] == reference


@pytest.mark.slow
def test_processes_filling_an_empty_cache_at_once_agree(tmp_path, reference):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "SIMHASH_STORE_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(temporary)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _RUN, json.dumps(list(PINNED))], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [json.loads(process.communicate(timeout=600)[0]) for process in processes]
    assert [output["fingerprints"] for output in outputs] == [reference] * 3
    assert run(tmp_path / "cache", tmp_path) == {"fingerprints": reference, "written": []}
    assert not [path for path in (tmp_path / "cache").iterdir() if path.name.startswith(".")]  # no temporary left


# ---------------------------------------------------------------- the cache file format, in this process


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(cache.CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    return tmp_path / "cache"


KEY = {"source": "test", "version": 1}
ARRAYS = {"words": cache.join_strings(["中国", "", "知乎"]), "values": np.arange(3, dtype=np.int64)}


def test_an_entry_reads_back_only_under_its_own_key(cache_dir):
    cache.store("test", KEY, ARRAYS)
    loaded = cache.load("test", KEY)
    assert cache.split_strings(loaded["words"], 3) == ["中国", "", "知乎"]
    assert loaded["values"].tolist() == [0, 1, 2]
    assert cache.load("test", {**KEY, "version": 2}) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda content: content[:-1],
        lambda content: content + b"\0",
        lambda content: content[:10],
        lambda content: b"",
        lambda content: content.replace(b"source", b"sourcf", 1),  # a header edited to claim another key
        lambda content: content[:-8] + bytes(8),
    ],
    ids=["one byte short", "one byte more", "header cut", "empty", "edited header", "zeroed values"],
)
def test_a_damaged_entry_is_not_loaded(cache_dir, damage):
    cache.store("test", KEY, ARRAYS)
    (path,) = cache_dir.iterdir()
    path.write_bytes(damage(path.read_bytes()))
    assert cache.load("test", KEY) is None


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_an_entry_others_could_have_written_is_not_loaded(cache_dir):
    cache.store("test", KEY, ARRAYS)
    (path,) = cache_dir.iterdir()
    path.chmod(0o666)
    assert cache.load("test", KEY) is None


def test_strings_with_a_newline_are_not_cached():
    assert cache.join_strings(["a\nb"]) is None


# ---------------------------------------------------------------- the tokenizer registry


def test_every_tokenizer_either_segments_text_or_reads_weighted_items():
    for tokenizer in TOKENIZERS.values():
        assert (tokenizer.segment is None) != (tokenizer.read is None)
    assert [name for name, t in TOKENIZERS.items() if t.weighted_input] == ["weighted", "seed-weighted"]
    assert [name for name, t in TOKENIZERS.items() if t.words] == ["jieba", "rjieba", "multi-rjieba", "multi-jieba"]
    assert [name for name, t in TOKENIZERS.items() if t.scripts] == ["multi-rjieba", "multi-jieba"]


def test_a_registered_tokenizer_is_usable_in_a_scheme_with_what_it_declares():
    register_tokenizer(Tokenizer("test-spaces", segment=lambda text, scheme: text.split(" ")))
    scheme = replace(
        DEFAULT, name="test-spaces", tokenizer="test-spaces", known_words_only=False, bigram_weight=0.0, weighting="tf"
    )
    assert tokens("alpha beta gamma", scheme) == ["alpha", "beta", "gamma"]
    assert fingerprint("alpha beta gamma", scheme) == fingerprint("gamma alpha beta", scheme)
    with pytest.raises(SchemeError, match="known_words_only needs a jieba tokenizer"):
        replace(scheme, known_words_only=True)  # it did not declare words


def test_rjieba_refuses_a_user_dictionary_when_it_segments(tmp_path):
    dictionary = tmp_path / "words.txt"
    dictionary.write_text("大莱龙铁路 10 n\n", encoding="utf-8")
    scheme = replace(DEFAULT, tokenizer="rjieba").with_user_dict(dictionary)
    with pytest.raises(SchemeError, match="rjieba cannot load a user dictionary"):
        fingerprint(RAILWAY, scheme)


def test_jieba_is_imported_without_pkg_resources_and_opens_its_own_files():
    # A fresh process: jieba is imported once. Its data files are opened without
    # pkg_resources, and pkg_resources stays importable for anything else.
    code = """
import sys
from importlib.resources import files
from simhash_store.dictionaries import _jieba_module
jieba = _jieba_module()
with jieba.Tokenizer().get_dict_file() as dictionary:
    same = dictionary.read() == (files("jieba") / "dict.txt").read_bytes()
print(same, "pkg_resources" in sys.modules)
from simhash_store import fingerprint
print(hex(fingerprint(sys.argv[1])))
"""
    result = subprocess.run([sys.executable, "-c", code, CRIMINAL_LAW], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True False", hex(PINNED[CRIMINAL_LAW])]
