"""The pattern translation without backtracking against the one before it, on random patterns and paths."""

import importlib.util
import random
import sys
import time

from simhash_store.corpus import Pattern

spec = importlib.util.spec_from_file_location("simhash_store.old_corpus", sys.argv[1])
old = importlib.util.module_from_spec(spec)
sys.modules["simhash_store.old_corpus"] = old
spec.loader.exec_module(old)
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
alphabet = ["a", "b", "-", ".", "/", "*", "**", "?", "[ab]", "[!a]", "\\*", "**/", "/**"]
names = "ab-./"
checked = 0
for _ in range(40000):
    body = "".join(random.choice(alphabet) for _ in range(random.randint(1, 7)))
    try:
        new_pattern, old_pattern = Pattern(body), old.Pattern(body)
    except ValueError:
        continue
    for _ in range(20):
        path = "".join(random.choice(names) for _ in range(random.randint(1, 10))).strip("/")
        if not path or "//" in path:
            continue
        for directory in (False, True):
            a = new_pattern.matches(path, directory=directory)
            b = old_pattern.matches(path, directory=directory)
            checked += 1
            if a != b:
                print("DIFFERENT", repr(body), repr(path), directory, a, b, new_pattern._regex.pattern)
                sys.exit(1)
print("same on", checked, "checks")
long = "a" * 250 + ".txt"
deep = "/".join(["aaaaaaaa"] * 30) + "/" + long
for body in [
    "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
    "*-*-*-*-*.txt",
    "**/**/**/**/**/**/**/**/**/b",
    "a**a**a**a**a**a**b",
]:
    start = time.perf_counter()
    Pattern(body).matches(deep)
    Pattern(body).matches("-" * 250)
    print(f"{body[:40]!r}: {time.perf_counter() - start:.4f} s")
