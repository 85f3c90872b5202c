"""One paragraph of 120 words repeated: every copy is a segment with the same fingerprint, and
simhash.contained / containment_pairs join every query copy with every stored copy (times four
blocks, then a UNION sorts them). Writes DIR/a.txt, DIR/b.txt (stored) and DIR/q<N>.txt (queries).
Usage: python hostile/containment_repeated_segments.py DIR
then: simhash-store init --segments; simhash-store add DIR/stored; time simhash-store query --containment DIR/q4000.txt"""

import random
import sys
from pathlib import Path

directory = Path(sys.argv[1])
(directory / "stored").mkdir(parents=True, exist_ok=True)
rng = random.Random(5)
words = [f"w{i}" for i in range(5000)]
paragraph = " ".join(rng.choice(words) for _ in range(120))
for name in ("a", "b"):
    (directory / "stored" / f"{name}.txt").write_text("\n\n".join([paragraph] * 2000))
for copies in (500, 1000, 2000, 4000):
    (directory / f"q{copies}.txt").write_text("\n\n".join([paragraph] * copies))
distinct = [" ".join(rng.choice(words) for _ in range(120)) for _ in range(2000)]
(directory / "q-distinct-2000.txt").write_text("\n\n".join(distinct))  # the baseline: as large, no repeats
