"""The benchmarks' near-duplicate variants: made by :mod:`simhash_store.variants`.

They moved into the package so that ``simhash-store calibrate`` makes the same variants
of a user's documents; this module keeps the benchmarks' imports working.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simhash_store.variants import (  # noqa: E402,F401
    HEAVY,
    KINDS,
    LIGHT,
    Variant,
    add_boilerplate,
    drop_one_sentence,
    drop_sentences,
    drop_tenth_of_sentences,
    edit_characters,
    insert_sentence,
    make_variant,
    reflow,
    sentences,
    truncate,
)
