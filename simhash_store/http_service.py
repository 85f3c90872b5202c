"""The fingerprint service: fingerprints, radius queries and additions over HTTP, in JSON, for
programs in other languages (``simhash-store serve --http HOST:PORT``).

An ASGI application on Starlette, served by uvicorn. Every request carries a bearer token: a
read-write one, or a read-only one that may fingerprint and query but not add. The tokens are
generated on first use and kept like ``serve --listen``'s password (mode 0600, never through a
symbolic link). The database role behind the service is never a superuser: on the embedded
server it is the store's owner role, as for ``serve --listen``; any other URL connecting with a
superuser's reach is refused before anything listens. Bodies are read in chunks up to a bound
(413 past it, whatever Content-Length says), texts per request are bounded, every statement has
a time limit, and every error is one line of JSON (``{"error": "..."}``), never a traceback.

The scheme's dictionaries and weights are loaded once, at start. Requests of many texts are
fingerprinted by worker processes started then, a few texts and the database work in worker
threads, so the event loop stays free to answer other requests.

>>> limits = Limits(max_body_bytes=1024)
>>> limits.max_texts
1000
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import embedded
from .bits import from_hex, to_hex, to_signed
from .config import EMBEDDED_DATABASE, data_dir, resolve_url, uses_embedded
from .corpus import NO_WORDS, Skip, Source
from .errors import (
    ConfigError,
    DatabaseError,
    DatabaseUnavailableError,
    InvalidValueError,
    LockTimeoutError,
    PermissionDeniedError,
    SimhashStoreError,
    StoreSchemaError,
    WorkerDiedError,
)
from .fingerprint import fingerprint_if_any, no_features_message
from .http_connections import (
    ACCEPTS_AT_ONCE,
    HEAD_SECONDS,
    OPEN_CONNECTIONS,
    REQUESTS_AT_ONCE,
    RequestsAtOnce,
    open_connections_bound,
    protocol,
)
from .ingest import PARALLEL_THRESHOLD, Fingerprinter, prepare
from .ownership import links_replaceable as _links_replaceable
from .ownership import make_directories, writable_by_others
from .ownership import replaceable_by_others as _replaceable_by_others
from .scheme import DEFAULT_MAX_DISTANCE, Scheme
from .store import NewDocument, Store
from .validation import text_problem, validate_distance, validate_integer, validate_key, validate_metadata

log = logging.getLogger(__name__)

READ_WRITE_TOKEN_FILE = "http-token"
READ_ONLY_TOKEN_FILE = "http-token-read-only"
# Past this many database calls at once, requests wait for a place (the store's pool holds 6).
DATABASE_CALLS_AT_ONCE = 4
# A warm-up text: loading the scheme's dictionaries and weights takes a second or more, paid at start.
_WARM_UP = "中华人民共和国宪法保护公民的合法权利。 The service is ready."


@dataclass(frozen=True)
class Limits:
    """Bounds on one request: its body (bytes), the texts or documents in it, the seconds a
    client may take to send the body, the seconds any one database statement may take, and the
    seconds a connection may take to send a request's head (:mod:`simhash_store.http_connections`)."""

    max_body_bytes: int = 16 << 20
    max_texts: int = 1000
    max_matches: int = 100_000  # in one /query answer: at k = 64 every stored document matches every query
    body_seconds: float = 30.0
    statement_seconds: float = 30.0
    head_seconds: float = HEAD_SECONDS  # to send a request's head, from opening or from the last response
    open_connections: int = OPEN_CONNECTIONS  # past it the longest-waiting idle connection is closed

    def __post_init__(self) -> None:
        validate_integer(self.max_body_bytes, "the maximum body size", 1, 1 << 34)
        validate_integer(self.max_texts, "the maximum number of texts per request", 1, 1_000_000)
        validate_integer(self.max_matches, "the maximum number of matches per answer", 1, 1 << 40)
        validate_integer(self.open_connections, "the maximum number of open connections", 1, 1_000_000)


@dataclass(frozen=True)
class Tokens:
    read_write: str
    read_only: str
    directory: Path

    def role_of(self, given: str) -> str | None:
        """'read-write', 'read-only' or None; both compared in constant time, always both."""
        offered = given.encode("utf-8", "surrogatepass")
        write = hmac.compare_digest(offered, self.read_write.encode("ascii"))
        read = hmac.compare_digest(offered, self.read_only.encode("ascii"))
        return "read-write" if write else "read-only" if read else None


