"""A server that stops answering is noticed: one error, exit 1, never a hang.

The network between the library and PostgreSQL runs through a small TCP proxy on
127.0.0.1 that can stop forwarding at any moment: what a partition, a frozen host or
a wedged server look like from the client, except that the proxy's kernel still
acknowledges every packet, so TCP keepalives alone would not notice (they do on a real
partition). What notices is the library's watch on silent waits (SIMHASH_STORE_NETWORK_TIMEOUT).
"""

from __future__ import annotations

import logging
import os
import select
import socket
import threading
import time

import pytest
from typer.testing import CliRunner

from simhash_store import DatabaseUnavailableError
from simhash_store.cli import app
from simhash_store.lookup import Lookup
from simhash_store.store import NewDocument, Store


class FreezableProxy:
    """Forwards 127.0.0.1:port to the server until frozen; frozen, it accepts but forwards nothing."""

    def __init__(self, upstream) -> None:
        self.upstream = upstream  # (host, port) or a Unix socket path
        self.frozen = threading.Event()
        self.closed = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _connect_upstream(self) -> socket.socket:
        if isinstance(self.upstream, str):
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.upstream)
            return server
        return socket.create_connection(self.upstream)

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(client)
            if self.frozen.is_set():
                continue  # taken by the kernel, never answered
            server = self._connect_upstream()
            self.sockets.append(server)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        while not self.closed.is_set():
            if self.frozen.is_set():
                time.sleep(0.05)
                continue
            readable, _, _ = select.select(list(peers), [], [], 0.05)
            for source in readable:
                if self.frozen.is_set():
                    break
                try:
                    data = source.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    for each in peers:
                        each.close()
                    return
                peers[source].sendall(data)

    def close(self) -> None:
        self.closed.set()
        for each in self.sockets:
            try:
                each.close()
            except OSError:
                pass


@pytest.fixture
def proxied(database_url, monkeypatch):
    """(URL through the proxy, the proxy); the server is given up on after 2 silent seconds."""
    monkeypatch.setenv("SIMHASH_STORE_NETWORK_TIMEOUT", "2")
    if database_url.host:
        upstream = (database_url.host, database_url.port or 5432)
    else:  # the embedded server: a Unix socket
        upstream = f"{database_url.query['host']}/.s.PGSQL.{database_url.port or database_url.query.get('port', 5432)}"
    proxy = FreezableProxy(upstream)
    url = database_url.difference_update_query(["host", "port"]).set(host="127.0.0.1", port=proxy.port)
    url = url.update_query_dict({"connect_timeout": "3"})
    yield url, proxy
    proxy.close()


def _finishes(work, limit: float = 120.0):
    """Run ``work`` in a thread; its result or exception, or a failure if it is still waiting at ``limit``."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"still waiting after {limit} s: a hang"
    return outcome


def _noise(caplog) -> list[str]:
    """Warnings and errors logged (SQLAlchemy's pool logs failed resets with a traceback on stderr)."""
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_server_that_stops_answering_mid_add_is_one_error_and_keeps_what_was_stored(proxied, database_url, caplog):
    url, proxy = proxied

    def documents():
        for i in range(6):
            if i == 4:
                proxy.frozen.set()  # the partition: after two batches of two were committed
            yield NewDocument(f"k{i}", i * 0x9E3779B97F4A7C15 % 2**64)

    def add():
        with Store(url) as store:
            return store.add(documents(), batch_size=2)

    outcome = _finishes(add)
    assert isinstance(outcome.get("error"), DatabaseUnavailableError), outcome
    assert "unreachable or frozen" in str(outcome["error"])
    assert _noise(caplog) == []
    with Store(database_url) as direct:
        assert direct.count() == 4


def test_server_that_stops_answering_mid_query_is_one_line_exit_1(proxied, monkeypatch, caplog):
    url, proxy = proxied
    with Store(url) as store:
        store.add([NewDocument("a", 5)])
    original = Lookup.query_many  # what `query` reads through (without SQLAlchemy)

    def frozen_first(self, *args, **kwargs):
        self.scheme  # noqa: B018 - the store is open (schema checked)
        proxy.frozen.set()  # the query goes into the void
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Lookup, "query_many", frozen_first)
    plain = url.render_as_string(hide_password=False)
    outcome = _finishes(lambda: CliRunner().invoke(app, ["--db", plain, "query", "-f", "0000000000000005"]))
    result = outcome["value"]
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: database "), result.output
    assert "unreachable or frozen" in lines[0]
    assert _noise(caplog) == []


def test_tcp_keepalives_and_user_timeout_reach_the_socket(proxied):
    url, _ = proxied
    for target, idle, user_timeout in ((url, 1, 2000), (url.update_query_dict({"keepalives_idle": "7"}), 7, 2000)):
        with Store(target) as store, store.engine.connect() as connection:
            raw = connection.connection.driver_connection
            probe = socket.socket(fileno=os.dup(raw.pgconn.socket))
            try:
                assert probe.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
                assert probe.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == idle
                assert probe.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == user_timeout
            finally:
                probe.close()  # the duplicate descriptor only
