"""Migrations keep every row: populate a store at the first revision, upgrade step by step to head, compare.

The store is migrated to the first revision (``0001``) only, then filled there:
``--documents`` (key, fingerprint) rows with one binary COPY (``store_speed.bulk_load``:
block indexes built after the load) and ``--full-rows`` rows with every column of
``0001`` set (digest, length, metadata, timestamps), plus the scheme record. Nothing goes
through ``Store``, whose first use would upgrade to head before the rows are in.

Then it times, on the same rows: each single step up (``simhash_store.migrate.upgrade``)
and each single step down; then, from each earlier revision in turn (reached by stepping
down from head: the same schema and rows a store left at that revision has), the upgrade
to head by ``Store.upgrade()`` and by ``simhash-store init`` (a process, so its start is
in the figure: the run also times ``init`` at head, a no-op, as its baseline). Baselines
on the same table in the same run: ``SELECT count(*)`` and ``VACUUM ANALYZE``. After
every step it compares with the start. Then (``--no-fresh-stores`` to skip) it creates a
store of its own at each earlier revision, fills it there the same way and times
``simhash-store init`` to head, with the same comparisons:

* the number of documents;
* a checksum of (key, fingerprint), ordered by key;
* a checksum of every column ``0001`` defines, row by row, ordered by id, and of the scheme record;
* the answers of ``simhash.near`` at k=3 for planted query points (the search still finds the same rows).

    python benchmarks/migrations.py                            # 1M documents, the machine's PostgreSQL
    python benchmarks/migrations.py --admin-url embedded       # the same on a throwaway embedded server

Going below the first revision (``downgrade base``) drops the schema by design and is not run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from simhash_store import migrate
from simhash_store.config import normalize_url
from simhash_store.scheme import DEFAULT

from reliability_common import (
    DEFAULT_ADMIN_URL,
    admin_url_for,
    bulk_load,
    fresh_database,
    load_now,
    machine,
    make_data,
    markdown_table,
    server_version,
)

# Columns of simhash.documents as revision 0001 creates them: later revisions must keep their values.
COLUMNS_0001 = "id, key, fingerprint, block0, block1, block2, block3, digest, length, metadata, added_at, updated_at"

CHECKSUMS = {
    "documents": "SELECT count(*) FROM simhash.documents",
    "(key, fingerprint)": "SELECT md5(string_agg(md5(key || ' ' || fingerprint), '' ORDER BY key)) FROM simhash.documents",
    "every 0001 column": f"SELECT md5(string_agg(md5(ROW({COLUMNS_0001})::text), '' ORDER BY id)) FROM simhash.documents",
    "scheme record": "SELECT md5(string_agg(ROW(singleton, scheme_name, scheme, created_at)::text, '')) FROM simhash.store_info",
}


def revisions() -> list[str]:
    """Revision ids from the first to head."""
    script = ScriptDirectory.from_config(migrate.alembic_config())
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def fill_at_first_revision(url: str, documents: int, full_rows: int, points: int, seed: int) -> np.ndarray:
    """Bulk rows, rows with every column set, the scheme record; returns query points with planted neighbours."""
    stored, query_points = make_data(documents, points, seed)
    bulk_load(url, stored)
    with psycopg.connect(url) as connection:
        connection.execute(
            """
            INSERT INTO simhash.documents (key, fingerprint, digest, length, metadata, added_at, updated_at)
            SELECT 'full/' || n, (hashtextextended(n::text, 0)), sha256(n::text::bytea), n %% 100000,
                   jsonb_build_object('source', 'migration test', 'n', n, 'tags', jsonb_build_array('a', n %% 7)),
                   timestamptz '2026-01-01' + n * interval '1 second', now()
            FROM generate_series(1, %s) AS n
            """,
            (full_rows,),
        )
        connection.execute(
            "INSERT INTO simhash.store_info (singleton, scheme_name, scheme) VALUES (true, %s, %s::jsonb)",
            (DEFAULT.name, DEFAULT.to_json()),
        )
        connection.execute("ANALYZE simhash.documents")
    return query_points


def snapshot(url: str, points: np.ndarray, tamper: bool = False) -> dict[str, object]:
    """The checksums and near() answers; with ``tamper``, of a store with one row lost and one bit flipped
    (inside a transaction that is rolled back: the control that shows the checks would see a loss)."""
    signed_points = [int(np.uint64(point).view(np.int64)) for point in points.tolist()]
    with psycopg.connect(url) as connection:
        if tamper:  # lose a planted neighbour of the first point, flip a bit of another row
            connection.execute(
                "DELETE FROM simhash.documents WHERE id = (SELECT id FROM simhash.near(%s, 3) LIMIT 1)",
                (signed_points[0],),
            )
            connection.execute("UPDATE simhash.documents SET fingerprint = fingerprint # 1 WHERE id = 1")
            connection.execute("UPDATE simhash.store_info SET created_at = created_at + interval '1 second'")
        values = {name: connection.execute(sql).fetchone()[0] for name, sql in CHECKSUMS.items()}
        answers = []
        for signed in signed_points:
            answers.append(connection.execute("SELECT key, distance FROM simhash.near(%s, 3)", (signed,)).fetchall())
        values["near() answers"] = answers
        connection.rollback()
    return values


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=1_000_000, help="(key, fingerprint) rows loaded in bulk")
    parser.add_argument("--full-rows", type=int, default=10_000, help="rows with every column set")
    parser.add_argument("--points", type=int, default=50, help="near() queries compared before and after")
    parser.add_argument(
        "--admin-url",
        default=DEFAULT_ADMIN_URL,
        help="a server where the script may create and drop databases, or 'embedded'",
    )
    parser.add_argument("--database", default="simhash_migrations")
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument(
        "--fresh-stores",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also fill a store of its own at each earlier revision and `init` it to head",
    )
    args = parser.parse_args()

    with admin_url_for(args.admin_url) as admin_url:
        print(f"machine: {machine()}")
        print(f"server: PostgreSQL {server_version(admin_url)} ({args.admin_url})")
        print(f"load at start: {load_now()}", flush=True)
        chain = revisions()
        print(f"revisions, first to head: {' -> '.join(chain)}", flush=True)
        rows = []
        with fresh_database(admin_url, args.database, keep=args.keep) as url:
            engine = create_engine(normalize_url(url))
            seconds = timed(lambda: migrate.upgrade(engine, chain[0]))
            rows.append(["empty database to the first revision", chain[0], f"{seconds:.2f} s", "", "", ""])
            started = time.perf_counter()
            points = fill_at_first_revision(url, args.documents, args.full_rows, args.points, args.seed)
            print(f"filled at {migrate.current_revision(engine)} in {time.perf_counter() - started:.1f} s", flush=True)
            before = snapshot(url, points)
            planted = sum(map(len, before["near() answers"]))
            print(
                f"before: {before['documents']:,} documents, {planted} near() matches for {args.points} points",
                flush=True,
            )

            # Baselines on the same table in the same run: what an upgrade costs next to a scan and a vacuum.
            with psycopg.connect(url, autocommit=True) as connection:
                for sql in ["SELECT count(*) FROM simhash.documents", "VACUUM ANALYZE simhash.documents"]:
                    what = f"baseline: {sql}"
                    seconds = timed(lambda sql=sql: connection.execute(sql))
                    rows.append([what, chain[0], f"{seconds:.2f} s", "", "", ""])
                    print(f"{what}: {seconds:.2f} s", flush=True)

            def check(what: str, seconds: float | None, tamper: bool = False) -> None:
                current = migrate.current_revision(engine)
                after = snapshot(url, points, tamper)
                same = [name for name in before if after[name] == before[name]]
                differ = [name for name in before if after[name] != before[name]]
                time_taken = "" if seconds is None else f"{seconds:.2f} s"
                rows.append(
                    [
                        what,
                        f"{current}",
                        time_taken,
                        f"{after['documents']:,}",
                        "all five" if not differ else ", ".join(same) or "-",
                        ", ".join(differ) or "none",
                    ]
                )
                print(f"{what} -> {current}: {seconds}, differ: {differ or 'none'}", flush=True)

            check("control: one row deleted, one bit flipped, rolled back", None, tamper=True)
            for previous, revision in zip(chain, chain[1:]):  # each single step up ...
                check(
                    f"step up {previous} -> {revision}",
                    timed(lambda revision=revision: migrate.upgrade(engine, revision)),
                )
            check("upgrade head (again: a no-op)", timed(lambda: migrate.upgrade(engine, "head")))
            for previous, revision in zip(reversed(chain), list(reversed(chain))[1:]):  # ... and down
                check(
                    f"step down {previous} -> {revision}",
                    timed(lambda revision=revision: migrate.downgrade(engine, revision)),
                )

            # From each earlier revision to head, the two ways a user upgrades: the library and the command.
            from simhash_store.store import Store

            command = [str(Path(sys.executable).with_name("simhash-store")), "--db", url, "init"]
            for start in chain[:-1]:
                migrate.downgrade(engine, start)  # a store at ``start`` (from head: the same schema, the same rows)
                with Store(url) as store:
                    check(f"Store.upgrade() {start} -> head", timed(store.upgrade))
                migrate.downgrade(engine, start)
                check(
                    f"`simhash-store init` {start} -> head (a process)",
                    timed(lambda: subprocess.run(command, check=True, capture_output=True)),
                )
            check(
                "baseline: `simhash-store init` at head (a process, a no-op)",
                timed(lambda: subprocess.run(command, check=True, capture_output=True)),
            )
            with Store(url) as store:  # the library's own first use at head
                rows.append(
                    ["Store(url).count() at head", migrate.current_revision(engine), "", f"{store.count():,}", "", ""]
                )
            engine.dispose()

        # A store created and filled at each earlier revision (not reached by stepping down), then `init`.
        for start in chain[:-1] if args.fresh_stores else []:
            with fresh_database(admin_url, f"{args.database}_{start}", keep=args.keep) as url:
                engine = create_engine(normalize_url(url))
                migrate.upgrade(engine, start)
                points = fill_at_first_revision(url, args.documents, args.full_rows, args.points, args.seed)
                at_start = snapshot(url, points)
                command = [str(Path(sys.executable).with_name("simhash-store")), "--db", url, "init"]
                seconds = timed(lambda command=command: subprocess.run(command, check=True, capture_output=True))
                after = snapshot(url, points)
                differ = [name for name in at_start if after[name] != at_start[name]]
                rows.append(
                    [
                        f"store filled at {start}, `simhash-store init` (a process)",
                        migrate.current_revision(engine),
                        f"{seconds:.2f} s",
                        f"{after['documents']:,}",
                        "all five" if not differ else "-",
                        ", ".join(differ) or "none",
                    ]
                )
                print(f"filled at {start}, init: {seconds:.2f} s, differ: {differ or 'none'}", flush=True)
                engine.dispose()

    print()
    print(markdown_table(["step", "revision after", "time", "documents", "equal to the start", "differ"], rows))
    print(
        f"\n- {args.documents:,} bulk rows + {args.full_rows:,} rows with every column; "
        f"{planted} near() matches over {args.points} planted points compared; load at end: {load_now()}"
    )


if __name__ == "__main__":
    main()
