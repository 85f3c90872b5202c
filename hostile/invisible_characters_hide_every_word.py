"""A soft hyphen (U+00AD), a variation selector, U+034F, U+2066 or a tag character between every
two characters: the text has no features (skipped as "no words", passed through by dedup).
Open (docs/limitations.md). Usage: .venv/bin/python hostile/invisible_characters_hide_every_word.py"""

from simhash_store import fingerprint
from simhash_store.errors import NoFeaturesError

text = "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，制定本法。The quick brown fox jumps."
for name, mark in [
    ("soft hyphen", "\u00ad"),
    ("VS16", "\ufe0f"),
    ("CGJ", "\u034f"),
    ("LRI", "\u2066"),
    ("tag", "\U000e0020"),
]:
    try:
        print(name, f"{fingerprint(mark.join(text)):016x}")
    except NoFeaturesError as exc:
        print(name, "no features:", exc)
