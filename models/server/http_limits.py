"""What keeps the backend's HTTP side answering whatever its clients do: the body limit, the time-outs
and the connection limit.

- The body: at most `max_body` bytes for the routes that carry whole meshes (Transfer Weights,
  Auto-Bind), `max_rig_body` for the others, counted as they arrive (Starlette's
  RequestBodyLimitMiddleware, through FastAPI's `max_body_size`: a chunked body is refused with 413
  as soon as it passes the limit, so no more than the limit is ever held); at most
  `max_json_values` JSON values (counted by their separators as the bytes arrive: parsing holds the
  interpreter's lock, so a huge array would stall every request while it is parsed); and no pause
  longer than `body_timeout` between two of its pieces (408). The JSON is parsed on a worker thread
  (`OffLoopRoute`), not on the event loop.
- The connection: uvicorn closes a keep-alive connection idle for `keep_alive` seconds, but has no
  deadline for a request's head and no limit on open connections, so `GuardedH11Protocol` (uvicorn's
  h11 protocol, given to it as its `http` class) adds both: a connection that has not sent a whole
  request head `header_timeout` seconds after it opened (or after its last answer) is closed, and
  past `max_connections` a new connection makes room by closing the oldest idle one (or, with none
  idle, is closed itself). The limit stays below what the process's file limit leaves for sockets,
  so idle sockets can never take the descriptors an answering client needs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from fastapi import HTTPException, Request
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from uvicorn.protocols.http.h11_impl import H11Protocol

MIB = 1024 * 1024
FD_RESERVE = 64  # descriptors kept for everything but client sockets (model files, logs, videos)


@dataclass(frozen=True)
class HttpLimits:
    """The limits of the backend's HTTP side (seconds and counts)."""

    max_body: int = 512 * MIB  # bytes of a Transfer Weights or Auto-Bind request (meshes to 5M vertices)
    max_rig_body: int = 160 * MIB  # of any other: a rig, its skinned mesh, a reference image, keys
    max_json_values: int = 2_000_000  # arrays travel as base64: a request holds far fewer values
    header_timeout: float = 10.0  # for a request's head, from the connection's start or last answer
    keep_alive: float = 5.0  # an idle keep-alive connection is closed after this
    body_timeout: float = 30.0  # the longest pause between two pieces of a request's body
    drain_timeout: float = 10.0  # reading (and dropping) the rest of a refused body, at most
    max_connections: int = 256  # open client connections (fewer when the file limit is lower)


def connection_budget(wanted: int) -> tuple[int, int]:
    """How many connections may be open and how many may wait to be accepted (the listen backlog,
    also how many one accept round takes in), within the process's limit on open files."""
    try:
        import resource
    except ImportError:  # Windows: no such limit on sockets
        return wanted, min(128, wanted)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return wanted, min(128, wanted)
    free = max(soft - FD_RESERVE, 16)
    backlog = max(4, min(128, free // 4))
    return max(4, min(wanted, free - backlog)), backlog


# ----------------------------------------------------------------------------- the body
class BodyGuard:
    """ASGI middleware: a request body's pieces may not pause longer than `body_timeout`, and the body
    may hold at most `max_json_values` JSON values (commas and colons counted as the bytes arrive)."""

    def __init__(self, app: Any, limits: HttpLimits):
        self.app = app
        self.limits = limits

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, _GuardedBody(receive, self.limits).receive, send)


class _GuardedBody:
    def __init__(self, receive: Callable, limits: HttpLimits):
        self._receive = receive
        self.limits = limits
        self.values = 0
        self.done = False

    async def receive(self) -> dict:
        if self.done:  # the body is in: what follows is the disconnect, which may come much later
            return await self._receive()
        try:
            async with asyncio.timeout(self.limits.body_timeout):
                message = await self._receive()
        except TimeoutError:
            raise HTTPException(408, f"The request's body stopped arriving for {self.limits.body_timeout:g} "
                                     "s.", headers={"Connection": "close"}) from None
        if message["type"] != "http.request":
            self.done = True
            return message
        piece = message.get("body", b"")
        self.values += piece.count(b",") + piece.count(b":")
        if self.values > self.limits.max_json_values:
            raise HTTPException(413, f"The request holds more than {self.limits.max_json_values:,} JSON "
                                     "values (arrays travel as base64: a request needs far fewer).")
        self.done = not message.get("more_body", False)
        return message


class _OffLoopRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = await run_in_threadpool(json.loads, await self.body())
        return self._json


class OffLoopRoute(APIRoute):
    """A route whose JSON body is parsed on a worker thread, so the event loop goes on serving other
    requests (FastAPI's documented way to change how a route reads its request)."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def off_loop(request: Request) -> Any:
            return await handler(_OffLoopRequest(request.scope, request.receive))

        return off_loop


# ----------------------------------------------------------------------------- the connection
class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's head, a time limit on dropping the
    rest of a refused body, and a limit on open connections (`limits`: set by `guarded_protocol`)."""

    limits = HttpLimits()
    max_connections = HttpLimits.max_connections

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._opened = self.loop.time()
        self._deadline: asyncio.TimerHandle | None = None
        self._arm(self.limits.header_timeout)
        if sum(1 for c in self.connections if not c.transport.is_closing()) > self.max_connections:
            self._make_room()

    @property
    def _idle(self) -> bool:
        """No request in progress: waiting for one, or for the rest of its head."""
        return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

    def _make_room(self) -> None:
        idle = [c for c in self.connections if c is not self and isinstance(c, GuardedH11Protocol)
                and c._idle and not c.transport.is_closing()]
        if idle:
            min(idle, key=lambda c: c._opened).transport.close()
        else:
            self.transport.close()

    def _arm(self, seconds: float) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(seconds, self._overdue)

    def _overdue(self) -> None:
        """Close a connection still without a whole request head, or still sending a refused body."""
        self._deadline = None
        draining = self.cycle is not None and self.cycle.response_complete and \
            self.conn.their_state is h11.SEND_BODY
        if (self._idle or draining) and not self.transport.is_closing():
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.SEND_BODY:  # answered before its body was in: drop the rest
            self._arm(self.limits.drain_timeout)
        else:
            self._arm(self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)


def guarded_protocol(limits: HttpLimits, max_connections: int) -> type[GuardedH11Protocol]:
    """The protocol class uvicorn runs each connection with, for these limits."""
    settings = {"limits": limits, "max_connections": max_connections}
    return type("GuardedH11Protocol", (GuardedH11Protocol,), settings)


def uvicorn_options(limits: HttpLimits) -> dict[str, Any]:
    """uvicorn.Config's settings for these limits: the guarded protocol, the keep-alive time-out, the
    most concurrent requests (past it uvicorn answers 503), the largest request head and the listen
    backlog."""
    connections, backlog = connection_budget(limits.max_connections)
    return {
        "http": guarded_protocol(limits, connections),
        "timeout_keep_alive": limits.keep_alive,
        "limit_concurrency": connections + backlog,
        "h11_max_incomplete_event_size": 16 * 1024,  # a request head is a few hundred bytes
        "backlog": backlog,
    }
