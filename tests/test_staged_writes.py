"""The decided documents of ``dedup_dataset`` written from many connections (its Ray workers) into a
staging table and moved into the store in one transaction: the rows are those the driver's one COPY
(``Store.add_decided``) writes, a block written twice is there once, and a failure stores nothing."""

from __future__ import annotations

import random

import numpy as np
import psycopg
import pyarrow as pa
import pytest
from sqlalchemy.engine import make_url

from simhash_store import clusters
from simhash_store.errors import SimhashStoreError
from simhash_store.keep import KeepPolicy
from simhash_store.ray_data import decided_ranks
from simhash_store.store import NewDocument, Store, writes

K = 4
# Everything a document row holds (digest, metadata, stamp and keep value too), and the heads.
ROWS = (
    "SELECT id, key, fingerprint, digest, length, metadata, stamp, keep_value, cluster, arrival "
    "FROM simhash.documents ORDER BY id"
)
HEADS = "SELECT cluster, representative_id FROM simhash.cluster_heads ORDER BY cluster"
STAGING = "SELECT relname FROM pg_catalog.pg_class WHERE relname LIKE 'dedup_staging_%' ORDER BY relname"


def _plain(url) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _query(url, statement: str) -> list[tuple]:
    with psycopg.connect(_plain(url)) as connection:
        return connection.execute(statement).fetchall()


def _documents(count: int = 300) -> tuple[list[NewDocument], np.ndarray]:
    """Keys in no sorted order (mixed case, punctuation, non-ASCII), with near copies and exact copies."""
    rng = random.Random(7)
    documents, values = [], []
    for n in range(count):
        value = rng.getrandbits(64) if n % 3 == 0 or not values else values[-1] ^ (1 << rng.randrange(64))
        if n % 17 == 0 and values:
            value = values[0]
        key = rng.choice(["a", "B", "a-b", "ab", "é", "Z", "_"]) + f"{rng.getrandbits(20):x}/{n}"
        documents.append(NewDocument(key, value, rng.randbytes(16), rng.randrange(1, 5000)))
        values.append(value)
    return documents, np.array(values, dtype=np.uint64)


def _clustering(url, retired: int) -> Store:
    store = Store(url)
    store.recluster(K, keep=KeepPolicy.parse("first"))
    with psycopg.connect(_plain(url)) as connection:  # ids are numbered after those retired
        connection.execute("UPDATE simhash.store_info SET highest_retired_id = %s", (retired,))
    return store


def _staged(store: Store, documents, values, batches, *, again: int | None = None) -> int | None:
    """What dedup_dataset's workers and driver do, here on one machine: blocks of 70 documents."""
    keys = pa.array([d.key for d in documents], pa.string())
    leader = clusters.leaders_with_copies(values, K, None)
    rank, leader_rank, arrival, first_batch = decided_ranks(store, keys, leader, batches)
    digests = pa.array([d.digest for d in documents], pa.binary())
    lengths = np.array([d.length for d in documents], dtype=np.int64)
    with store.staging() as name:
        assert name is not None
        expected = {}
        for number, start in enumerate(range(0, len(documents), 70)):
            part = slice(start, start + 70)
            payload = writes.staged_payload(
                number,
                keys[part],
                values[part],
                digests[part],
                lengths[part],
                rank[part],
                leader_rank[part],
                arrival[part],
            )
            store.stage_block(name, number, payload)
            if number == again:  # a task run again: its block is written a second time
                store.stage_block(name, number, payload)
            expected[number] = len(documents[part])
        return store.move_staged(name, K, expected, first_batch)


@pytest.mark.parametrize("retired", [0, 1000])
def test_staged_documents_are_the_rows_the_drivers_copy_writes(database_url, pg_server, retired):
    """Ids by batch then key (the database's collation), clusters, arrivals (each batch after the ids
    before it, into a store whose ids start past retired ones), digests, lengths and heads are those
    of Store.add_decided; a block written twice (a retried task) is stored once; no staging table left."""
    documents, values = _documents()
    batches = np.arange(len(documents)) // 13
    other = pg_server.create_database()
    try:
        other_url = pg_server.url(other)
        with _clustering(database_url, retired) as store:
            first_id = _staged(store, documents, values, batches, again=1)
        with _clustering(other_url, retired) as store:
            leader = clusters.leaders_with_copies(values, K, None)
            ids = store.add_decided(documents, batches.tolist(), leader.tolist(), K)
        assert first_id == retired and ids is not None and min(ids) == retired + 1
        for statement in (ROWS, HEADS):
            assert _query(database_url, statement) == _query(other_url, statement)
        assert len(_query(database_url, ROWS)) == len(documents)
        assert _query(database_url, STAGING) == []
    finally:
        pg_server.drop_database(other)


