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
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.responses import JSONResponse

# What a client may take to send a request's head (its request line and headers), from opening the
# connection or from the end of the last response: a real client sends it at once.
HEAD_SECONDS = 10.0
# Requests answered at once; past it a request is 503 at once.
REQUESTS_AT_ONCE = 100


def protocol(head_seconds: float = HEAD_SECONDS) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (h11, or httptools where installed: uvicorn's own choice),
    closing a connection that holds no request under way ``head_seconds`` after it opened or after
    its last response: one that has sent nothing, part of a head, or a body past a refusal."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HeadBounded(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _head_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_head()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _await_head(self) -> None:
            self._stop_waiting()
            if not self.transport.is_closing():
                self._head_deadline = self.loop.call_later(head_seconds, self._head_overdue)

        def _stop_waiting(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _head_overdue(self) -> None:
            self._head_deadline = None
            cycle = getattr(self, "cycle", None)
            under_way = cycle is not None and not cycle.response_complete
            if not under_way and not self.transport.is_closing():
                self.transport.close()  # nothing is being answered: nothing is cut short

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


__all__ = ["HEAD_SECONDS", "REQUESTS_AT_ONCE", "RequestsAtOnce", "protocol"]
