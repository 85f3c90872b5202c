"""Random patterns and paths: the matcher against the one before (copied to simhash_store/_h16oldcorpus.py
from the parent commit: git show e7b2028:simhash_store/corpus.py), and `**/a/` repeated against a deep path."""

import random
import time
import warnings

warnings.simplefilter("ignore")
from simhash_store import _h16oldcorpus as old  # noqa: E402
from simhash_store.corpus import Pattern  # noqa: E402

random.seed(5)
atoms = ["a", "b", "*", "?", "/", "**/", "[ab]", "[!a]", "**", "ab", "/**"]
names = ["a", "b", "ab", "ba", "aab", "bb"]
n = bad = 0
start = time.time()
while time.time() - start < 60:
    body = "".join(random.choice(atoms) for _ in range(random.randint(1, 8)))
    if not body.strip("/"):
        continue
    new, before = Pattern(body), old.Pattern(body)
    for _ in range(20):
        path = "/".join(random.choice(names) for _ in range(random.randint(1, 6)))
        for directory in (False, True):
            n += 1
            if new.matches(path, directory=directory) != before.matches(path, directory=directory):
                bad += 1
                if bad < 10:
                    print("DIFF", repr(body), repr(path), directory)
print(n, "compared,", bad, "differ")
deep = "/".join(["a"] * 40) + "/c"
for k in (10, 20, 40):
    start = time.time()
    print(k, Pattern("**/a/" * k + "b").matches(deep), round(time.time() - start, 4))
print(Pattern("**/a/" * 10 + "c").matches(deep), Pattern("a/**/" * 3 + "*a*a*/**/c").matches(deep))
