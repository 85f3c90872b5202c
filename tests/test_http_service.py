"""The fingerprint service (``serve --http``) through a real uvicorn server and a real HTTP client."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from simhash_store import http_service
from simhash_store.bits import to_hex, to_signed
from simhash_store.errors import PermissionDeniedError
from simhash_store.fingerprint import fingerprint, no_features_message
from simhash_store.http_service import Limits, open_service
from simhash_store.store import NewDocument, Store

import roles  # tests/roles.py

pytestmark = pytest.mark.db

WRITER_GRANTS = (*roles.WRITER_GRANTS, "GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA simhash TO {role}")


@pytest.fixture
def writer_url(database_url, make_role):
    """The test database as a role that may read and write the store, and is no superuser."""
    with Store(database_url) as store:
        store.init()  # created by the test's superuser; the service's role only writes rows
    role = make_role(database_url, *WRITER_GRANTS, prefix="simhash_http")
    return database_url.set(username=role, password=None).render_as_string(hide_password=False)


@contextlib.contextmanager
def running(service: http_service.FingerprintService) -> Iterator[str]:
    """``service`` on a free loopback port, in a thread; its base URL."""
    listening = http_service.listen("127.0.0.1", 0)
    port = listening.getsockname()[1]
    server = http_service.server(service, "127.0.0.1", port)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def service(writer_url, tmp_path):
    opened = open_service(
        writer_url, token_directory=tmp_path / "tokens", limits=Limits(max_body_bytes=1 << 20, max_texts=50)
    )
    yield opened
    opened.close()


@pytest.fixture
def base(service) -> Iterator[str]:
    with running(service) as url:
        yield url


def _client(base: str, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.Client(base_url=base, headers=headers, timeout=30)


def test_fingerprint_equals_the_library_and_says_which_texts_have_none(service, base, sample_paragraphs):
    assert service.fingerprinter is not None  # the worker processes take requests of many texts
    for count in (3, 30):  # a few in the server's thread, many in its worker processes
        texts = [*sample_paragraphs[:count], "，。！", "bad \ud800"]
        with _client(base, service.tokens.read_only) as client:
            # ASCII JSON: the lone surrogate travels as the escape \ud800, as a JavaScript client may send it.
            answer = client.post("/fingerprint", content=json.dumps({"texts": texts}).encode())
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["scheme"] == service.scheme.name
        for text, result in zip(texts[:count], body["results"]):
            value = fingerprint(text, service.scheme)
            assert result == {"fingerprint": to_hex(value), "signed": str(to_signed(value))}
        no_features = no_features_message("the text", service.scheme)
        assert body["results"][count] == {"fingerprint": None, "signed": None, "error": no_features}
        assert body["results"][count + 1]["error"] == "the text is not valid Unicode (it holds a lone surrogate)"


def test_add_then_query_answers_as_the_store_does(service, base, writer_url, sample_paragraphs):
    documents = [{"key": f"p{i}", "text": text, "metadata": {"n": i}} for i, text in enumerate(sample_paragraphs[:10])]
    documents.append({"key": "empty", "text": "，。！"})
    with _client(base, service.tokens.read_write) as client:
        added = client.post("/add", json={"documents": documents})
        again = client.post("/add", json={"documents": documents[:3]})
        edited = sample_paragraphs[0][:-20] + "（转载）"
        by_text = client.post("/query", json={"texts": [edited, "，。！"], "k": 10})
        by_hex = client.post(
            "/query",
            json={
                "fingerprints": [to_hex(fingerprint(sample_paragraphs[1], service.scheme))],
                "k": 3,
                "max_results": 1,
            },
        )
    assert added.status_code == 200, added.text
    result = added.json()
    assert (result["added"], result["updated"], result["unchanged"]) == (10, 0, 0)
    assert [(f["index"], f["key"]) for f in result["failed"]] == [(10, "empty")]
    assert "empty" in result["failed"][0]["error"]
    assert again.json()["unchanged"] == 3
    with Store(writer_url) as store:
        assert store.count() == 10
        assert store.get("p4").metadata == {"n": 4}
        expected = store.query(fingerprint(edited, service.scheme), 10)
    first = by_text.json()["results"][0]
    assert first["fingerprint"] == to_hex(fingerprint(edited, service.scheme))
    assert first["matches"] == [
        {"key": m.key, "distance": m.distance, "similarity": round(m.similarity, 6)} for m in expected
    ]
    assert first["matches"][0]["key"] == "p0"
    assert by_text.json()["results"][1]["error"].startswith("the text has no features")
    assert [m["key"] for m in by_hex.json()["results"][0]["matches"]] == ["p1"]


def test_without_a_token_or_with_a_wrong_one_nothing_is_answered(service, base):
    with _client(base, None) as client:
        for path, method in (
            ("/fingerprint", "POST"),
            ("/query", "POST"),
            ("/add", "POST"),
            ("/health", "GET"),
            ("/openapi.json", "GET"),
        ):
            answer = client.request(method, path, json={"texts": ["保护人民"]})
            assert answer.status_code == 401, (path, answer.text)
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert "Bearer" in answer.json()["error"]
    with _client(base, service.tokens.read_write + "x") as client:
        answer = client.post("/fingerprint", json={"texts": ["保护人民"]})
    assert answer.status_code == 401
    assert answer.json() == {"error": "the token is not one of this service's"}


def test_the_read_only_token_may_not_add(service, base, writer_url):
    with _client(base, service.tokens.read_only) as client:
        answer = client.post("/add", json={"documents": [{"key": "a", "text": "保护人民的合法权利"}]})
        health = client.get("/health")
    assert answer.status_code == 403
    assert "read-only" in answer.json()["error"]
    assert health.json()["status"] == "ok"
    with Store(writer_url) as store:
        assert store.count() == 0


def test_oversized_bodies_and_lists_are_refused(service, base):
    limit = service.limits.max_body_bytes
    with _client(base, service.tokens.read_write) as client:
        big = client.post("/fingerprint", content=b'{"texts": ["' + b"a" * limit + b'"]}')
        # Chunked, so no Content-Length to trust: the body is measured as it arrives.
        streamed = client.post("/fingerprint", content=iter([b'{"texts": ["', b"a" * limit, b'"]}']))
        many = client.post("/fingerprint", json={"texts": ["保护"] * (service.limits.max_texts + 1)})
        after = client.post("/fingerprint", json={"texts": ["保护人民"]})
    assert big.status_code == 413 and "larger than" in big.json()["error"]
    assert streamed.status_code == 413
    assert many.status_code == 413 and "at most 50" in many.json()["error"]
    assert after.status_code == 200  # the server still answers


def test_connections_that_send_no_request_take_no_requests_place_and_are_closed(writer_url, tmp_path):
    """100 connections that send nothing (no token needed) made every request 503 for as long as
    they were held, and they, a half-sent head and a body left unsent after a refusal were never
    closed: the bound counted connections, and nothing timed a connection before its first request."""
    opened = open_service(writer_url, token_directory=tmp_path / "tokens", limits=Limits(head_seconds=1.0))
    try:
        with running(opened) as base:
            port = int(base.rsplit(":", 1)[1])
            silent = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(101)]
            partial = socket.create_connection(("127.0.0.1", port), timeout=60)
            partial.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            refused = socket.create_connection(("127.0.0.1", port), timeout=60)
            refused.sendall(b"POST /fingerprint HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            try:
                with _client(base, opened.tokens.read_only) as client:
                    answered = client.get("/health")
                assert answered.status_code == 200, answered.text
                assert refused.recv(1 << 16).startswith(b"HTTP/1.1 401")
                for connection in [*silent, partial, refused]:
                    while connection.recv(1 << 16):  # what was answered, then the server's close (b"")
                        pass
            finally:
                for connection in [*silent, partial, refused]:
                    connection.close()
    finally:
        opened.close()


def test_past_the_open_connections_bound_the_longest_idle_connection_is_closed(writer_url, tmp_path):
    """A client opening connections faster than they were closed used up the service's open
    files, and then no client was accepted: past the bound, a new connection closes the one that
    has waited longest without a request, so a client with a token still gets in."""
    opened = open_service(
        writer_url, token_directory=tmp_path / "tokens", limits=Limits(head_seconds=60.0, open_connections=5)
    )
    try:
        with running(opened) as base:
            port = int(base.rsplit(":", 1)[1])
            silent = []
            for _ in range(20):
                silent.append(socket.create_connection(("127.0.0.1", port), timeout=60))
                time.sleep(0.02)  # accepted in this order
            try:
                with _client(base, opened.tokens.read_only) as client:
                    answered = client.get("/health")
                assert answered.status_code == 200, answered.text
                for connection in silent[:15]:  # the oldest: closed by the service long before 60 s
                    assert connection.recv(1 << 16) == b""
                newest = silent[-1]
                newest.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert newest.recv(1 << 16).startswith(b"HTTP/1.1 401")  # still open, still answered
            finally:
                for connection in silent:
                    connection.close()
    finally:
        opened.close()


def test_the_open_connections_bound_fits_the_open_files_limit():
    import resource

    from simhash_store.http_connections import open_connections_bound

    bound = open_connections_bound(10**6)  # may raise the soft limit first
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    room = 10**6 if soft == resource.RLIM_INFINITY else max(soft - 128 - 300, 1)
    assert bound == min(10**6, room)
    assert open_connections_bound(7) == min(7, room)


def test_requests_past_the_bound_at_once_are_503_in_one_line():
    """The bound counts requests under way (the middleware), not connections."""
    from simhash_store.http_connections import RequestsAtOnce

    release = anyio.Event()
    sent: list[dict] = []

    async def slow(scope, receive, send):
        await release.wait()

    async def run() -> None:
        bounded = RequestsAtOnce(slow, limit=2)

        async def send(message):
            sent.append(message)

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        scope = {"type": "http", "method": "GET", "path": "/health", "headers": []}
        async with anyio.create_task_group() as group:
            group.start_soon(bounded, scope, receive, send)
            group.start_soon(bounded, scope, receive, send)
            await anyio.wait_all_tasks_blocked()
            await bounded(scope, receive, send)  # the third, at once
            assert [m.get("status") for m in sent if m["type"] == "http.response.start"] == [503]
            release.set()
        assert bounded.active == 0

    anyio.run(run)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert b"answering 2 requests already" in body and body.count(b"\n") == 0


def test_malformed_requests_get_one_line_of_json(service, base):
    with _client(base, service.tokens.read_write) as client:
        answers = {
            "bad json": client.post("/fingerprint", content=b'{"texts": ['),
            "not utf-8": client.post("/fingerprint", content=b'{"texts": ["\xff"]}'),
            "not an object": client.post("/fingerprint", json=["a"]),
            "not strings": client.post("/fingerprint", json={"texts": [1]}),
            "bad k": client.post("/query", json={"texts": ["保护人民"], "k": 99}),
            "bad hex": client.post("/query", json={"fingerprints": ["xyz"]}),
            "both": client.post("/query", json={"texts": ["a"], "fingerprints": ["00"]}),
            "deep": client.post("/fingerprint", content=b"[" * 50_000),
            # Python's int() refuses over 4,300 digits: that was a 500 and a traceback in the log.
            "huge integer": client.post("/query", content=b'{"texts": ["a"], "k": ' + b"9" * 5000 + b"}"),
            # json keeps the last of two members silently: that document was stored under "b".
            "repeated member": client.post(
                "/add", content='{"documents": [{"key": "a", "text": "保护人民", "key": "b"}]}'.encode()
            ),
        }
        missing = client.get("/nowhere")
    for name, answer in answers.items():
        assert answer.status_code == 400, (name, answer.text)
        error = answer.json()["error"]
        assert error and "\n" not in error and "Traceback" not in error, (name, error)
    assert answers["bad json"].json()["error"].startswith("malformed JSON")
    assert "0 to 64" in answers["bad k"].json()["error"]
    assert answers["huge integer"].json()["error"] == "malformed JSON: an integer of 5,000 digits"
    assert answers["repeated member"].json()["error"] == "malformed JSON: the member 'key' appears twice in one object"
    assert missing.status_code == 404 and "error" in missing.json()


def test_a_member_the_service_does_not_know_is_refused_not_ignored(service, base, writer_url):
    # Ignored, a misspelt option was a silently wrong answer: "K": 3 was answered at the default k,
    # "skip_near_duplicate": true stored the near-duplicates, a document's "meta" was never stored.
    text = "中华人民共和国保护人民的合法权益，维护社会秩序，保障公民的基本权利和自由。"
    with _client(base, service.tokens.read_write) as client:
        answers = {
            "/fingerprint": client.post("/fingerprint", json={"texts": [text], "text": "x"}),
            "/query": client.post("/query", json={"texts": [text], "K": 3}),
            "/add": client.post("/add", json={"documents": [{"key": "u0", "text": text}], "skip_near_duplicate": True}),
        }
        for path, answer in answers.items():
            assert answer.status_code == 400, (path, answer.text)
            assert answer.json()["error"].startswith("unknown member "), answer.text
        added = client.post(
            "/add", json={"documents": [{"key": "u1", "text": text, "meta": {"a": 1}}, {"key": "u2", "text": text}]}
        ).json()
    assert added["added"] == 1 and [failure["key"] for failure in added["failed"]] == ["u1"], added
    assert "unknown member 'meta'" in added["failed"][0]["error"]
    store = Store(writer_url)
    try:
        assert store.get("u0") is None and store.get("u1") is None and store.get("u2") is not None
    finally:
        store.close()


def test_openapi_describes_the_endpoints_as_served(service, base):
    with _client(base, service.tokens.read_only) as client:
        description = client.get("/openapi.json").json()
        assert set(description["paths"]) == {"/fingerprint", "/query", "/add", "/health", "/openapi.json"}
        for path, operations in description["paths"].items():
            for method in operations:
                # Every method described is served (anything else would answer 405 before the token is read).
                answer = client.request(method.upper(), path, json={"texts": ["保护人民"]})
                assert answer.status_code != 405, (method, path)
    limits = description["paths"]["/fingerprint"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert limits["properties"]["texts"]["maxItems"] == service.limits.max_texts
    assert "403" in description["paths"]["/add"]["post"]["responses"]


def test_a_superuser_url_is_refused(database_url, tmp_path):
    with Store(database_url) as store:
        assert store.superuser_reach(), "the test server's admin URL is expected to be a superuser's"
    with pytest.raises(PermissionDeniedError, match="must not hold a superuser's rights"):
        open_service(database_url.render_as_string(hide_password=False), token_directory=tmp_path)


def test_a_member_of_a_server_role_is_refused(database_url, make_role, tmp_path):
    role = make_role(database_url, "GRANT pg_read_server_files TO {role}", prefix="simhash_http")
    url = database_url.set(username=role, password=None).render_as_string(hide_password=False)
    with pytest.raises(PermissionDeniedError, match="pg_read_server_files"):
        open_service(url, token_directory=tmp_path)


def test_a_role_that_may_create_roles_is_refused_like_a_superuser(database_url, make_role, tmp_path):
    # On PostgreSQL 15 a CREATEROLE role may GRANT pg_execute_server_program to itself, and so run
    # programs as the server's OS account: it was accepted as "not a superuser".
    role = make_role(database_url, "ALTER ROLE {role} CREATEROLE", prefix="simhash_http")
    url = database_url.set(username=role, password=None).render_as_string(hide_password=False)
    with pytest.raises(PermissionDeniedError, match="may create roles"):
        open_service(url, token_directory=tmp_path)


def test_a_role_that_may_alter_a_setting_of_the_system_is_refused(database_url, make_role, tmp_path):
    # ALTER SYSTEM on archive_command writes a command the server's account runs: a superuser's reach.
    role = make_role(database_url, "GRANT ALTER SYSTEM ON PARAMETER archive_command TO {role}", prefix="simhash_http")
    url = database_url.set(username=role, password=None).render_as_string(hide_password=False)
    with pytest.raises(PermissionDeniedError, match="ALTER SYSTEM on archive_command"):
        open_service(url, token_directory=tmp_path)


def test_tokens_are_kept_private_and_not_through_links(tmp_path):
    first = http_service.tokens(tmp_path / "keep")
    again = http_service.tokens(tmp_path / "keep")
    assert first == again and first.read_write != first.read_only
    for name in (http_service.READ_WRITE_TOKEN_FILE, http_service.READ_ONLY_TOKEN_FILE):
        assert stat.S_IMODE((tmp_path / "keep" / name).stat().st_mode) == 0o600
    assert first.role_of(first.read_only) == "read-only" and first.role_of("x") is None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("someone else's\n")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / http_service.READ_WRITE_TOKEN_FILE).symlink_to(elsewhere)
    with pytest.raises(Exception, match="symbolic link"):
        http_service.tokens(tmp_path / "linked")
    assert elsewhere.read_text() == "someone else's\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_http_through_the_cli(writer_url, tmp_path, sample_paragraphs):
    port = _free_port()
    environment = {**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)}
    command = [sys.executable, "-m", "simhash_store.cli", "--db", writer_url, "serve", "--http", f"127.0.0.1:{port}"]
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(process.stdout.readline())
        assert first["url"] == f"http://127.0.0.1:{port}"
        token = Path(first["read_only_token_file"]).read_text().strip()
        with _client(first["url"], token) as client:
            answer = client.post("/fingerprint", json={"texts": [sample_paragraphs[0]]})
        assert answer.json()["results"][0]["fingerprint"] == to_hex(fingerprint(sample_paragraphs[0]))
    finally:
        process.terminate()
        process.wait(timeout=30)


# What /etc/hosts says on Debian and Ubuntu (this test machine's names 127.0.0.1 alone), given to the
# service's process: localhost is ::1 first, then 127.0.0.1, as Python's and Node's clients try it.
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


def test_serve_http_on_a_name_listens_on_every_address_it_names(writer_url, tmp_path):
    """``serve --http localhost:PORT`` listened on 127.0.0.1 alone and printed http://localhost:PORT;
    where localhost is also ::1 (Debian, Ubuntu), a client of that URL in Python tried ::1 first,
    where another local user listened meanwhile and read the token of every request while the
    service ran (found by hand as two OS users). It now listens on each address of the name, and
    one taken already is one line."""
    import httpx

    port = _free_port()
    with socket.socket(socket.AF_INET6) as theirs:  # another user's, on ::1 (its owner does not matter)
        theirs.bind(("::1", port))
        theirs.listen()
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _LOCALHOST_AS_DEBIAN_NAMES_IT,
                "--db",
                writer_url,
                "serve",
                "--http",
                f"localhost:{port}",
            ],
            env={**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith(f"Error: cannot listen on localhost:{port}, which names ::1, 127.0.0.1: ")
    assert "Address already in use" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _LOCALHOST_AS_DEBIAN_NAMES_IT,
            "--db",
            writer_url,
            "serve",
            "--http",
            f"localhost:{port}",
        ],
        env={**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path / "second")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        announced = json.loads(process.stdout.readline())
        assert announced["url"] == f"http://localhost:{port}"
        token = Path(announced["read_only_token_file"]).read_text().strip()
        for address in (f"[::1]:{port}", f"127.0.0.1:{port}"):
            answer = httpx.get(f"http://{address}/health", headers={"Authorization": f"Bearer {token}"}, timeout=30)
            assert answer.status_code == 200, address
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_serve_http_refuses_a_superuser_in_one_line(database_url, tmp_path):
    environment = {**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)}
    url = database_url.render_as_string(hide_password=False)
    done = subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", "--db", url, "serve", "--http", f"127.0.0.1:{_free_port()}"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("Error: the service's database role") and done.stderr.count("\n") == 1, done.stderr


def test_serve_http_on_a_port_in_use_is_one_line(writer_url, tmp_path):
    with http_service.listen("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "simhash_store.cli", "--db", writer_url, "serve", "--http", f"127.0.0.1:{port}"],
            env={**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert done.stderr == f"Error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_a_read_only_database_role_queries_and_its_adds_are_refused(
    database_url, make_role, tmp_path, sample_paragraphs
):
    role = make_role(database_url, prefix="simhash_http_reader")
    with Store(database_url) as store:
        store.add([NewDocument("p0", fingerprint(sample_paragraphs[0], store.scheme))])
        store.grant_read_only(role)
    service = open_service(
        database_url.set(username=role, password=None).render_as_string(hide_password=False), token_directory=tmp_path
    )
    try:
        with running(service) as base, _client(base, service.tokens.read_write) as client:
            found = client.post("/query", json={"texts": [sample_paragraphs[0]], "k": 0})
            refused = client.post("/add", json={"documents": [{"key": "p1", "text": sample_paragraphs[1]}]})
    finally:
        service.close()
    assert [m["key"] for m in found.json()["results"][0]["matches"]] == ["p0"]
    assert refused.status_code == 403, refused.text
    assert "\n" not in refused.json()["error"]


@pytest.mark.slow
def test_serve_http_on_the_embedded_store_connects_as_its_owner(sample_paragraphs):
    # Under /tmp: the embedded server's own system user must reach it when tests run as root.
    parent = Path(tempfile.mkdtemp(prefix="simhash-store-http-"))
    environment = {**os.environ, "SIMHASH_STORE_DATA_DIR": str(parent / "data")}
    environment.pop("SIMHASH_STORE_URL", None)
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "simhash_store.cli", "serve", "--http", str(port), "--print-tokens"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.poll() is not None else "serve --http printed nothing"
        printed = json.loads(line)
        assert printed["url"] == f"http://127.0.0.1:{port}"  # a PORT alone: loopback
        with _client(printed["url"], printed["read_write_token"]) as client:
            added = client.post("/add", json={"documents": [{"key": "p0", "text": sample_paragraphs[0]}]})
            found = client.post("/query", json={"texts": [sample_paragraphs[0]], "k": 0})
        assert added.json()["added"] == 1, added.text
        assert [m["key"] for m in found.json()["results"][0]["matches"]] == ["p0"]
        url = subprocess.run(
            [sys.executable, "-m", "simhash_store.cli", "url"],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "user=simhash_owner" in url.stdout, (
            url.stdout + url.stderr
        )  # the store was handed over, as by serve --listen
        process.terminate()
        assert process.wait(timeout=90) == 0, process.stderr.read()
        pid_file = parent / "data" / "pgdata" / "postmaster.pid"
        for _ in range(600):  # the embedded server stops once its last user has exited (bounded by the library)
            if not pid_file.exists():
                break
            time.sleep(0.1)
        assert not pid_file.exists(), "the embedded server outlived serve --http"
    finally:
        process.kill()
        process.wait(timeout=90)
        shutil.rmtree(parent, ignore_errors=True)


def test_serve_http_on_a_unix_socket_only_its_owner_can_reach(writer_url, tmp_path, sample_paragraphs):
    # Over TCP another user may take a stopped service's port and read the next client's token;
    # a socket of mode 0600 in a directory of one's own leaves no such opening.
    socket_path = tmp_path / "run" / "http.sock"
    environment = {**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)}
    command = [sys.executable, "-m", "simhash_store.cli", "--db", writer_url, "serve", "--http", f"unix:{socket_path}"]
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(process.stdout.readline())
        assert (first["url"], first["unix_socket"]) == ("http://localhost", str(socket_path))
        assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
        assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700
        token = Path(first["read_only_token_file"]).read_text().strip()
        transport = httpx.HTTPTransport(uds=str(socket_path))
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(transport=transport, base_url=first["url"], headers=headers, timeout=60) as client:
            answer = client.post("/fingerprint", json={"texts": [sample_paragraphs[0]]})
            refused = client.post("/fingerprint", json={"texts": ["x"]}, headers={"Authorization": "Bearer nope"})
        assert answer.json()["results"][0]["fingerprint"] == to_hex(fingerprint(sample_paragraphs[0]))
        assert refused.status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0 and not socket_path.exists()  # removed when the service stops


def test_serve_http_refuses_a_unix_socket_in_a_directory_others_may_write_to(writer_url, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: another user could put a socket of theirs at the path
    done = subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", "--db", writer_url, "serve", "--http", f"unix:{shared}/http.sock"],
        env={**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: cannot listen on {shared}/http.sock: its directory is not yours alone")
    assert done.stderr.count("\n") == 1 and not (shared / "http.sock").exists()


def test_serve_http_on_a_unix_socket_in_use_is_one_line_and_leaves_it_alone(writer_url, tmp_path):
    socket_path = tmp_path / "run" / "http.sock"
    socket_path.parent.mkdir(mode=0o700)
    with http_service.listen_unix(socket_path):  # a running service's socket: not taken over
        done = subprocess.run(
            [sys.executable, "-m", "simhash_store.cli", "--db", writer_url, "serve", "--http", f"unix:{socket_path}"],
            env={**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1
        assert done.stderr == f"Error: cannot listen on {socket_path}: Address already in use\n"
        assert stat.S_ISSOCK(socket_path.stat().st_mode)


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (made by the openssl command)."""
    certificate, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]
        + ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        + ["-keyout", str(key), "-out", str(certificate)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    key.chmod(0o600)
    return certificate, key


@contextlib.contextmanager
def _squatter(port: int, context: ssl.SSLContext | None) -> Iterator[list[bytes]]:
    """Another user's listener on a stopped service's port: records every byte a client sends it
    (through TLS with ``context``, its own certificate)."""
    received: list[bytes] = []
    with socket.create_server(("127.0.0.1", port)) as listening:
        listening.settimeout(30)

        def accept() -> None:
            with contextlib.suppress(OSError):
                connection, _ = listening.accept()
                with connection:
                    connection.settimeout(5)
                    if context is not None:
                        connection = context.wrap_socket(connection, server_side=True)
                    while chunk := connection.recv(65536):
                        received.append(chunk)

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        yield received
        thread.join(timeout=30)


def test_over_https_the_token_goes_only_to_the_holder_of_the_certificates_key(writer_url, tmp_path, sample_paragraphs):
    certificate, key = _certificate(tmp_path, "service")
    port = _free_port()
    environment = {**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)}
    command = [sys.executable, "-m", "simhash_store.cli", "--db", writer_url, "serve", "--http", f"127.0.0.1:{port}"]
    command += ["--tls-cert", str(certificate), "--tls-key", str(key)]
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(process.stdout.readline())
        assert first["url"] == f"https://127.0.0.1:{port}"
        token = Path(first["read_write_token_file"]).read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(
            base_url=first["url"], headers=headers, timeout=30, verify=ssl.create_default_context(cafile=certificate)
        ) as client:
            answer = client.post("/fingerprint", json={"texts": [sample_paragraphs[0]]})
        assert answer.json()["results"][0]["fingerprint"] == to_hex(fingerprint(sample_paragraphs[0]))
        with pytest.raises(httpx.HTTPError):  # plain HTTP is not answered
            httpx.get(f"http://127.0.0.1:{port}/health", headers=headers, timeout=30)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0
    # the service is stopped; another user takes its port, in plain TCP, then with a certificate of hers
    other_certificate, other_key = _certificate(tmp_path, "mallory")
    theirs = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    theirs.load_cert_chain(other_certificate, other_key)
    for context in (None, theirs):
        with _squatter(port, context) as received:
            with httpx.Client(
                base_url=first["url"],
                headers=headers,
                timeout=10,
                verify=ssl.create_default_context(cafile=certificate),
            ) as client:
                with pytest.raises(httpx.HTTPError):
                    client.post("/add", json={"documents": []})
        assert token.encode() not in b"".join(received)
        assert b"Bearer" not in b"".join(received)


