"""Interrupt `dedup` into an empty store (SIGINT, SIGTERM, kill -9) at random moments; after each,
report the store's document count and index list, then re-run to completion and compare the
output with an uninterrupted run's.  Usage: python hostile/interrupt_dedup_empty.py BASE_URL N_TRIALS"""

import json
import random
import signal
import subprocess
import sys
import time

import psycopg

TMP = sys.argv[4] if len(sys.argv) > 4 else "/tmp"

base, trials = sys.argv[1], int(sys.argv[2])
exe = sys.argv[3] if len(sys.argv) > 3 else "simhash-store"
rng = random.Random(12)
inp = TMP + "/h12_int.jsonl"
with open(inp, "w") as out:
    for i in range(30000):
        words = " ".join(f"t{rng.randrange(5000)}" for _ in range(40))
        out.write(json.dumps({"key": f"k{i}", "text": words}) + "\n")


def fresh(db):
    with psycopg.connect(f"{base}/postgres", autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {db}")


def state(db):
    with psycopg.connect(f"{base}/{db}") as c:
        try:
            n = c.execute("SELECT count(*), count(cluster) FROM simhash.documents").fetchone()
            idx = sorted(r[0] for r in c.execute("SELECT indexname FROM pg_indexes WHERE schemaname='simhash'"))
            return n, idx
        except psycopg.Error as e:
            return str(e).splitlines()[0], []


def run(db, out):
    return subprocess.run(
        [exe, "dedup", inp, "-o", out, "-q", "-j", "2", "--db", f"{base}/{db}"], capture_output=True, text=True
    )


fresh("h12_ref")
r = run("h12_ref", TMP + "/h12_ref.jsonl")
print("reference", r.returncode, state("h12_ref")[0], r.stderr.strip()[-200:])
ref_idx = state("h12_ref")[1]
reference = open(TMP + "/h12_ref.jsonl").read()
for _trial in range(trials):
    fresh("h12_int")
    sig = rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
    delay = rng.uniform(0.5, 12)
    p = subprocess.Popen(
        [exe, "dedup", inp, "-o", TMP + "/h12_int_out.jsonl", "-q", "-j", "2", "--db", f"{base}/h12_int"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    p.send_signal(sig)
    out, err = p.communicate()
    n, idx = state("h12_int")
    r = run("h12_int", TMP + "/h12_int_out.jsonl")
    same = r.returncode == 0 and open(TMP + "/h12_int_out.jsonl").read() == reference
    n2, idx2 = state("h12_int")
    print(
        f"{sig.name} at {delay:.1f}s: rc={p.returncode} err={err.strip()[-160:]!r} store={n} idx_ok={idx == ref_idx or idx == []}"
        f" | rerun rc={r.returncode} same_output={same} store={n2} idx_ok={idx2 == ref_idx} {r.stderr.strip()[-200:]}"
    )
