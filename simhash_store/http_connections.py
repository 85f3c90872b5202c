"""What one connection to the fingerprint service may hold: time to send a request's head, and a
place among the requests answered at once. No database, no routes.

uvicorn bounds an idle keep-alive connection (closed 5 s after its last response) but not a
connection that has sent nothing yet, or only part of a request's head, or a body no one reads:
such a connection stayed open for as long as its client liked. And its ``limit_concurrency``
counts open connections, not requests, so 100 silent connections (no token needed, a few
lines of any language) made the service answer every request 503 for as long as they were held.
Here a connection that has not sent a whole request head within :data:`HEAD_SECONDS` of opening,
or of its last response, is closed (:func:`protocol`), and the service's bound counts requests
under way (:class:`RequestsAtOnce`), so connections that send nothing take no request's place.

Open connections are bounded too (:data:`OPEN_CONNECTIONS`, below the process's open-files
limit): one who opens connections faster than :data:`HEAD_SECONDS` closes them would otherwise
use up the service's file descriptors, and then no client is accepted. Past the bound, a new
connection closes the one that has waited longest without a request under way (a connection
answering a request is never cut: at most :data:`REQUESTS_AT_ONCE` are).
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

from starlette.responses import JSONResponse

# What a client may take to send a request's head (its request line and headers), from opening the
# connection or from the end of the last response: a real client sends it at once.
HEAD_SECONDS = 10.0
# Requests answered at once; past it a request is 503 at once.
REQUESTS_AT_ONCE = 100
# Connections open at once; past it the longest-waiting connection without a request under way is closed.
OPEN_CONNECTIONS = 1000
# Connections asyncio accepts in one turn of its loop (uvicorn's ``backlog``, also the listen queue).
# They are counted against the bound only a turn or two later: the bound leaves room for three turns.
ACCEPTS_AT_ONCE = 100
# Descriptors kept for everything else the service opens (its database connections, files, logs).
_SPARE_DESCRIPTORS = 128
# The open-files limit the service raises its own to, where the hard limit allows.
_WANTED_OPEN_FILES = 65536


def open_connections_bound(wanted: int = OPEN_CONNECTIONS) -> int:
    """``wanted``, lowered so that connections accepted before they are counted and
    :data:`_SPARE_DESCRIPTORS` for everything else fit in the process's open-files limit
    (``ulimit -n``, first raised towards its hard limit); at least one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < _WANTED_OPEN_FILES:
        raised = _WANTED_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, _WANTED_OPEN_FILES)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (ValueError, OSError):
                pass  # the limit stays; the bound fits it
        wanted = min(wanted, soft - _SPARE_DESCRIPTORS - 3 * ACCEPTS_AT_ONCE)
    return max(wanted, 1)


def protocol(head_seconds: float = HEAD_SECONDS, open_connections: int = OPEN_CONNECTIONS) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (h11, or httptools where installed: uvicorn's own choice),
    closing a connection that holds no request under way ``head_seconds`` after it opened or after
    its last response: one that has sent nothing, part of a head, or a body past a refusal. With
    more than ``open_connections`` open, a new one closes the connection that has waited longest
    without a request under way."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    # Every open connection, the longest waiting for a request's head first (one event loop: no lock).
    waiting: dict[Any, None] = {}

    class HeadBounded(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _head_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_head()
            if len(waiting) > open_connections:
                for other in waiting:
                    if other is not self and not other._under_way():
                        other._close_idle()
                        break

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            waiting.pop(self, None)
            super().connection_lost(exc)

        def _await_head(self) -> None:
            self._stop_waiting()
            waiting.pop(self, None)
            if not self.transport.is_closing():
                waiting[self] = None  # to the end: the newest to start waiting
                self._head_deadline = self.loop.call_later(head_seconds, self._head_overdue)

        def _under_way(self) -> bool:
            cycle = getattr(self, "cycle", None)
            return cycle is not None and not cycle.response_complete

        def _close_idle(self) -> None:
            self._stop_waiting()
            waiting.pop(self, None)
            if not self.transport.is_closing():
                self.transport.close()

        def _stop_waiting(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _head_overdue(self) -> None:
            self._head_deadline = None
            if not self._under_way():
                self._close_idle()  # nothing is being answered: nothing is cut short

    return HeadBounded


class RequestsAtOnce:
    """ASGI middleware: at most ``limit`` requests under way; past it, 503 with one line of JSON."""

    def __init__(self, app: Any, limit: int = REQUESTS_AT_ONCE) -> None:
        self.app, self.limit, self.active = app, limit, 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.active >= self.limit:
            busy = JSONResponse(
                {"error": f"the service is answering {self.limit} requests already: try again shortly"},
                status_code=503,
                headers={"Retry-After": "1"},
            )
            await busy(scope, receive, send)
            return
        self.active += 1  # one event loop: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


__all__ = [
    "ACCEPTS_AT_ONCE",
    "HEAD_SECONDS",
    "OPEN_CONNECTIONS",
    "REQUESTS_AT_ONCE",
    "RequestsAtOnce",
    "open_connections_bound",
    "protocol",
]
