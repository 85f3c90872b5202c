"""Who may do what: read-only roles, no password in output, a private embedded server."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from simhash_store import PermissionDeniedError
from simhash_store.cli import app
from simhash_store.store import NewDocument, Store


def _plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def reader_role(pg_server, database_url):
    role = f"simhash_reader_{uuid.uuid4().hex[:8]}"
    admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE ROLE "{role}" LOGIN'))
    yield role
    with admin.connect() as connection:
        connection.execute(text(f'DROP OWNED BY "{role}"'))
        connection.execute(text(f'DROP ROLE "{role}"'))
    admin.dispose()


def test_read_only_role_can_search_and_cannot_write(database_url, reader_role):
    with Store(database_url) as store:
        store.add([NewDocument("a", 0b1011), NewDocument("b", 2**64 - 1)])
    runner = CliRunner()
    result = runner.invoke(app, ["--db", database_url.render_as_string(hide_password=False), "grant-read", reader_role])
    assert result.exit_code == 0, result.output

    reader_url = database_url.set(username=reader_role, password=None)
    with psycopg.connect(_plain(reader_url)) as connection:
        rows = connection.execute("SELECT key, distance FROM simhash.near(%s, 3)", (0b1001,)).fetchall()
        assert rows == [("a", 1)]
        assert connection.execute("SELECT count(*) FROM simhash.documents").fetchone() == (2,)
        for statement in (
            "INSERT INTO simhash.documents (key, fingerprint) VALUES ('evil', 1)",
            "UPDATE simhash.documents SET fingerprint = 0",
            "DELETE FROM simhash.documents",
            "UPDATE simhash.store_info SET scheme_name = 'other'",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(statement)
            connection.rollback()

    with Store(reader_url) as as_reader:
        assert [m.key for m in as_reader.query(0b1001, 3)] == ["a"]
        with pytest.raises(PermissionDeniedError, match="permission denied"):
            as_reader.add([NewDocument("evil", 1)])
    result = runner.invoke(app, ["--db", reader_url.render_as_string(hide_password=False), "remove", "a"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: database ") and "permission denied" in result.output
    with Store(database_url) as store:
        assert store.count() == 2


def test_a_writer_that_does_not_own_the_table_can_bulk_load(database_url, reader_role):
    # A role with write privileges but not the table's owner cannot drop and rebuild
    # the indexes; its bulk load keeps them and still stores everything in one go.
    admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'GRANT USAGE ON SCHEMA simhash TO "{reader_role}"'))
        connection.execute(text(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA simhash TO "{reader_role}"'))
    admin.dispose()
    writer_url = database_url.set(username=reader_role, password=None)
    with Store(writer_url) as as_writer:
        result = as_writer.load(NewDocument(f"k{i}", i * 2654435761) for i in range(50))
        assert result.added == 50
        assert [m.key for m in as_writer.query(7 * 2654435761, 0)] == ["k7"]
    result = CliRunner().invoke(app, ["--db", database_url.render_as_string(hide_password=False), "stats", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["documents"] == 50


def test_grant_to_a_missing_role_is_a_clear_error(database_url):
    result = CliRunner().invoke(app, ["--db", database_url.render_as_string(hide_password=False), "grant-read", "nobody_here"])
    assert result.exit_code == 1
    assert result.output.strip() == "Error: there is no role 'nobody_here'; create it first (CREATE ROLE ... LOGIN)"


def test_password_is_never_printed(database_url):
    # Trust authentication ignores the password, so the URL works and we can look at every output.
    with_password = database_url.set(password="hunter2-secret").render_as_string(hide_password=False)
    runner = CliRunner()
    for args in (["stats"], ["stats", "--json"], ["init"]):
        result = runner.invoke(app, ["--db", with_password, *args])
        assert result.exit_code == 0, result.output
        assert "hunter2-secret" not in result.output
    info = json.loads(runner.invoke(app, ["--db", with_password, "stats", "--json"]).output)
    assert "***" in info["database"]


def test_embedded_server_listens_on_a_private_socket_only(pg_server):
    if pg_server.admin_url.host:
        pytest.skip("this backend is the external server")
    with psycopg.connect(_plain(pg_server.admin_url)) as connection:
        assert connection.execute("SHOW listen_addresses").fetchone() == ("",)
        assert connection.execute("SHOW unix_socket_permissions").fetchone() == ("0700",)
        socket_dir = Path(connection.execute("SHOW unix_socket_directories").fetchone()[0])
    mode = socket_dir.stat().st_mode
    assert not mode & (stat.S_IWOTH | stat.S_IXOTH), f"{socket_dir} is open to other users"
    assert socket_dir.is_dir()
