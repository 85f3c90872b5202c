"""psycopg sessions as the library opens them, and driver errors as the library reports them.

No SQLAlchemy here: both the store's engine (store/connection.py) and the `query` command's
lookup (lookup.py, which never imports SQLAlchemy) connect through these.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

import psycopg

from .config import lock_timeout, scrub
from .errors import DatabaseError, DatabaseUnavailableError, LockTimeoutError, PermissionDeniedError, SimhashStoreError


def library_error(
    driver_error: BaseException, display_url: str, secrets: list[str], *, lost: bool, unavailable: bool
) -> SimhashStoreError | None:
    """The library's error for a driver's: lock or statement timeouts, permissions, a lost
    (``lost``) or refused (``unavailable``) connection; None for any other, which keeps its traceback."""
    message = f"database {display_url}: {scrub(first_line(driver_error), secrets)}"
    sqlstate = getattr(driver_error, "sqlstate", None)
    if sqlstate == "55P03":
        return LockTimeoutError(
            f"{message} (waited {lock_timeout():g} s for a lock another session holds; "
            "SIMHASH_STORE_LOCK_TIMEOUT sets the wait)"
        )
    if sqlstate == "57014":
        return DatabaseError(f"{message} (SIMHASH_STORE_STATEMENT_TIMEOUT or the server's statement_timeout)")
    if sqlstate == "42501":
        return PermissionDeniedError(message)
    # Another application's foreign key to simhash.documents (NO ACTION: 23503; RESTRICT, PostgreSQL 18: 23001).
    if sqlstate in ("23503", "23001"):
        return DatabaseError(f"{message} (rows of that table refer to them; this transaction was rolled back)")
    # Every value the library writes is checked against its column first: a bigint that overflows
    # is an id or arrival numbered after the largest stored (another application's row with id
    # 2**63 - 1, or store_info.highest_retired_id rewritten near it), or the id sequence at its end.
    if sqlstate in ("22003", "2200H"):
        return DatabaseError(
            f"{message} (new documents are numbered after the largest id, cluster, arrival and retired id the "
            "store holds, which leave no room below 9223372036854775807: look for a row another application "
            "wrote with such an id in simhash.documents or simhash.cluster_heads, or "
            "simhash.store_info.highest_retired_id; nothing of this write was stored)"
        )
    # Defaults the database's owner (or whoever sets the role's) gives every session: a read-only
    # default, a conflict under serializable isolation, a deadlock with another writer.
    if sqlstate == "25006":
        return DatabaseError(
            f"{message} (the session is read-only: default_transaction_read_only is set for the database or "
            "role, or the server is a standby; nothing of this write was stored)"
        )
    # Before revision 0015, simhash.near and near_many were labelled parallel safe but change a setting
    # when they scan: in a statement run in parallel mode, which the database's owner can force for every
    # session (force_parallel_mode, PostgreSQL 16 on debug_parallel_query), they failed.
    if sqlstate == "25000" and "during a parallel operation" in message:
        return DatabaseError(
            f"{message} (the statement ran in parallel mode, in which simhash.near and near_many of a store "
            "before revision 0015 cannot scan: run simhash-store init to upgrade the store)"
        )
    if sqlstate in ("40001", "40P01"):
        return DatabaseError(f"{message} (this transaction was rolled back: run the command again)")
    # The server ended the session itself: idle_in_transaction_session_timeout, idle_session_timeout.
    if lost or sqlstate in ("25P03", "57P05"):
        return DatabaseUnavailableError(f"{message} (connection lost)")
    if unavailable:
        return DatabaseUnavailableError(message)
    return None


def first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


class ServerSilentError(psycopg.OperationalError):
    """The server sent nothing for the network timeout and took no new connection."""


def silent_server_in(error: BaseException | None) -> ServerSilentError | None:
    """The :class:`ServerSilentError` behind ``error`` (cleaning up after a silent server fails in
    turn, "the connection is closed": that is not the reason to give)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ServerSilentError):
            return error
        wrapped = getattr(error, "orig", None)  # SQLAlchemy's wrapper of it
        if isinstance(wrapped, ServerSilentError):
            return wrapped
        error = error.__cause__ or error.__context__
    return None


