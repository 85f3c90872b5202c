"""Record ``simhash.Simhash(text).value`` of the PyPI ``simhash`` package 2.1.2 as test references.

    python tests/compat/make_pypi_simhash_reference.py

The package does not run under NumPy 2, so it lives in its own virtual environment,
``.venv-pypi-simhash`` at the repository root; this script creates it when it is missing
(``python -m venv`` and ``pip install 'numpy<2' simhash==2.1.2``) and runs itself there.
It writes ``tests/compat/pypi_simhash_reference.json``: for each case either a literal
text or a slice of a file of the shared corpus (``../shared/corpus`` from the repository
root, never copied here) with the SHA-256 of the slice, and the package's value.
``tests/test_compat.py`` reads the cases with :func:`case_text` from this file, so the
test needs neither the package nor its environment.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import unicodedata
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
PACKAGE_VENV = REPO / ".venv-pypi-simhash"
OUTPUT = Path(__file__).with_name("pypi_simhash_reference.json")
PACKAGE = "simhash==2.1.2"
WIKI = "zh-wiki/cmrc2018-contexts.jsonl"

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "A near-duplicate detector must tolerate small edits such as typos, reordered clauses and added whitespace.",
    "SimHash maps a document to a short fingerprint whose Hamming distance tracks the cosine similarity of feature vectors.",
    "Charikar's construction projects each weighted feature onto random hyperplanes and keeps the signs.",
    "Search engines crawl billions of pages a day; many of them differ only in advertisements and timestamps.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
    "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse.",
    "PostgreSQL stores the fingerprint as a signed bigint and indexes four sixteen-bit blocks of it.",
    "Please find attached the quarterly report for Q3 2023, revenue grew 12% year over year.",
    "Please find attached the quarterly report for Q3 2023; revenue grew 12 percent year over year.",
    "ERROR 2024-01-15 10:32:07 connection refused (host=db01, port=5432, retries=3)",
    "def fingerprint(text: str, scheme: Scheme) -> int: return _simhash(tokens, weights, scheme)",
    "To be, or not to be, that is the question: Whether 'tis nobler in the mind to suffer.",
    "The mitochondrion is the powerhouse of the cell.",
    "Terms and Conditions: by using this website you agree to the following terms and conditions of use.",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.",
    "HELLO WORLD, THIS TEXT IS WRITTEN IN CAPITAL LETTERS ONLY!",
    "hello world, this text is written in capital letters only!",
    "snake_case_identifiers_keep_their_underscores because the package counts _ as a word character",
    "e-mail: someone@example.com, phone +1 (555) 010-9999, web https://example.com/path?q=1&r=2",
    "Version 2.1.2 fixed a bug; version 2.1.1 did not.",
    "One.",
    "Go!",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
    "The rain in Spain stays mainly in the plain. The rain in Spain stays mainly in the plain.",
    "Naïve café owners in Zürich served crème brûlée to the señor from São Paulo.",
    "Straße STRASSE strasse",
    "ΣΟΦΟΣ σοφός — Greek has a final sigma.",
    "İstanbul and ISTANBUL lower-case differently.",
    "Москва — столица России.",
]

MIXED = [
    "Python 3.11 发布了新的特性，包括更快的 CPython 解释器。",
    "我们使用 PostgreSQL 存储 SimHash 指纹，并用 Hamming 距离检索近似重复的文档。",
    "iPhone 15 Pro Max 售价 9999 元起，9 月 22 日正式发售。",
    "《中华人民共和国民法典》第1165条：行为人因过错侵害他人民事权益造成损害的，应当承担侵权责任。",
    "COVID-19 疫情期间，WHO 发布了多份指南（guidelines）。",
    "第一章 总则 Chapter 1 General Provisions",
    "张三（Zhang San）于2023年加入ABC公司，任CTO一职。",
    "ＡＢＣ全角字母与ABC半角字母，１２３全角数字与123半角数字。",
    "GDP 增长 5.2%，CPI 上涨 0.2%，PPI 下降 3.0%。",
    "这是一段测试文本 this is a test text 这是一段测试文本 this is a test text",
    "東京都と北京市と서울특별시",
    "繁體中文與简体中文混合的句子，例如「資料庫」和“数据库”。",
    "😀 今天心情很好 😀 good mood today 🎉🎉",
    "价格：¥1,299.00（含税）/ Price: $179.99 (tax incl.)",
    "电子邮件 someone@example.com，网址 https://example.cn/路径?参数=值",
    "韩语 한국어、日语 日本語、俄语 русский、阿拉伯语 العربية",
    "代码 snake_case 与 camelCase 以及 kebab-case",
    "第Ⅻ条 ²³ 上标数字 ① 圈码数字",
    "中英文之间有空格 vs 中英文之间没有空格vs",
    "HTTP 404 Not Found：您访问的页面不存在。",
]

EDGE = [
    "",
    " ",
    "\n\t\r \u3000",
    "a",
    "A",
    "中",
    "ab",
    "abc",
    "abcd",
    "abcde",
    "中文",
    "中文字",
    "中文字符",
    "中文字符串",
    "!!!",
    "，。！？、；：“”（）《》",
    "...---...",
    "😀",
    "😀😀😀😀",
    "hello 😀 world",
    "_",
    "____",
    "a_b_c",
    "12",
    "1234567",
    "²³",
    "Ⅻ",
    "ＡＢＣＤＥ",
    "ｈｅｌｌｏ",
    "e\u0301te\u0301",
    "\u200b\u200b\u200b",
    "𠀀𠀁𠀂𠀃𠀄",
    "〇一二三四",
    "\u9fcc\u9fcd\u9fff\u4e00",
    "ﾊﾝｶｸｶﾀｶﾅ",
    "\x00\x01abc\x7f",
    "a" * 1000,
    "ab" * 500,
    "中文" * 300,
    # 210 distinct features each counted more than 50 times: the package's separate path
    # for heavy features, and its periodic collapse of the partial sums.
    "".join(chr(0x4E00 + k) * 60 for k in range(210)),
]


def reference_cases() -> list[dict]:
    """The cases, without values: literal texts and slices of the shared corpus."""
    cases: list[dict] = [{"text": text, "kind": "edge"} for text in EDGE]
    cases += [{"text": text, "kind": "english"} for text in ENGLISH]
    cases += [{"text": text, "kind": "mixed"} for text in MIXED]
    wiki_lines = _corpus_lines(WIKI)
    for line in range(0, len(wiki_lines) - 1, 10):
        text = json.loads(wiki_lines[line])["text"]
        cases.append({"corpus": WIKI, "line": line, "start": 0, "end": len(text)})
    for line in range(5, 200, 10):  # short texts: a few characters from the middle of a paragraph
        text = json.loads(wiki_lines[line])["text"]
        start = len(text) // 2
        cases.append({"corpus": WIKI, "line": line, "start": start, "end": start + 1 + line % 12})
    laws = sorted(p.relative_to(CORPUS).as_posix() for p in (CORPUS / "zh-laws").glob("*.txt"))
    for index, law in enumerate(laws[::15]):
        end = None if index % 4 == 0 else 1500 + 100 * index
        cases.append({"corpus": law, "start": 0, "end": end})
    revisions = sorted(p.relative_to(CORPUS).as_posix() for p in (CORPUS / "zh-law-revisions").glob("*/*.txt"))
    for revision in revisions[:12]:
        cases.append({"corpus": revision, "start": 0, "end": 3000})
    for case in cases:
        if "corpus" in case:
            case["sha256"] = hashlib.sha256(case_text(case, CORPUS).encode("utf-8")).hexdigest()
    return cases


@cache
def _corpus_text(relative: str, corpus: Path = CORPUS) -> str:
    # Decoded from bytes so that no newline translation happens.
    return (corpus / relative).read_bytes().decode("utf-8")


def case_text(case: dict, corpus: Path = CORPUS) -> str:
    """The text of a case: its literal text, or its slice of a corpus file (or JSONL record)."""
    if "text" in case:
        return case["text"]
    if "line" in case:
        text = json.loads(_corpus_lines(case["corpus"], corpus)[case["line"]])["text"]
    else:
        text = _corpus_text(case["corpus"], corpus)
    return text[case["start"] : case["end"]]


@cache
def _corpus_lines(relative: str, corpus: Path = CORPUS) -> list[str]:
    return _corpus_text(relative, corpus).split("\n")


def _package_values(cases: list[dict]) -> list[str]:
    from simhash import Simhash

    return [format(Simhash(case_text(case)).value, "016x") for case in cases]


def _run_in_package_venv() -> None:
    python = PACKAGE_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PACKAGE_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "numpy<2", PACKAGE], check=True)
    subprocess.run([str(python), __file__], check=True)


def main() -> None:
    # Check the distribution, not the import: simhash-pybind installs a module named simhash too.
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("simhash")
    except PackageNotFoundError:
        installed = None
    if installed != PACKAGE.split("==")[1]:
        if Path(sys.prefix).resolve() == PACKAGE_VENV.resolve():
            raise SystemExit(f"{PACKAGE_VENV} has simhash {installed}, not {PACKAGE}")
        _run_in_package_venv()
        return
    import numpy

    cases = reference_cases()
    for case, value in zip(cases, _package_values(cases)):
        case["simhash"] = value
    reference = {
        "about": f"simhash.Simhash(text).value of the PyPI package {PACKAGE} at its defaults, as 16 hex digits; "
        "corpus paths are relative to ../shared/corpus from the repository root and slices count characters; "
        "made by tests/compat/make_pypi_simhash_reference.py",
        "python": sys.version.split()[0],
        "unicode": unicodedata.unidata_version,
        "numpy": numpy.__version__,
        "cases": cases,
    }
    OUTPUT.write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {OUTPUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