def test_a_block_written_twice_by_two_writers_stores_nothing(database_url):
    """Rows of a block that are not what the run decided (here: a block staged twice without its
    delete, as two writers racing would leave it) fail the move: nothing stored, no table left."""
    documents, values = _documents(40)
    batches = np.arange(len(documents)) // 13
    keys = pa.array([d.key for d in documents], pa.string())
    with _clustering(database_url, 0) as store:
        leader = clusters.leaders_with_copies(values, K, None)
        rank, leader_rank, arrival, first_batch = decided_ranks(store, keys, leader, batches)
        payload = writes.staged_payload(
            0,
            keys,
            values,
            pa.array([d.digest for d in documents]),
            np.array([d.length for d in documents]),
            rank,
            leader_rank,
            arrival,
        )
        with pytest.raises(SimhashStoreError, match="staged documents of blocks \\[0\\]"):
            with store.staging() as name:
                assert name is not None
                store.stage_block(name, 0, payload)
                with store.engine.begin() as connection, connection.connection.driver_connection.cursor() as cursor:
                    with cursor.copy(f"COPY simhash.{name} FROM STDIN (FORMAT BINARY)") as copy:
                        copy.write(payload)
                store.move_staged(name, K, {0: len(documents)}, first_batch)
    assert _query(database_url, "SELECT count(*) FROM simhash.documents") == [(0,)]
    assert _query(database_url, "SELECT count(*) FROM simhash.cluster_heads") == [(0,)]
    assert _query(database_url, STAGING) == []


def test_a_failure_before_the_move_leaves_the_store_empty(database_url):
    """The workers wrote their blocks, then the run failed before the move: the store holds nothing and
    the staging table is dropped; one left by a driver that died is dropped by the next run, while a
    live run's is left alone."""
    documents, values = _documents(50)
    batches = np.arange(len(documents)) // 13
    keys = pa.array([d.key for d in documents], pa.string())
    with _clustering(database_url, 0) as store:
        leader = clusters.leaders_with_copies(values, K, None)
        rank, leader_rank, arrival, _ = decided_ranks(store, keys, leader, batches)
        payload = writes.staged_payload(
            0,
            keys,
            values,
            pa.array([d.digest for d in documents]),
            np.array([d.length for d in documents]),
            rank,
            leader_rank,
            arrival,
        )
        with pytest.raises(RuntimeError, match="the driver failed"):
            with store.staging() as name:
                store.stage_block(name, 0, payload)
                raise RuntimeError("the driver failed")
        assert _query(database_url, "SELECT count(*) FROM simhash.documents") == [(0,)]
        assert _query(database_url, STAGING) == []

        with psycopg.connect(_plain(database_url), autocommit=True) as live:
            running = writes.staging_name()
            writes.create_staging(live.cursor(), running)  # a live run: holds the shared lock
            # A driver that died: its session (and shared lock) gone, its table left.
            with psycopg.connect(_plain(database_url), autocommit=True) as dead:
                stale = writes.staging_name()
                writes.create_staging(dead.cursor(), stale)
            with store.staging() as name:
                assert name is not None
                names = [row[0] for row in _query(database_url, STAGING)]
                assert stale in names and running in names  # not dropped while a run is live
            writes.drop_staging(live.cursor(), running)
        with store.staging() as name:
            assert [row[0] for row in _query(database_url, STAGING)] == [name]  # the stale one dropped
        assert _query(database_url, STAGING) == []


