"""A jieba user dictionary of one long word: jieba keeps every prefix, so memory grows with the square
of the word's length (a word of 1,000,000 characters, a 3 MB file: 23 GB, then the OOM killer).
This script runs under a 2 GiB address-space limit so it cannot take the machine down.

Run: python hostile/user_dict_long_word.py [CHARACTERS]   (default 200,000)
Before the fix: MemoryError traceback (or, without a limit, the OOM killer); a frequency of 5,000 digits
was reported as "not UTF-8". After: one UserDictionaryError line naming the line.
"""

import resource
import subprocess
import sys
import tempfile
from pathlib import Path

size = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
CODE = """
import sys
from simhash_store import fingerprint
from simhash_store.scheme import get_scheme
try:
    scheme = get_scheme("zh-jieba-v1").with_user_dict(sys.argv[1])
    print(hex(fingerprint("近似重复检测" * 50, scheme=scheme)))
except Exception as exc:
    print(type(exc).__name__, str(exc)[:300])
"""
with tempfile.TemporaryDirectory() as folder:
    for name, words in (("long", "近" * size + " 5 n\n"), ("frequency", "近似 " + "9" * 5000 + " n\n")):
        path = Path(folder) / f"{name}.txt"
        path.write_text(words, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-c", CODE, str(path)],
            capture_output=True,
            text=True,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)),
        )
        print(name, done.returncode, done.stdout.strip(), done.stderr.strip()[-300:])
