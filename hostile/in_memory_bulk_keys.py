"""dedup's in-memory path (dedup --ray into an empty store: Store.add_decided, indexes dropped and
rebuilt) fed keys at the size bound (2,048 bytes of 4-byte characters, incompressible), keys equal
but for Unicode normalisation or case, and a bad record in the middle. Checks rows, ids, clusters
and indexes against the batch path. Usage: in_memory_bulk_keys.py DB_URL_A DB_URL_B"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import unicodedata

import psycopg

from simhash_store.dedup import dedup_files
from simhash_store.formats import open_writer
from simhash_store.store import Store

random.seed(7)
words = ["今天", "天气", "很好", "我们", "公园", "散步", "明天", "下雨", "家里", "看书", "北京", "首都", "名胜"]
records = []
for i in range(3000):
    text = "".join(random.choice(words) for _ in range(25))
    if i % 7 == 0:
        key = "".join(chr(random.randrange(0x20000, 0x2A6DF)) for _ in range(512))  # 2,048 bytes
    elif i % 7 == 1:
        key = unicodedata.normalize("NFD", f"é-{i}")
    elif i % 7 == 2:
        key = unicodedata.normalize("NFC", f"é-{i - 1}")  # equal to the one before but for normalisation
    elif i % 7 == 3:
        key = f"K-{i}"
    else:
        key = f"k-{i - 1}" if i % 7 == 4 else f"r{i}"
    records.append({"key": key, "text": text})


def run(url: str, in_memory: bool, bad: bool):
    rows = list(records)
    if bad:
        rows.insert(1500, {"key": "bad", "text": 5})
    with tempfile.TemporaryDirectory() as directory:
        path = f"{directory}/in.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        with Store(url) as store:
            writer = open_writer(f"{directory}/out.jsonl", "jsonl")
            counts = dedup_files([path], ["jsonl"], writer, store=store, annotate=True, in_memory=in_memory)
            out = open(f"{directory}/out.jsonl", encoding="utf-8").read()
    with psycopg.connect(url) as connection:
        stored = connection.execute(
            "SELECT id, key, fingerprint, cluster, arrival FROM simhash.documents ORDER BY id"
        ).fetchall()
        indexes = connection.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'simhash' AND tablename = 'documents' ORDER BY 1"
        ).fetchall()
    return counts, out, stored, indexes


for bad in (False, True):
    for url in sys.argv[1:3]:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("DROP SCHEMA IF EXISTS simhash CASCADE")
    a = run(sys.argv[1], True, bad)
    b = run(sys.argv[2], False, bad)
    print(f"bad record: {bad}; counts {a[0]} / {b[0]}")
    print(
        "  output same:", a[1] == b[1], "rows same:", a[2] == b[2], len(a[2]), "indexes same:", a[3] == b[3], len(a[3])
    )