def tokens(directory: Path) -> Tokens:
    """The service's two tokens, generated on first use and kept in ``directory`` (mode 0600 each)."""
    try:
        make_directories(directory)
    except OSError as exc:
        raise DatabaseUnavailableError(f"cannot create {directory}: {exc.strerror}") from None
    # With --db the data directory holding them is not the embedded server's, checked when it starts:
    # a directory above it, or a link on the way, that another user may replace lets them point the
    # service at another directory of this user's, with the tokens kept there (another service's).
    above = _replaceable_by_others(directory) if os.name == "posix" else None
    if above:
        raise PermissionDeniedError(
            f"the tokens' directory {directory} could be replaced by another user ({above}), who could make "
            "the service take tokens kept elsewhere: keep it where only you (or root) may write its parents"
        )
    return Tokens(
        embedded.kept_secret(directory / READ_WRITE_TOKEN_FILE),
        embedded.kept_secret(directory / READ_ONLY_TOKEN_FILE),
        directory,
    )


def _no_fingerprint(error: str) -> dict[str, Any]:
    return {"fingerprint": None, "signed": None, "error": error}


class _Refused(Exception):
    """A request answered with ``status`` and ``{"error": message}``."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers


@dataclass
class FingerprintService:
    """The library side of the service: a store, its scheme (loaded), the tokens and the limits.

    Open it with :func:`open_service`; :func:`application` makes the ASGI app.
    """

    store: Store
    scheme: Scheme
    tokens: Tokens
    limits: Limits = field(default_factory=Limits)
    max_distance: int = DEFAULT_MAX_DISTANCE  # the default k: calibrate --apply's, else the library's
    server: object | None = None  # the embedded server's handle, held while the service runs
    fingerprinter: Fingerprinter | None = None  # worker processes for requests of many texts
    database_calls: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(DATABASE_CALLS_AT_ONCE))
    _restarting: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------ the work (synchronous, in threads)

    def fingerprints(self, texts: list[str]) -> list[dict[str, Any]]:
        """Per text: ``{"fingerprint": hex, "signed": "decimal bigint"}``, or both null and ``error``.

        Many texts go to the worker processes (when the service has them), a few are done here.
        """
        results: list[dict[str, Any]] = [{} for _ in texts]
        readable = []
        for index, text in enumerate(texts):
            problem = text_problem(text)
            if problem is not None:
                results[index] = _no_fingerprint(f"the text {problem}")
            else:
                readable.append(index)
        if self.fingerprinter is not None and len(readable) >= PARALLEL_THRESHOLD:
            tasks = [(Source(str(i), text=texts[i], size=len(texts[i])), None) for i in readable]
            try:
                prepared = self.fingerprinter.submit(tasks)(None)
            except WorkerDiedError:
                with self._restarting:  # the next request gets workers again
                    self.fingerprinter.terminate()
                    self.fingerprinter.start()
                raise
            for index, item in zip(readable, prepared):
                results[index] = self._answer(item.fingerprint, item.skip)
        else:
            for index in readable:
                try:
                    results[index] = self._answer(fingerprint_if_any(texts[index], self.scheme), None)
                except SimhashStoreError as exc:
                    results[index] = _no_fingerprint(str(exc))
        return results

    def _answer(self, value: int | None, skip: Skip | None) -> dict[str, Any]:
        if value is not None:
            # A decimal string: JSON numbers past 2^53 lose digits in JavaScript (and in many parsers).
            return {"fingerprint": to_hex(value, self.scheme.bits), "signed": str(to_signed(value))}
        if skip is None or skip.reason == NO_WORDS:
            return _no_fingerprint(no_features_message("the text", self.scheme))
        return _no_fingerprint(f"{skip.reason}" + (f": {skip.detail}" if skip.detail else ""))

    def close(self) -> None:
        """Let the worker processes go and close the store's connections."""
        if self.fingerprinter is not None:
            self.fingerprinter.close()
        self.store.close()

    def query(self, fingerprints: list[int | None], max_distance: int, limit: int | None) -> list[list[dict[str, Any]]]:
        """Matches of each fingerprint (None: no query, no matches), as ``query --json`` lists them."""
        wanted = [value for value in fingerprints if value is not None]
        found = iter(self._bounded_matches(wanted, max_distance, limit))
        return [
            []
            if value is None
            else [{"key": m.key, "distance": m.distance, "similarity": round(m.similarity, 6)} for m in next(found)]
            for value in fingerprints
        ]

    def _bounded_matches(self, wanted: list[int], max_distance: int, limit: int | None) -> list[list[Any]]:
        """The matches of each fingerprint, refused (413) past :attr:`Limits.max_matches` in all, holding
        about that many at most: 200 fingerprints at k = 64 over 20,000 documents (a 14 KB request)
        made an answer of 4 million matches, 2.5 GB of the service's memory. First each query up to
        its share of the bound; then only those that reached it, one by one, up to what is left."""
        if not wanted:
            return []
        bound = self.limits.max_matches

        def capped(cap: int) -> int:
            return cap if limit is None else min(limit, cap)

        share = capped(bound // len(wanted) + 1)
        found = self.store.query_many(wanted, max_distance, limit=share)
        total = sum(map(len, found))
        for index, matches in enumerate(found):
            if len(matches) < share or (limit is not None and limit <= share):
                continue  # all of this query's matches
            if total > bound:
                break
            others = total - len(matches)
            found[index] = self.store.query_many([wanted[index]], max_distance, limit=capped(bound - others + 1))[0]
            total = others + len(found[index])
        if total > bound:
            raise _Refused(
                413,
                f"the answer would hold more than {bound:,} matches: give max_results, a lower k, or fewer "
                "texts or fingerprints per request",
            )
        return found

    def add(self, documents: list[dict[str, Any]], skip_near_duplicates: bool, max_distance: int) -> dict[str, Any]:
        """Fingerprint and store documents (``key``, ``text``, optional ``metadata``); what became
        of them, as ``add`` counts them, with a line per failed document."""
        failed: list[dict[str, Any]] = []
        ready: list[NewDocument] = []
        seen: set[str] = set()
        for index, document in enumerate(documents):
            key = document.get("key")
            try:
                ready.append(self._document(document, seen))
            except SimhashStoreError as exc:
                failed.append({"index": index, "key": _printable_key(key), "error": str(exc)})
        result = (
            self.store.add(ready, skip_near_duplicates=skip_near_duplicates, max_distance=max_distance)
            if ready
            else None
        )
        return {
            "added": result.added if result else 0,
            "updated": result.updated if result else 0,
            "unchanged": result.unchanged if result else 0,
            "near_duplicates": [
                {"key": skipped.key, "match": skipped.match.key, "distance": skipped.match.distance}
                for skipped in (result.near_duplicates if result else [])
            ],
            "failed": failed,
        }

    def url(self, host: str, port: int, *, tls: bool = False) -> str:
        scheme = "https" if tls else "http"
        return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"

    def announcement(
        self, host: str, port: int, *, with_tokens: bool = False, unix_socket: str | None = None, tls: bool = False
    ) -> dict[str, Any]:
        """What ``serve --http`` prints: where the service answers (``unix_socket``: on that Unix
        socket, for URLs of http://localhost; ``tls``: an https URL), its scheme, where the
        tokens are kept (``with_tokens``: the tokens themselves)."""
        shown: dict[str, Any] = {
            "url": "http://localhost" if unix_socket else self.url(host, port, tls=tls),
            **({"unix_socket": unix_socket} if unix_socket else {}),
            "scheme": self.scheme.name,
            "read_write_token_file": str(self.tokens.directory / READ_WRITE_TOKEN_FILE),
            "read_only_token_file": str(self.tokens.directory / READ_ONLY_TOKEN_FILE),
        }
        if with_tokens:
            shown.update(read_write_token=self.tokens.read_write, read_only_token=self.tokens.read_only)
        return shown

    def _document(self, document: dict[str, Any], seen: set[str]) -> NewDocument:
        """One document of an /add request, fingerprinted, or the error that says why not."""
        key = validate_key(document.get("key"))
        for name in document:
            if name not in _DOCUMENT_MEMBERS:
                # Ignored, a misspelt "metadata" was never stored, and no one told.
                raise InvalidValueError(
                    f"document {key!r} has an unknown member {name[:40]!r} (a document takes 'key', 'text', 'metadata')"
                )
        metadata = validate_metadata(document.get("metadata"))
        text = document.get("text")
        if not isinstance(text, str):
            raise InvalidValueError(f"document {key!r} has no 'text' (a string)")
        if key in seen:
            raise InvalidValueError(f"document {key!r} is given twice in this request")
        problem = text_problem(text)
        if problem is not None:
            raise InvalidValueError(f"the text of document {key!r} {problem}")
        prepared = prepare(Source(key, text=text, size=len(text.encode("utf-8"))), None, self.scheme)
        if prepared.skip is not None:
            detail = f" ({prepared.skip.detail})" if prepared.skip.detail else ""
            raise InvalidValueError(f"document {key!r}: {prepared.skip.reason}{detail}")
        assert prepared.fingerprint is not None
        seen.add(key)
        return NewDocument(key, prepared.fingerprint, prepared.digest, prepared.length, metadata=metadata)


_DOCUMENT_MEMBERS = frozenset(("key", "text", "metadata"))


def _printable_key(key: object) -> str | None:
    """A failed document's key as the answer can hold it: None for no string, and a key that is
    not valid Unicode (a lone surrogate, sent as the escape ``\\ud800``) escaped as Python writes
    it. The answer is UTF-8, which cannot hold a lone surrogate: such a key raised while the answer
    was written, after the request's other documents were stored, and the client got a 500."""
    if not isinstance(key, str):
        return None
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return key.encode("utf-8", "backslashreplace").decode("utf-8")
    return key


def open_service(
    url: str | None = None,
    *,
    token_directory: Path | None = None,
    limits: Limits | None = None,
    jobs: int | None = None,
) -> FingerprintService:
    """The service for the store at ``url`` (None: ``SIMHASH_STORE_URL``, else the embedded server).

    On the embedded server the store is handed to its owner role first (as ``serve --listen``
    does) and the service connects as that role. Any other URL whose role has a superuser's
    reach is refused (:class:`PermissionDeniedError`). Tokens are kept in ``token_directory``
    (default: the data directory). The scheme is loaded here, once, and ``jobs`` worker processes
    (default: one per core; 1: none) are started for requests of many texts.
    """
    limits = limits or Limits()
    server = None
    if uses_embedded(url):
        address, server = embedded.hand_over(data_dir(), EMBEDDED_DATABASE)
        resolved = address.sqlalchemy()
    else:
        resolved = resolve_url(url)
    given = resolved.query.get("options")
    options = (given if isinstance(given, str) else " ".join(given or ())) + (
        f" -c statement_timeout={round(limits.statement_seconds * 1000)}ms"
    )
    store = Store(resolved.update_query_dict({"options": options.strip()}))
    try:
        reach = store.superuser_reach()
        if reach:
            through = (
                "is a superuser, or may create roles (and so give itself a server role)"
                if reach[0] == resolved.username
                else f"has a superuser's reach through {', '.join(reach)}"
            )
            raise PermissionDeniedError(
                f"the service's database role {resolved.username or '(default)'} {through}: a service that runs "
                "requests from other programs must not hold a superuser's rights; give it a role that owns "
                "or may write the store and nothing more (see docs/http.md)"
            )
        try:
            scheme = store.scheme
        except StoreSchemaError:
            scheme = store.init()  # a new store, as add would create it
        fingerprint_if_any(_WARM_UP, scheme)
        max_distance = store.recommended_distance() or DEFAULT_MAX_DISTANCE
        kept = tokens(token_directory or data_dir())
    except BaseException:
        store.close()
        raise
    fingerprinter = Fingerprinter(scheme, jobs)
    if fingerprinter.jobs > 1:
        fingerprinter.start()  # forked now, before any server thread exists; each loads the dictionaries once
    return FingerprintService(
        store, scheme, kept, limits, max_distance, server, fingerprinter if fingerprinter.jobs > 1 else None
    )


# ------------------------------------------------------------ HTTP


Handler = Callable[["FingerprintService", Any], Awaitable[dict[str, Any]]]


def _status_of(error: SimhashStoreError) -> int:
    if isinstance(error, WorkerDiedError):
        return 503
    if isinstance(error, (LockTimeoutError, DatabaseUnavailableError)):
        return 503
    if isinstance(error, PermissionDeniedError):  # the service's role may not (a read-only role's /add)
        return 403
    if isinstance(error, DatabaseError):  # a statement over its time limit, a refused permission
        return 504 if "statement timeout" in str(error) or "canceling statement" in str(error) else 500
    if isinstance(error, StoreSchemaError):
        return 500
    return 400  # a bad key, fingerprint, distance or value: the request's own


async def _body(request: Request, limits: Limits) -> bytes:
    """The body, read in chunks and refused as soon as it passes the bound (Content-Length is not trusted)."""
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(limits.body_seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_body_bytes:
                    raise _Refused(413, f"the request body is larger than {limits.max_body_bytes:,} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise _Refused(408, f"the request body took more than {limits.body_seconds:g} s to arrive") from None
    except ClientDisconnect:  # the client is gone: nothing to answer, nothing failed here
        raise _Refused(400, "the client closed the connection before its body arrived") from None
    return b"".join(chunks)


def _members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a name given twice is refused (json keeps the last silently, so
    ``{"key": "a", "text": ..., "key": "b"}`` was stored under a key the client may not mean)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _Refused(400, f"malformed JSON: the member {name[:40]!r} appears twice in one object")
            seen.add(name)
    return value


def _integer(literal: str) -> int:
    """A JSON integer; one too long for Python to read (over 4,300 digits) is a bad request, not an
    internal error (its ValueError reached the log as a traceback and the client as 500)."""
    if len(literal.lstrip("-")) > 4300:
        raise _Refused(400, f"malformed JSON: an integer of {len(literal.lstrip('-')):,} digits")
    return int(literal)


def _json_object(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data, object_pairs_hook=_members, parse_int=_integer)
    except UnicodeDecodeError:
        raise _Refused(400, "malformed JSON: the body is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise _Refused(400, f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise _Refused(400, "malformed JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise _Refused(400, f"the body must be a JSON object, not {type(value).__name__}")
    return value


def _list_of(body: dict[str, Any], name: str, limits: Limits, kind: type) -> list[Any]:
    values = body.get(name)
    if not isinstance(values, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
        raise _Refused(400, f"{name!r} must be a list of {'strings' if kind is str else 'objects'}")
    if len(values) > limits.max_texts:
        raise _Refused(413, f"{len(values):,} {name} in one request; at most {limits.max_texts:,}")
    return values


def _distance(body: dict[str, Any], default: int) -> int:
    k = body.get("k", default)
    if isinstance(k, bool) or not isinstance(k, int):
        raise _Refused(400, f"'k' must be an integer from 0 to 64, not {k!r}")
    return validate_distance(k)


def _authorized(request: Request, tokens: Tokens, write: bool) -> None:
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    challenge = {"WWW-Authenticate": 'Bearer realm="simhash-store"'}
    if scheme.lower() != "bearer" or not given.strip():
        raise _Refused(401, "this service needs 'Authorization: Bearer <token>'", challenge)
    role = tokens.role_of(given.strip())
    if role is None:
        raise _Refused(401, "the token is not one of this service's", challenge)
    if write and role != "read-write":
        raise _Refused(403, "the read-only token may fingerprint and query, not add: use the read-write token")


def _endpoint(
    service: FingerprintService, work: Handler, *, write: bool = False, body: bool = True
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            _authorized(request, service.tokens, write)
            parsed = _json_object(await _body(request, service.limits)) if body else {}
            return JSONResponse(await work(service, parsed))
        except _Refused as refused:
            return JSONResponse({"error": str(refused)}, status_code=refused.status, headers=refused.headers)
        except SimhashStoreError as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status_of(exc))
        except Exception:  # noqa: BLE001 - logged here; the client gets one line, never the traceback
            log.exception("simhash-store http: %s %s failed", request.method, request.url.path)
            return JSONResponse({"error": "internal error (the service's log has the details)"}, status_code=500)

    return endpoint


def _only(body: dict[str, Any], names: tuple[str, ...], where: str) -> None:
    """Refuse a member not among ``names``: one ignored would leave its sender's intent undone, silently
    (``"K": 3`` answered at the default k, ``"skip_near_duplicate": true`` stored the near-duplicates)."""
    for name in body:
        if name not in names:
            known = ", ".join(repr(known) for known in names)
            raise _Refused(400, f"unknown member {name[:40]!r} in {where} (it takes {known})")


async def _fingerprint(service: FingerprintService, body: dict[str, Any]) -> dict[str, Any]:
    _only(body, ("texts",), "the request")
    texts = _list_of(body, "texts", service.limits, str)
    results = await anyio.to_thread.run_sync(service.fingerprints, texts)
    return {"scheme": service.scheme.name, "results": results}


async def _query(service: FingerprintService, body: dict[str, Any]) -> dict[str, Any]:
    _only(body, ("texts", "fingerprints", "k", "max_results"), "the request")
    k = _distance(body, service.max_distance)
    limit = body.get("max_results")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise _Refused(400, f"'max_results' must be a positive integer or null, not {limit!r}")
    if ("texts" in body) == ("fingerprints" in body):
        raise _Refused(400, "give either 'texts' or 'fingerprints' (16 hex digits each)")
    if "texts" in body:
        texts = _list_of(body, "texts", service.limits, str)
        computed = await anyio.to_thread.run_sync(service.fingerprints, texts)
    else:
        computed = []
        for value in _list_of(body, "fingerprints", service.limits, str):
            try:
                computed.append({"fingerprint": to_hex(from_hex(value, service.scheme.bits), service.scheme.bits)})
            except SimhashStoreError as exc:
                raise _Refused(400, f"fingerprint {value[:40]!r}: {exc}") from None
    values = [
        None if item["fingerprint"] is None else from_hex(item["fingerprint"], service.scheme.bits) for item in computed
    ]
    matches = await anyio.to_thread.run_sync(service.query, values, k, limit, limiter=service.database_calls)
    results = []
    for index, (item, found) in enumerate(zip(computed, matches)):
        if item["fingerprint"] is None:
            results.append({"index": index, "fingerprint": None, "error": item["error"], "matches": []})
        else:
            results.append({"index": index, "fingerprint": item["fingerprint"], "matches": found})
    return {"k": k, "results": results}


async def _add(service: FingerprintService, body: dict[str, Any]) -> dict[str, Any]:
    _only(body, ("documents", "skip_near_duplicates", "k"), "the request")
    documents = _list_of(body, "documents", service.limits, dict)
    skip = body.get("skip_near_duplicates", False)
    if not isinstance(skip, bool):
        raise _Refused(400, f"'skip_near_duplicates' must be true or false, not {skip!r}")
    k = _distance(body, service.max_distance)
    return await anyio.to_thread.run_sync(service.add, documents, skip, k, limiter=service.database_calls)


async def _health(service: FingerprintService, body: dict[str, Any]) -> dict[str, Any]:
    return {"status": "ok", "scheme": service.scheme.name, "k": service.max_distance}


async def _openapi(service: FingerprintService, body: dict[str, Any]) -> dict[str, Any]:
    return openapi(service.limits)


async def _not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    message = {404: "no such endpoint (GET /openapi.json lists them)", 405: "method not allowed here"}.get(
        status, "refused"
    )
    return JSONResponse({"error": message}, status_code=status)


def application(service: FingerprintService) -> Starlette:
    """The ASGI app of ``service``: run it with uvicorn (:func:`run`) or any ASGI server."""
    routes = [
        Route("/fingerprint", _endpoint(service, _fingerprint), methods=["POST"]),
        Route("/query", _endpoint(service, _query), methods=["POST"]),
        Route("/add", _endpoint(service, _add, write=True), methods=["POST"]),
        Route("/health", _endpoint(service, _health, body=False), methods=["GET"]),
        Route("/openapi.json", _endpoint(service, _openapi, body=False), methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _not_found})


@dataclass(frozen=True)
class Tls:
    """The certificate chain and private key the service answers HTTPS with (:func:`tls`)."""

    certificate: Path
    key: Path


def tls(certificate: Path, key: Path) -> Tls:
    """Checks a certificate and its key before the service starts: both readable, the key
    readable by its owner only (as ssh wants of a private key), and a pair that fits; else one
    line (:class:`ConfigError`). Over HTTPS a client that checks the certificate sends its token
    to no one who does not hold the key, not to another user listening on a stopped service's
    port."""
    import contextlib
    import os
    import ssl
    import stat

    certificate, key = Path(certificate).absolute(), Path(key).absolute()
    try:
        found = key.stat()
    except OSError as exc:
        raise ConfigError(f"cannot read the TLS key {key}: {exc.strerror}") from None
    if found.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or found.st_uid != os.geteuid():
        raise ConfigError(f"the TLS key {key} must be yours and readable by you alone (chmod 600)")
    # The certificate is what clients trust (their --cacert): whoever may rewrite it, or replace
    # it or the key in their directories, gets clients to trust a key of theirs and to send the
    # token to their listener on a stopped service's port.
    # A file reached through a link is checked where the link leads too: whoever may write that
    # directory, or repoint the link, replaces the file clients read through it.
    for name, path in (("certificate", certificate), ("key", key)):
        replaceable = (
            _replaceable_by_others(path.parent, itself=True)
            or _replaceable_by_others(Path(os.path.realpath(path)).parent, itself=True)
            or _links_replaceable(path)
        )
        if replaceable is None:
            with contextlib.suppress(OSError):
                held = path.stat()
                if path.lstat().st_uid not in (0, os.geteuid()):
                    replaceable = f"{path} is a link of another user's"
                elif held.st_uid not in (0, os.geteuid()):
                    replaceable = f"{path} belongs to another user"
                elif writable_by_others(held, path):
                    replaceable = f"{path} may be written by other users"
        if replaceable:
            raise ConfigError(
                f"the TLS {name} {path} could be replaced by another user ({replaceable}), and clients would then "
                "trust their key: keep both files, yours and written by you alone, in a directory of your own"
            )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(certificate, key)
    except ssl.SSLError as exc:  # before OSError, which it is a kind of
        raise ConfigError(f"cannot use the TLS certificate {certificate} with the key {key}: {exc.reason}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the TLS certificate {certificate}: {exc.strerror}") from None
    return Tls(certificate, key)


def server(service: FingerprintService, host: str = "127.0.0.1", port: int = 8080, *, tls: Tls | None = None) -> Any:
    """A uvicorn server for ``service`` (``.run()`` blocks; ``.should_exit = True`` stops it),
    over HTTPS with ``tls``.

    Timeouts: an idle keep-alive connection is closed after 5 s, and one that holds no request
    under way ``limits.head_seconds`` after it opened or after its last response (it sent nothing,
    or part of a request's head); at most 100 requests are answered at once (503 past that:
    connections that send nothing take no request's place); past ``limits.open_connections``
    open connections (lowered to fit ``ulimit -n``), a new one closes the one that has waited
    longest without a request under way; a graceful stop waits 10 s for requests under way.
    """
    import uvicorn

    config = uvicorn.Config(
        RequestsAtOnce(application(service), REQUESTS_AT_ONCE),
        host=host,
        port=port,
        http=protocol(service.limits.head_seconds, open_connections_bound(service.limits.open_connections)),
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_keep_alive=5,
        limit_concurrency=None,  # it counts open connections: silent ones took every request's place
        timeout_graceful_shutdown=10,
        backlog=ACCEPTS_AT_ONCE,  # asyncio accepts this many a turn, before any is counted
        lifespan="off",
        ssl_certfile=str(tls.certificate) if tls else None,
        ssl_keyfile=str(tls.key) if tls else None,
    )
    return uvicorn.Server(config)


def listen(host: str = "127.0.0.1", port: int = 8080) -> socket.socket:
    """A socket bound and listening on ``host:port``, for :func:`run`: bound before the service
    says where it is, so a client told the address is never refused; a port in use is one line
    (:class:`ConfigError`), not a log of uvicorn's."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say so (else each response
    # waits out a delayed ACK, some 40 ms).
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(2048)
    except OSError as exc:
        listening.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return listening


def listen_on_every_address(host: str = "127.0.0.1", port: int = 8080) -> list[socket.socket]:
    """Sockets from :func:`listen` on every address ``host`` names: one for an IP address; for a
    name (``localhost``: 127.0.0.1 and, where /etc/hosts says so, ::1), each address it resolves
    to, on one port. A client of the URL with that name may try any of them (Python's and Node's
    try ::1 first), and on an address left free another local user could listen and read every
    token sent while the service runs; one already taken is one line (:class:`ConfigError`)."""
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [listen(host, port)]
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    listening: list[socket.socket] = []
    try:
        for address in dict.fromkeys(str(info[4][0]) for info in found):
            try:
                listening.append(listen(address, port))
            except ConfigError as exc:
                if not _may_listen_at(address):
                    continue  # ::1 named where IPv6 is off: no one can listen there
                raise ConfigError(
                    f"cannot listen on {host}:{port}, which names {', '.join(dict.fromkeys(str(i[4][0]) for i in found))}: "
                    f"{exc} (a client of http://{host}:{port} may try any of them: listen on one address, 127.0.0.1:{port})"
                ) from None
            port = port or listening[0].getsockname()[1]  # port 0: the others on the port the first got
    except BaseException:
        for each in listening:
            each.close()
        raise
    if not listening:
        raise ConfigError(f"cannot listen on {host}:{port}: none of its addresses is this machine's")
    return listening


def _may_listen_at(address: str) -> bool:
    """Whether anyone could listen at ``address`` (false where it is not this machine's)."""
    import errno

    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
        try:
            probe.bind((address, 0))
        except OSError as exc:
            return exc.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)
    return True


def listen_unix(path: Path) -> socket.socket:
    """A Unix socket at ``path``, mode 0600, for :func:`run`: only its owner (and root) may connect,
    and, in a directory no one else may write to, no one can put a socket of theirs at that path
    while the service is stopped (over TCP, another user may take a stopped service's port and
    read the next client's token). A leftover socket of the owner's is replaced; anything else at
    the path, or a directory others may write to, is one line (:class:`ConfigError`)."""
    import os
    import stat

    path = Path(path).absolute()
    try:
        parent = path.parent.stat()
    except OSError as exc:
        raise ConfigError(f"cannot listen on {path}: {exc.strerror}") from None
    if parent.st_uid != os.geteuid() or writable_by_others(parent, path.parent):
        raise ConfigError(
            f"cannot listen on {path}: its directory is not yours alone to write to (another user could "
            "put a socket of theirs there while the service is stopped); choose a directory of your own"
        )
    replaceable = _replaceable_by_others(path.parent)
    if replaceable:
        raise ConfigError(
            f"cannot listen on {path}: {replaceable}, so another user could put a directory of theirs in "
            "place of its directory while the service is stopped; choose a directory of your own on a path "
            "only you and root control"
        )
    try:
        found = path.lstat()
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(found.st_mode) or found.st_uid != os.geteuid():
            raise ConfigError(f"cannot listen on {path}: something else is there (not a socket of yours)")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(2)
            try:
                probe.connect(str(path))
            except OSError:
                pass  # nothing answers: a socket this user left behind (a service that was killed)
            else:
                raise ConfigError(f"cannot listen on {path}: Address already in use")
        path.unlink()
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)  # the socket file is made 0600, before anyone can connect
    try:
        listening.bind(str(path))
        listening.listen(2048)
    except OSError as exc:
        listening.close()
        raise ConfigError(f"cannot listen on {path}: {exc.strerror}") from None
    finally:
        os.umask(previous)
    return listening


def run(service: FingerprintService, listening: socket.socket | list[socket.socket], *, tls: Tls | None = None) -> None:
    """Serve on a socket from :func:`listen` until SIGINT or SIGTERM, then return (over HTTPS
    with ``tls``, from :func:`tls`).

    uvicorn stops gracefully on either signal and then raises it again with the handler it
    found: that handler is a no-op here, so that the caller returns and the process exits
    normally (its exit handlers stop an embedded server it started, which the default
    SIGTERM action would leave running).
    """
    sockets = listening if isinstance(listening, list) else [listening]
    unix = sockets[0].getsockname() if sockets[0].family == socket.AF_UNIX else None
    host, port = ("localhost", 0) if unix else sockets[0].getsockname()[:2]
    main = threading.current_thread() is threading.main_thread()
    previous = (
        {number: signal.signal(number, lambda *_: None) for number in (signal.SIGINT, signal.SIGTERM)} if main else {}
    )
    try:
        server(service, host, port, tls=tls).run(sockets=sockets)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        service.close()
        if unix:
            Path(unix).unlink(missing_ok=True)


# ------------------------------------------------------------ the OpenAPI description


def openapi(limits: Limits) -> dict[str, Any]:
    """The service's OpenAPI 3.1 description (``GET /openapi.json``)."""
    error = {"$ref": "#/components/schemas/Error"}
    hex_value = {"type": ["string", "null"], "pattern": "^[0-9a-f]{16}$", "description": "16 hex digits, unsigned"}
    texts = {"type": "array", "items": {"type": "string"}, "maxItems": limits.max_texts}
    k = {
        "type": "integer",
        "minimum": 0,
        "maximum": 64,
        "description": f"Hamming distance; default: calibrate --apply's, else {DEFAULT_MAX_DISTANCE}",
    }
    match = {
        "type": "object",
        "required": ["key", "distance", "similarity"],
        "properties": {"key": {"type": "string"}, "distance": {"type": "integer"}, "similarity": {"type": "number"}},
    }

    def answers(ok: dict[str, Any], *codes: int) -> dict[str, Any]:
        reasons = {
            400: "bad request (malformed JSON, wrong fields)",
            401: "no token, or an unknown one",
            403: "the read-only token on /add",
            408: "the body took too long",
            413: "body or list too large",
            500: "internal error",
            503: "database unavailable",
            504: "a statement over its time limit",
        }
        found = {"200": {"description": "done", "content": {"application/json": {"schema": ok}}}}
        for code in codes:
            found[str(code)] = {"description": reasons[code], "content": {"application/json": {"schema": error}}}
        return found

    common = (400, 401, 408, 413, 500, 503, 504)

    def post(summary: str, request: dict[str, Any], ok: dict[str, Any], *codes: int) -> dict[str, Any]:
        return {
            "post": {
                "summary": summary,
                "requestBody": {"required": True, "content": {"application/json": {"schema": request}}},
                "responses": answers(ok, *codes),
            }
        }

    fingerprint_result = {
        "type": "object",
        "required": ["fingerprint", "signed"],
        "properties": {
            "fingerprint": hex_value,
            "signed": {
                "type": ["string", "null"],
                "pattern": "^-?[0-9]{1,19}$",
                "description": "the same as PostgreSQL's signed bigint, in decimal (a string: "
                "JSON numbers past 2^53 lose digits in JavaScript)",
            },
            "error": {"type": "string", "description": "why there is none (e.g. no features)"},
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "simhash-store fingerprint service", "version": "1"},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/fingerprint": post(
                "Fingerprints of texts under the store's scheme",
                {
                    "type": "object",
                    "required": ["texts"],
                    "properties": {"texts": texts},
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {
                        "scheme": {"type": "string"},
                        "results": {"type": "array", "items": fingerprint_result},
                    },
                },
                *common,
            ),
            "/query": post(
                "Stored documents near each text or fingerprint, nearest first",
                {
                    "type": "object",
                    "properties": {
                        "texts": texts,
                        "fingerprints": {"type": "array", "items": {"type": "string"}, "maxItems": limits.max_texts},
                        "k": k,
                        "max_results": {"type": ["integer", "null"], "minimum": 1},
                    },
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {
                        "k": {"type": "integer"},
                        "results": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["index", "fingerprint", "matches"],
                                "properties": {
                                    "index": {"type": "integer"},
                                    "fingerprint": hex_value,
                                    "error": {"type": "string"},
                                    "matches": {"type": "array", "items": match},
                                },
                            },
                        },
                    },
                },
                *common,
            ),
            "/add": post(
                "Fingerprint and store documents (read-write token only)",
                {
                    "type": "object",
                    "required": ["documents"],
                    "properties": {
                        "documents": {
                            "type": "array",
                            "maxItems": limits.max_texts,
                            "items": {
                                "type": "object",
                                "required": ["key", "text"],
                                "additionalProperties": False,
                                "properties": {
                                    "key": {"type": "string"},
                                    "text": {"type": "string"},
                                    "metadata": {"type": "object"},
                                },
                            },
                        },
                        "skip_near_duplicates": {"type": "boolean"},
                        "k": k,
                    },
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {
                        "added": {"type": "integer"},
                        "updated": {"type": "integer"},
                        "unchanged": {"type": "integer"},
                        "near_duplicates": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "key": {"type": "string"},
                                    "match": {"type": "string"},
                                    "distance": {"type": "integer"},
                                },
                            },
                        },
                        "failed": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "index": {"type": "integer"},
                                    "key": {"type": ["string", "null"]},
                                    "error": {"type": "string"},
                                },
                            },
                        },
                    },
                },
                403,
                *common,
            ),
            "/health": {
                "get": {
                    "summary": "The service answers; its scheme and default k",
                    "responses": answers(
                        {
                            "type": "object",
                            "properties": {
                                "status": {"const": "ok"},
                                "scheme": {"type": "string"},
                                "k": {"type": "integer"},
                            },
                        },
                        401,
                    ),
                }
            },
            "/openapi.json": {"get": {"summary": "This description", "responses": answers({"type": "object"}, 401)}},
        },
    }
