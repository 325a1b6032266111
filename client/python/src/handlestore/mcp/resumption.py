"""The seam `ClusterEventStore.attach` adds in front of the SDK's session
manager (inside the app's auth middleware and the SDK's own body limit).

The SDK keeps a stateful session in the process that opened it and answers
404 to any request for it elsewhere, a `GET` with `Last-Event-ID` included:
its own replay works only on the session's replica. So this wrapper

- serves every `GET` whose `Last-Event-ID` is one of the store's ids
  itself, from the cluster, on whatever replica gets it: the stored events
  and then the origin's later ones (follow.py). The event id is the
  capability, as in the SDK's own replay: 128 random bits naming one stream;
- on a `POST`, reads the JSON-RPC request's id from the body (with its JSON
  type, which the SDK's stream id `str(id)` loses) and sets the session the
  request belongs to (origin.py), found by its `Mcp-Session-Id`; a session
  is created with its `initialize` and named when the answer's header says
  its id.
"""

from __future__ import annotations

import json
import logging
import weakref
from typing import TYPE_CHECKING, Protocol

import anyio
from mcp.server.streamable_http import EventCallback, EventMessage
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from sse_starlette import EventSourceResponse
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from handlestore.mcp.completion import is_request_id
from handlestore.mcp.event_layout import KEEPALIVE
from handlestore.mcp.origin import CURRENT, Session

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

logger = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"


class Streams(Protocol):
    """What the wrapper needs of the event store (`ClusterEventStore`)."""

    async def find_stream(self, last_event_id: str) -> tuple[str, int, str] | None: ...

    async def follow(self, token: str, after: int, name: str, send_callback: EventCallback) -> None: ...


def attach(manager: StreamableHTTPSessionManager, store: Streams) -> None:
    if manager.stateless:
        raise ValueError("a stateless session manager keeps no events (the SDK passes it no event store)")
    if manager.event_store is not store:
        raise ValueError("attach the store to the session manager it was given to (event_store=store)")
    if isinstance(manager.asgi_app, Resumptions):
        raise ValueError("this session manager already has a store attached")
    wrapped = Resumptions(manager.asgi_app, store, manager)
    manager.asgi_app = wrapped  # type: ignore[assignment]


class Resumptions:
    """The ASGI wrapper; see the module's doc."""

    def __init__(self, app: ASGIApp, store: Streams, manager: StreamableHTTPSessionManager) -> None:
        self._app, self._store = app, store
        self._security = TransportSecurityMiddleware(manager.security_settings)
        self._max_body = manager.max_request_body_size
        self._sessions: weakref.WeakValueDictionary[str, Session] = weakref.WeakValueDictionary()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope) if scope["type"] == "http" else None
        if headers is None or not _handshake_era(headers):
            await self._app(scope, receive, send)  # the 2026 protocol keeps no events
            return
        if scope["method"] == "GET" and "last-event-id" in headers:
            found = await self._store.find_stream(headers["last-event-id"])
            if found is None:
                await _not_found(scope, receive, send)
            else:
                await self._resume(scope, receive, send, found)
            return
        if scope["method"] == "POST":
            await self._post(scope, receive, send, headers)
            return
        token = CURRENT.set(self._sessions.get(headers.get(SESSION_HEADER, "")))
        try:
            await self._app(scope, receive, send)
        finally:
            CURRENT.reset(token)

    async def _post(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        body, receive = await _buffered(receive, self._max_body)
        message = _json(body)
        sid = headers.get(SESSION_HEADER)
        opening = sid is None and isinstance(message, dict) and message.get("method") == "initialize"
        session = (self._sessions.get(sid) if sid is not None else None) or Session(scoped=True)
        if isinstance(message, dict) and "method" in message and is_request_id(message.get("id")):
            session.request_ids[str(message["id"])] = message["id"]
        if opening:
            send = self._naming(session, send)
        token = CURRENT.set(session)
        try:
            await self._app(scope, receive, send)
        finally:
            CURRENT.reset(token)

    def _naming(self, session: Session, send: Send) -> Send:
        """`send`, noting the session id the answer to `initialize` gives."""

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                sid = Headers(raw=message.get("headers", [])).get(SESSION_HEADER)
                if sid:
                    self._sessions[sid] = session
            await send(message)

        return sending

    async def _resume(self, scope: Scope, receive: Receive, send: Send, found: tuple[str, int, str]) -> None:
        request = Request(scope, receive)
        refused = await self._security.validate_request(request, is_post=False)
        if refused is None and "text/event-stream" not in request.headers.get("accept", ""):
            refused = JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Not Acceptable"}}, 406
            )
        if refused is not None:
            await refused(scope, receive, send)
            return
        writer, reader = anyio.create_memory_object_stream[dict](0)

        async def sender() -> None:
            async def send_event(event: EventMessage) -> None:
                data = event.message.model_dump_json(by_alias=True, exclude_unset=True)
                await writer.send({"event": "message", "data": data, "id": event.event_id})

            async with writer:
                try:
                    await self._store.follow(*found, send_event)
                except Exception:
                    logger.exception("a resumption of event stream %s failed", found[0])

        out = {"Cache-Control": "no-cache, no-transform", "Connection": "keep-alive"}
        if request.headers.get(SESSION_HEADER):
            out[SESSION_HEADER] = request.headers[SESSION_HEADER]
        response = EventSourceResponse(reader, headers=out, ping=KEEPALIVE, data_sender_callable=sender)
        await response(scope, receive, send)


def _handshake_era(headers: Headers) -> bool:
    """A request the SDK serves with sessions and events (no version header,
    or one of the versions that open with `initialize`)."""
    version = headers.get(VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    """A `Last-Event-ID` that names no stored stream: the SDK's client gives
    up after its retries with an error (an empty stream would have it
    reconnect forever)."""
    error = {"code": -32600, "message": "Not Found: no stored event stream has this Last-Event-ID"}
    await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, 404)(scope, receive, send)


async def _buffered(receive: Receive, limit: int) -> tuple[bytes, Receive]:
    """The request's body (up to `limit` bytes; b"" past it, which the SDK
    refuses), and a `receive` that hands the app the same messages."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if size > limit or not message.get("more_body", False):
            break
    body = b"".join(m.get("body", b"") for m in messages) if size <= limit else b""

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return body, replay


def _json(body: bytes) -> object:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None
