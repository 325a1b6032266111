"""A resumption that follows its stream's origin (docs/dev/resume.md): the
stored events after `Last-Event-ID`, then every later one as the origin
stores it, until the stream is complete, the client goes (the caller is
cancelled), or the origin's liveness record is gone; then what is stored,
and if the stream is still not complete, one `origin_lost` error per
request not yet answered, appended by compare-and-set on the head so that
two followers of one dead stream append it once between them.

The Python SDK's client takes a stream that ends without its response as
a reason to reconnect, over and over: ending a replay early is a loop, not
an answer. So a follower ends only when there is nothing more to say.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from mcp.server.streamable_http import EventMessage
from mcp_types import jsonrpc_message_adapter

from handlestore import errors
from handlestore._encoding import page_token_after
from handlestore.client import Client
from handlestore.mcp.completion import Completion, RequestId, is_request_id
from handlestore.mcp.event_layout import (
    ORIGIN_LOST_CODE,
    ORIGIN_LOST_MESSAGE,
    ORIGIN_LOST_REASON,
    Layout,
    event_id,
)
from handlestore.state import StateEntry, StateTool, StoreItem
from handlestore.watch import Change, ChangeKind, Watch

logger = logging.getLogger(__name__)

Send = Callable[[EventMessage], Awaitable[None]]
_Queue = asyncio.Queue[tuple[str, "Change | Exception"]]
_APPEND_ATTEMPTS = 16


def origin_lost(request_id: RequestId) -> dict:
    """The error response a follower stores for a request whose origin
    stopped before answering it."""
    error = {"code": ORIGIN_LOST_CODE, "message": ORIGIN_LOST_MESSAGE, "data": {"reason": ORIGIN_LOST_REASON}}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class Follower:
    """One resumption of the stream `token` (named `name`) to one client."""

    def __init__(
        self, client: Client, state: StateTool, layout: Layout, ttl: float, token: str, name: str, send: Send
    ) -> None:
        self._client, self._state, self._layout, self._ttl = client, state, layout, ttl
        self._token, self._name, self._send_event = token, name, send
        self._completion = Completion([])
        self._sent = 0

    async def run(self, after: int) -> None:
        """Sends every event after `after`; returns when nothing more can come."""
        self._sent = after
        # Watching first, then reading: a change is either in the read or
        # after the watches' start, never in neither.
        events = await self._client.watch(prefix=self._layout.events(self._token))
        live_watch = await self._client.watch(key=self._layout.live(self._token))
        try:
            live = await self._state.retrieve(self._layout.live(self._token))
            self._completion = Completion(await self._requests(live))
            await self._catch_up()
            if self._completion.complete:
                return
            if live is None:
                await self._finish(after)
                return
            await self._follow(events, live_watch, after)
        finally:
            events.close()
            live_watch.close()

    async def _requests(self, live: StateEntry | None) -> list[RequestId]:
        """The ids the stream answers: from the live record, or once it is
        gone, from `requests/<token>`. A stream with neither (written by a
        store that kept no such records) has none recorded: the follower
        sends what is stored and owes no error, since it can neither tell
        whether that origin lives nor type the id (the SDK's stream id is
        `str(id)`: 7 and "7" look alike)."""
        if live is None:
            live = await self._state.retrieve(self._layout.requests(self._token))
        value = live.value if live is not None else None
        if isinstance(value, dict) and isinstance(value.get("requests"), list):
            return [r for r in value["requests"] if is_request_id(r)]
        return []

    async def _follow(self, events: Watch, live: Watch, after: int) -> None:
        queue: _Queue = asyncio.Queue()
        pumps = [asyncio.create_task(_pump(w, kind, queue)) for w, kind in ((events, "event"), (live, "live"))]
        try:
            while True:
                kind, change = await queue.get()
                if isinstance(change, Exception):
                    raise change
                if kind == "live":
                    if change.kind is not ChangeKind.PUT:
                        await self._finish(after)  # the origin stopped writing
                        return
                    continue
                await self._on_event(change)
                if self._completion.complete:
                    return
        finally:
            for p in pumps:
                p.cancel()

    async def _on_event(self, change: Change) -> None:
        if change.kind is not ChangeKind.PUT:
            return  # an old event trimmed or expired
        seq = Layout.seq_of(change.key)
        if seq == self._sent + 1:
            await self._send(seq, change.value)
        elif seq > self._sent + 1:
            await self._catch_up()  # a gap: read what is stored

    async def _catch_up(self) -> None:
        """Sends every stored event after the last one sent, in order."""
        for entry in await self._read(after=self._sent):
            await self._send(Layout.seq_of(entry.key), entry.value)

    async def _read(self, after: int, upto: int | None = None) -> list[StateEntry]:
        out: list[StateEntry] = []
        page: str | None = page_token_after(self._layout.event(self._token, after))
        prefix = self._layout.events(self._token)
        while True:
            got = await self._state.list(prefix, limit=100, page_token=page, with_values=True)
            for e in got.entries:
                if upto is not None and Layout.seq_of(e.key) > upto:
                    return out
                out.append(e)
            page = got.next_page_token
            if page is None:
                return out

    async def _send(self, seq: int, value: object) -> None:
        raw = _message(value)
        self._completion.add(raw)
        self._sent = max(self._sent, seq)
        if raw is None:
            return  # a priming event: nothing to resend
        try:
            message = jsonrpc_message_adapter.validate_python(raw, by_name=False)
        except ValueError:
            logger.warning("skipping an unreadable stored event %s.%d", self._token, seq)
            return
        await self._send_event(EventMessage(message, event_id(self._token, seq)))

    async def _finish(self, after: int) -> None:
        """The origin stopped: what is stored, then the errors it owes."""
        earlier_read = False
        for _ in range(_APPEND_ATTEMPTS):
            await self._catch_up()
            if self._completion.complete:
                return
            if not earlier_read:
                # Answers the client had before it resumed count too.
                for e in await self._read(after=0, upto=after):
                    self._completion.add(_message(e.value))
                earlier_read = True
                if self._completion.complete:
                    return
            lost = self._completion.unanswered()
            if not lost or await self._append_lost(lost):
                return
        raise errors.Unavailable(f"event stream {self._token}: {_APPEND_ATTEMPTS} appends lost to other writers")

    async def _append_lost(self, lost: list[RequestId]) -> bool:
        """Appends the errors right after the last event sent; False when
        someone else appended first (the caller reads and decides again)."""
        head_key = self._layout.head(self._name)
        head = await self._state.retrieve(head_key)
        value = head.value if head is not None else None
        if isinstance(value, dict) and (value.get("token") != self._token or value.get("seq") != self._sent):
            return False
        revision = head.mod_revision if head is not None else 0
        items = [StoreItem(head_key, {"token": self._token, "seq": self._sent + len(lost)}, self._ttl, revision)]
        for i, rid in enumerate(lost, start=1):
            key = self._layout.event(self._token, self._sent + i)
            items.append(StoreItem(key, {"message": origin_lost(rid)}, self._ttl))
        items.append(StoreItem(self._layout.token(self._token), self._name, self._ttl))
        try:
            await self._state.batch_store(items)
        except (errors.Conflict, errors.NotFound):
            return False
        start = self._sent
        for i, rid in enumerate(lost, start=1):
            await self._send(start + i, {"message": origin_lost(rid)})
        return True


def _message(value: object) -> object:
    """The JSON-RPC message of a stored event (None: a priming event)."""
    return value.get("message") if isinstance(value, dict) else None


async def _pump(watch: Watch, kind: str, queue: _Queue) -> None:
    try:
        async for batch in watch:
            for change in batch.changes:
                queue.put_nowait((kind, change))
    except Exception as e:  # the follower raises it
        queue.put_nowait((kind, e))