def test_binary_copy_writes_what_it_is_given(database_url):
    """The rows built column by column (nulls, non-ASCII text, empty values, a slice of an array) are
    the values PostgreSQL reads back."""
    keys = pa.array(["a", None, "ünï€ 中文", "", "x" * 300, "b"], pa.string()).slice(1)
    digests = pa.array([b"\x00\x01", b"", None, b"\xff" * 20, b"z", None], pa.binary()).slice(1)
    big = np.array([-2, 2**62, 0, -(2**63), 5], dtype=np.int64)
    small = np.array([5, -1, 2**31 - 1, 0, 7], dtype=np.int32)
    payload = writes.binary_copy([("int8", big), ("text", keys), ("bytea", digests), ("int4", small)])
    with psycopg.connect(_plain(database_url)) as connection:
        connection.execute("SET client_encoding TO 'UTF8'")
        connection.execute("CREATE TEMP TABLE t (n serial, a bigint, k text, d bytea, l integer)")
        with connection.cursor().copy("COPY t (a, k, d, l) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(payload)
        got = connection.execute("SELECT a, k, d, l FROM t ORDER BY n").fetchall()
    assert got == list(zip(big.tolist(), keys.to_pylist(), digests.to_pylist(), small.tolist()))


def test_the_staging_table_is_the_store_owners_alone(database_url, make_role):
    """Default privileges of schema simhash (as `grant` sets for readers) give no other role the staged
    rows: the table is the owner's alone while the run lasts."""
    reader = make_role(database_url, prefix="simhash_stage_reader")
    with psycopg.connect(_plain(database_url), autocommit=True) as connection:
        connection.execute(f'ALTER DEFAULT PRIVILEGES IN SCHEMA simhash GRANT SELECT, INSERT ON TABLES TO "{reader}"')
        connection.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA simhash GRANT SELECT ON TABLES TO PUBLIC")
    try:
        with Store(database_url) as store, store.staging() as name:
            assert name is not None
            for role in (reader, "public"):
                for privilege in ("SELECT", "INSERT"):
                    allowed = _query(
                        database_url,
                        f"SELECT pg_catalog.has_table_privilege('{role}', 'simhash.{name}', '{privilege}')",
                    )
                    assert allowed == [(False,)], (role, privilege)
    finally:
        with psycopg.connect(_plain(database_url), autocommit=True) as connection:
            connection.execute(f'ALTER DEFAULT PRIVILEGES IN SCHEMA simhash REVOKE ALL ON TABLES FROM "{reader}"')
            connection.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA simhash REVOKE SELECT ON TABLES FROM PUBLIC")


def test_no_other_role_sees_the_staging_table_before_its_default_grants_are_revoked(database_url, make_role):
    """The owner's default privileges in schema simhash (set by a superuser at another role's request)
    give that role TRIGGER on new tables. The staging table was made in one statement and its grants
    revoked in later ones, so between them the role saw it with TRIGGER, put a trigger of its own
    function on it, and the workers' COPY ran that function with the owner's rights. Here the owner's
    REVOKE is held (a superuser's event trigger waits on an advisory lock the test holds) while the
    role looks: the table is made and its grants revoked in one transaction, so it sees nothing."""
    import threading

    other = make_role(
        database_url,
        "GRANT CREATE ON DATABASE {database} TO {role}",
        "GRANT USAGE ON SCHEMA simhash TO {role}",  # a reader's or writer's
        prefix="simhash_stager",
    )
    other_url = _plain(database_url.set(username=other, password=None))
    with psycopg.connect(other_url, autocommit=True) as connection:
        connection.execute("CREATE SCHEMA app; CREATE TABLE app.stolen (who text)")
        connection.execute("GRANT USAGE ON SCHEMA app TO PUBLIC; GRANT INSERT ON app.stolen TO PUBLIC")
        connection.execute(
            "CREATE FUNCTION app.grab() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN INSERT INTO app.stolen VALUES (current_user); RETURN NEW; END $$"
        )
    hold = (1919, 1919)
    with Store(database_url) as store, psycopg.connect(_plain(database_url), autocommit=True) as admin:
        store.stats()  # the store made before the default privileges
        admin.execute(f'ALTER DEFAULT PRIVILEGES IN SCHEMA simhash GRANT TRIGGER ON TABLES TO "{other}"')
        admin.execute(
            "CREATE FUNCTION public.simhash_test_hold() RETURNS event_trigger LANGUAGE plpgsql "
            f"AS $$ BEGIN PERFORM pg_catalog.pg_advisory_xact_lock({hold[0]}, {hold[1]}); END $$"
        )
        admin.execute(
            "CREATE EVENT TRIGGER simhash_test_hold ON ddl_command_start WHEN TAG IN ('REVOKE') "
            "EXECUTE FUNCTION public.simhash_test_hold()"
        )
        admin.execute("SELECT pg_catalog.pg_advisory_lock(%s, %s)", hold)
        outcome: list[object] = []

        def run() -> None:
            try:
                with store.staging() as name:
                    payload = writes.staged_payload(
                        0,
                        pa.array(["k"]),
                        np.array([5], dtype=np.uint64),
                        pa.array([b""], pa.binary()),
                        np.array([1]),
                        np.array([0]),
                        np.array([0]),
                        np.array([1]),
                    )
                    store.stage_block(name, 0, payload)
                    outcome.append(name)
            except Exception as exc:  # reported by the assertion below
                outcome.append(exc)

        thread = threading.Thread(target=run)
        try:
            thread.start()
            waiting = (
                "SELECT count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = %s"
            )
            while admin.execute(waiting, (hold[1],)).fetchone()[0] == 0:
                assert thread.is_alive(), outcome
                thread.join(0.05)
            planted = []
            with psycopg.connect(other_url, autocommit=True) as connection:
                tables = connection.execute(
                    "SELECT c.oid::regclass::text FROM pg_catalog.pg_class c WHERE c.relname LIKE 'dedup_staging_%' "
                    "AND pg_catalog.has_table_privilege(c.oid, 'TRIGGER')"
                ).fetchall()
                for (table,) in tables:
                    connection.execute(
                        f"CREATE TRIGGER grab BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION app.grab()"
                    )
                    planted.append(table)
        finally:
            admin.execute("SELECT pg_catalog.pg_advisory_unlock(%s, %s)", hold)
            thread.join()
            admin.execute("DROP EVENT TRIGGER simhash_test_hold; DROP FUNCTION public.simhash_test_hold()")
            admin.execute(f'ALTER DEFAULT PRIVILEGES IN SCHEMA simhash REVOKE TRIGGER ON TABLES FROM "{other}"')
        assert len(outcome) == 1 and isinstance(outcome[0], str), outcome
        assert admin.execute("SELECT who FROM app.stolen").fetchall() == []  # app.grab() never ran
        assert planted == []


def test_a_reader_holding_the_staging_table_fails_no_run(database_url, make_role, monkeypatch):
    """A member of pg_read_all_data (no grant needed) reads the run's staging table and keeps its
    transaction open: the move, which dropped the table in its transaction, failed after the lock
    timeout with nothing stored; and a stale table of a dead driver, held the same way, stopped every
    later run at its start. Now the move stores the documents and a held table is left for a later
    run, which drops it once it is let go."""
    monkeypatch.setenv("SIMHASH_STORE_LOCK_TIMEOUT", "3")
    reader = make_role(database_url, "GRANT pg_read_all_data TO {role}", prefix="simhash_stage_holder")
    reader_url = _plain(database_url.set(username=reader, password=None))
    documents, values = _documents(20)
    keys = pa.array([d.key for d in documents], pa.string())
    with _clustering(database_url, 0) as store:
        leader = clusters.leaders_with_copies(values, K, None)
        rank, leader_rank, arrival, first_batch = decided_ranks(store, keys, leader, np.zeros(20, dtype=np.int64))
        payload = writes.staged_payload(
            0,
            keys,
            values,
            pa.array([d.digest for d in documents], pa.binary()),
            np.array([d.length for d in documents]),
            rank,
            leader_rank,
            arrival,
        )
        with psycopg.connect(reader_url) as holder:  # not autocommit: what it reads stays locked
            with store.staging() as name:
                store.stage_block(name, 0, payload)
                holder.execute(f"SELECT count(*) FROM simhash.{name}")
                assert store.move_staged(name, K, {0: 20}, first_batch) == 0
            assert _query(database_url, "SELECT count(*) FROM simhash.documents") == [(20,)]
            assert [row[0] for row in _query(database_url, STAGING)] == [name]  # held: left
            with store.staging() as later:  # the held one is not this run's stop
                assert later is not None and later != name
            holder.rollback()
        with store.staging() as last:
            assert [row[0] for row in _query(database_url, STAGING)] == [last]  # let go: dropped
        assert _query(database_url, STAGING) == []