class WatchedConnection(psycopg.Connection[Any]):
    """A psycopg connection that notices a server gone silent, whatever the transport.

    TCP keepalives catch a partitioned network or a frozen host, but not a server whose
    host still answers TCP while PostgreSQL does not (a stopped postmaster, a proxy that
    stopped forwarding), and not a Unix socket. So: once the server has sent nothing for
    ``silence`` seconds while an answer is awaited, a second connection is tried; if that
    cannot be made within the connect timeout either, the wait ends with
    ``OperationalError`` and this connection is closed. A server that is merely busy
    (an index build) accepts the second connection, and the wait goes on.
    """

    silence: float = 0.0
    probe_arguments: dict[str, Any] = {}
    # A wait no lock_timeout bounds: VACUUM takes a cleanup lock on every leaf page of a B-tree it
    # cleans, waiting until no other session pins the page, and a reader's index-only scan left open
    # in a cursor pins one for as long as it likes. Seen on the probe, such a wait is cancelled once
    # it has lasted ``pin_wait`` seconds (None: SIMHASH_STORE_LOCK_TIMEOUT), and why is kept here.
    pin_wait: float | None = None
    pin_cancelled: str | None = None
    _pinned_since: float | None = None

    def wait(self, gen: Any, *args: Any, **kwargs: Any) -> Any:  # psycopg's generator protocol, not public API
        if self.silence <= 0:
            return super().wait(gen, *args, **kwargs)
        return super().wait(self._watched(gen), *args, **kwargs)

    def _watched(self, gen: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
        heard = time.monotonic()
        self._pinned_since = None
        try:
            state = next(gen)
            while True:
                ready = yield state
                now = time.monotonic()
                if ready:
                    heard = now
                elif now - heard >= self.silence:
                    if not self._server_answers():
                        self.pgconn.finish()
                        raise ServerSilentError(
                            f"the server sent nothing for {self.silence:g} s and takes no new connection: "
                            f"it is unreachable or frozen (SIMHASH_STORE_NETWORK_TIMEOUT sets the wait)"
                        )
                    heard = time.monotonic()
                state = gen.send(ready)
        except StopIteration as done:
            return done.value

    def _server_answers(self) -> bool:
        arguments = {**self.probe_arguments, "connect_timeout": max(2, min(10, round(self.silence / 2)))}
        try:
            probe = psycopg.connect(**arguments, autocommit=True)
        except psycopg.OperationalError as exc:
            return "timeout expired" not in str(exc)
        try:
            self._end_a_pinned_wait(probe)
        except psycopg.Error:
            pass  # the probe answered: that is all the watch needs
        finally:
            probe.close()
        return True

    def _end_a_pinned_wait(self, probe: psycopg.Connection[Any]) -> None:
        """Cancel this session's statement if it has waited on a buffer pin for over ``pin_wait`` seconds."""
        pid = self.info.backend_pid
        row = probe.execute(
            "SELECT wait_event_type FROM pg_catalog.pg_stat_activity WHERE pid OPERATOR(pg_catalog.=) %s", (pid,)
        ).fetchone()
        if not row or row[0] != "BufferPin":
            self._pinned_since = None
            return
        now = time.monotonic()
        if self._pinned_since is None:
            self._pinned_since = now - self.silence  # silent that long already
        limit = lock_timeout() if self.pin_wait is None else self.pin_wait
        if limit > 0 and now - self._pinned_since >= limit:
            self.pin_cancelled = (
                f"another session kept a page it had to clean pinned for over {limit:g} s (a cursor or a transaction "
                "left open in the middle of an index scan, see pg_stat_activity)"
            )
            probe.execute("SELECT pg_catalog.pg_cancel_backend(%s)", (pid,))
