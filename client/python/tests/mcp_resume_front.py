"""The test's own load balancer in front of two replicas: every request to
the origin except a `GET` with `Last-Event-ID`, which goes to the other
replica (a balancer that does not pin a client's reconnection). It cuts the
SSE answer to the next `tools/call` after `cut_after` messages (the
priming event not counted, always let through so the client can resume),
and records every event it lets through to the client on the call's
stream and on the resumptions, for the test to check each came once, and
counts the resumptions."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

import anyio
import httpx2
from starlette.types import Message, Receive, Scope, Send

_HOP = {"host", "content-length", "transfer-encoding", "connection"}


@dataclass
class Seen:
    """An event the client was sent: its id and its message (None: priming)."""

    event_id: str | None
    message: dict | None


@dataclass
class Front:
    origin: str  # http://host:port
    follower: str
    cut_after: int | None = None
    seen: list[Seen] = field(default_factory=list)
    resumptions: int = 0
    cut: asyncio.Event = field(default_factory=asyncio.Event)
    http: httpx2.AsyncClient = field(default_factory=lambda: httpx2.AsyncClient(timeout=None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await _body(receive)
        headers = {k.decode(): v.decode() for k, v in scope["headers"] if k.decode() not in _HOP}
        resuming = scope["method"] == "GET" and "last-event-id" in headers
        self.resumptions += resuming
        call = scope["method"] == "POST" and _method(body) == "tools/call"
        url = (self.follower if resuming else self.origin) + scope["path"]
        cut_after = self.cut_after if call else None
        if call:
            self.cut_after = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_until_gone, receive, tg.cancel_scope)
            await self._forward(scope["method"], url, headers, body, send, cut_after, record=call or resuming)
            tg.cancel_scope.cancel()

    async def _forward(
        self, method: str, url: str, headers: dict, body: bytes, send: Send, cut_after: int | None, record: bool
    ) -> None:
        started = False
        try:
            async with self.http.stream(method, url, headers=headers, content=body) as r:
                out = [(k.encode(), v.encode()) for k, v in r.headers.items() if k.lower() not in _HOP]
                await send({"type": "http.response.start", "status": r.status_code, "headers": out})
                started = True
                if r.headers.get("content-type", "").startswith("text/event-stream"):
                    await self._events(r, send, cut_after, record)
                else:
                    async for chunk in r.aiter_raw():
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx2.TransportError as e:  # the replica is gone (killed)
            if not started:
                await send({"type": "http.response.start", "status": 502, "headers": []})
                await send({"type": "http.response.body", "body": str(e).encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _events(self, r: httpx2.Response, send: Send, cut_after: int | None, record: bool) -> None:
        splitter, messages = _Splitter(), 0
        async for chunk in r.aiter_raw():
            for block in splitter.feed(chunk):
                await send({"type": "http.response.body", "body": block + b"\n\n", "more_body": True})
                event = _parse(block)
                if event is None:
                    continue  # a comment (keep-alive)
                if record:
                    self.seen.append(event)
                messages += event.message is not None
                if cut_after is not None and messages >= cut_after:
                    self.cut.set()
                    return  # the end of the answer, the origin's connection closed


class _Splitter:
    """SSE blocks (events or comments) out of a byte stream."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        # A lone "\r" at the end stays until its "\n" comes.
        self._buf = (self._buf + chunk).replace(b"\r\n", b"\n")
        *done, self._buf = self._buf.split(b"\n\n")
        return [b for b in done if b]


def _parse(block: bytes) -> Seen | None:
    fields: dict[str, str] = {}
    for line in block.decode().split("\n"):
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        fields[name] = value[1:] if value.startswith(" ") else value
    if not fields:
        return None
    data = fields.get("data", "")
    return Seen(fields.get("id"), json.loads(data) if data else None)


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message: Message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _until_gone(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


def _method(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None