@pytest.mark.parametrize(
    "problem",
    [
        "key readable by others",
        "key of another certificate",
        "certificate missing",
        "key alone",
        "unix socket",
        "certificate others may write",
        "directory others may write",
    ],
)
def test_serve_https_refuses_a_bad_certificate_or_key_in_one_line(writer_url, tmp_path, problem):
    certificate, key = _certificate(tmp_path, "service")
    _, other_key = _certificate(tmp_path, "other")
    where = f"127.0.0.1:{_free_port()}"
    options = ["--tls-cert", str(certificate), "--tls-key", str(key)]
    expected = {
        "key readable by others": f"Error: the TLS key {key} must be yours and readable by you alone (chmod 600)",
        "key of another certificate": f"Error: cannot use the TLS certificate {certificate} with the key {other_key}",
        "certificate missing": f"Error: cannot read the TLS certificate {tmp_path / 'missing.crt'}",
        "key alone": "Error: --tls-cert and --tls-key go together",
        "unix socket": "Error: --tls-cert is for --http HOST:PORT",
        # what clients trust: another user who could rewrite or replace it gets their key trusted
        "certificate others may write": f"Error: the TLS certificate {certificate} could be replaced by another user "
        f"({certificate} may be written by other users)",
        "directory others may write": f"Error: the TLS certificate {certificate} could be replaced by another user "
        f"({tmp_path} may be written by other users without the sticky bit)",
    }[problem]
    if problem == "key readable by others":
        key.chmod(0o644)
    elif problem == "key of another certificate":
        options[3] = str(other_key)
    elif problem == "certificate missing":
        options[1] = str(tmp_path / "missing.crt")
    elif problem == "key alone":
        options = options[2:]
    elif problem == "certificate others may write":
        certificate.chmod(0o666)  # (group write alone counts when the group holds others)
    elif problem == "directory others may write":
        tmp_path.chmod(0o777)
    else:
        where = f"unix:{tmp_path}/run/http.sock"
    done = subprocess.run(
        [sys.executable, "-m", "simhash_store.cli", "--db", writer_url, "serve", "--http", where, *options],
        env={**os.environ, "SIMHASH_STORE_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert done.stderr.startswith(expected) and done.stderr.count("\n") == 1, done.stderr


def test_a_unix_socket_whose_directory_another_user_could_swap_is_refused(tmp_path):
    # The socket's own directory was checked, through any link on the way: a link of another user's
    # (in /tmp, where the kernel may follow it) pointing at a directory of ours passed, and so did a
    # directory of ours inside one others may write without the sticky bit. Either way they could
    # later put a directory of theirs, with a socket of theirs, at the path clients connect to, and
    # read the next client's token.
    from simhash_store.config import ConfigError

    open_to_all = tmp_path / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    (open_to_all / "mine").mkdir(mode=0o700)
    with pytest.raises(ConfigError, match="may be written by other users without the sticky bit"):
        http_service.listen_unix(open_to_all / "mine" / "http.sock")
    assert not (open_to_all / "mine" / "http.sock").exists()
    open_to_all.chmod(0o1777)  # like /tmp: no one renames what is not theirs
    with http_service.listen_unix(open_to_all / "mine" / "http.sock"):
        assert stat.S_ISSOCK((open_to_all / "mine" / "http.sock").stat().st_mode)
    if os.geteuid() == 0:  # a link of another user's: only root can stage that here
        real = tmp_path / "real"
        real.mkdir(mode=0o700)
        link = tmp_path / "link"
        link.symlink_to(real)
        os.lchown(link, 65534, 65534)
        with pytest.raises(ConfigError, match=f"{link} belongs to another user"):
            http_service.listen_unix(link / "http.sock")
        assert not (real / "http.sock").exists()


def test_a_certificate_reached_through_a_link_is_checked_where_the_link_leads(tmp_path):
    # A link in a directory of one's own to a certificate in a directory others may write passed
    # the checks (the same file named directly was refused), and another user could put their
    # certificate there at any time after the service started: clients reading it through the
    # link then trusted their key, and their listener on the stopped service's port got the token.
    from simhash_store.errors import ConfigError

    mine, shared = tmp_path / "mine", tmp_path / "shared"
    mine.mkdir(mode=0o700)
    shared.mkdir()
    shared.chmod(0o777)
    certificate, key = _certificate(mine, "service")
    certificate.rename(shared / certificate.name)
    certificate.symlink_to(shared / certificate.name)
    with pytest.raises(ConfigError, match=f"could be replaced by another user \\({shared} may be written by other"):
        http_service.tls(certificate, key)
    (shared / certificate.name).rename(tmp_path / certificate.name)
    certificate.unlink()
    certificate.symlink_to(tmp_path / certificate.name)
    assert http_service.tls(certificate, key).certificate == certificate  # a link to a file no one else may replace
    if os.geteuid() == 0:  # a link of another user's, who may point it elsewhere: only root can stage that here
        os.lchown(certificate, 65534, 65534)
        with pytest.raises(ConfigError, match="is a link of another user's"):
            http_service.tls(certificate, key)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can stage another user's link")
def test_a_link_of_another_users_between_two_links_of_ones_own_is_refused(tmp_path):
    # The path as given and the path it resolves to were checked, not the links between: a link
    # of one's own to a link of another user's (in /tmp, say) to a directory or certificate of
    # one's own passed, and its owner could point it at their own socket or certificate later.
    from simhash_store.errors import ConfigError

    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    real = mine / "real"
    real.mkdir(mode=0o700)
    theirs = tmp_path / "theirs"
    theirs.symlink_to(real)
    os.lchown(theirs, 65534, 65534)
    (mine / "socket").symlink_to(theirs)
    with pytest.raises(ConfigError, match=f"{theirs} is a link of another user's"):
        http_service.listen_unix(mine / "socket" / "http.sock")
    assert not (real / "http.sock").exists()
    certificate, key = _certificate(real, "service")
    (mine / "cert.pem").symlink_to(theirs / certificate.name)
    with pytest.raises(ConfigError, match=f"{theirs} is a link of another user's"):
        http_service.tls(mine / "cert.pem", key)
    os.lchown(theirs, 0, 0)  # the same chain of links all one's own
    assert http_service.tls(mine / "cert.pem", key).certificate == mine / "cert.pem"
    with http_service.listen_unix(mine / "socket" / "http.sock"):
        assert (real / "http.sock").exists()


def test_a_client_gone_mid_body_is_no_failure_in_the_services_log(service, base, caplog):
    # A token holder that hung up before its body arrived put a ClientDisconnect traceback in the
    # service's log under "failed" (found by a hostile pass): nothing failed on the service's side.
    port = int(base.rsplit(":", 1)[1])
    head = (
        f"POST /fingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {service.tokens.read_only}\r\n"
        "Content-Type: application/json\r\nContent-Length: 48\r\n\r\n"
    )
    with caplog.at_level(logging.ERROR, logger=http_service.__name__):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
            connection.sendall(head.encode() + b'{"texts": [')
            time.sleep(0.5)  # the request reaches the endpoint before the hang-up (not a measure)
        with _client(base, service.tokens.read_only) as client:  # answered after it, as ever
            assert client.post("/fingerprint", json={"texts": ["hello world"]}).status_code == 200
    assert not [r for r in caplog.records if "failed" in r.getMessage()], [r.getMessage() for r in caplog.records]


def test_a_key_that_is_not_valid_unicode_is_a_failed_document_and_the_others_are_answered(service, base, writer_url):
    # The answer is UTF-8, which cannot hold the lone surrogate a client sends as the escape \ud800:
    # the failed document's key was put in the answer as given, writing the answer raised after the
    # good document was stored, and the client got a 500 (a traceback in the log) for a request
    # that had stored something.
    body = {"documents": [{"key": "good", "text": "保护人民的合法权利"}, {"key": "bad\ud800", "text": "保护人民"}]}
    with _client(base, service.tokens.read_write) as client:
        answer = client.post("/add", content=json.dumps(body).encode())  # ASCII JSON: the escape travels
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["added"] == 1
    assert [(f["index"], f["key"]) for f in result["failed"]] == [(1, "bad\\ud800")]
    assert "lone surrogate" in result["failed"][0]["error"]
    with Store(writer_url) as store:
        assert store.count() == 1 and store.get("good") is not None


def test_a_query_answer_is_bounded_in_matches_not_only_in_texts(writer_url, tmp_path):
    # 200 fingerprints at k = 64 over 20,000 documents (a 14 KB request, read-only token) made an
    # answer of 4 million matches: 2.5 GB of the service's memory and growing.
    spread = [(n * 0x9E3779B97F4A7C15) % (1 << 64) for n in range(1, 41)]
    with Store(writer_url) as store:
        store.add([NewDocument(f"near{n}", n) for n in range(40)])  # within 6 bits of 0
        store.add([NewDocument(f"far{n}", value) for n, value in enumerate(spread)])
        every = store.query_many([0, 1 << 63], 64)
        assert [len(matches) for matches in every] == [80, 80]
        near = store.query_many([0, spread[0]], 10)
        assert len(near[0]) >= 40  # more than its share (31) of the bound: asked again, alone
    opened = open_service(writer_url, token_directory=tmp_path / "tokens", limits=Limits(max_matches=60))
    try:
        with running(opened) as base, _client(base, opened.tokens.read_only) as client:
            hexes = [to_hex(0), to_hex(1 << 63)]
            for asked in (hexes, hexes[:1]):
                refused = client.post("/query", json={"fingerprints": asked, "k": 64})
                assert refused.status_code == 413, refused.text
                assert refused.json()["error"].startswith("the answer would hold more than 60 matches")
            # Within the bound the answer is the store's.
            capped = client.post("/query", json={"fingerprints": hexes, "k": 64, "max_results": 30}).json()
            assert [[m["key"] for m in r["matches"]] for r in capped["results"]] == [
                [m.key for m in matches[:30]] for matches in every
            ]
            some = client.post("/query", json={"fingerprints": [to_hex(0), to_hex(spread[0])], "k": 10}).json()
            assert [[m["key"] for m in r["matches"]] for r in some["results"]] == [
                [m.key for m in matches] for matches in near
            ]
    finally:
        opened.close()


def test_by_default_an_answer_of_more_than_100000_matches_is_refused(writer_url, database_url, tmp_path):
    with Store(database_url) as store:  # the owner: a bulk add vacuums, which the writer may not
        store.add([NewDocument(f"d{n}", (n * 0x9E3779B97F4A7C15) % (1 << 64)) for n in range(1000)])
    opened = open_service(writer_url, token_directory=tmp_path / "tokens")
    try:
        with running(opened) as base, _client(base, opened.tokens.read_only) as client:
            asked = [to_hex(n << 40) for n in range(101)]  # 101 x 1,000 matches at k = 64
            answer = client.post("/query", json={"fingerprints": asked, "k": 64})
            assert answer.status_code == 413, len(answer.content)
            assert client.post("/query", json={"fingerprints": asked[:100], "k": 64}).status_code == 200
    finally:
        opened.close()
