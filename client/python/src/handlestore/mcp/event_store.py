"""The MCP Python SDK's `EventStore` on the cluster: every SSE event a
replica sends is committed before its id goes out, so a client that
reconnects with `Last-Event-ID` to any replica gets what it missed.

The layout is the Rust crate's `ClusterEventStore` (client/rust/src/rmcp_seams/
event_store.rs), in the client's namespace under a prefix (`mcp/events`):

- `streams/<digest of the stream id>`: the stream's head `{token, seq}`: a
  random 128-bit token drawn with the stream's first event, and the last
  sequence number;
- `tokens/<token>`: the stream id (the SDK's replay answers with it);
- `events/<token>/<bucket>/<seq>`: one event, in sequence order.

An event id is `<token>.<seq>`: unguessable, unique across replicas (one
atomic batch moves the head by compare-and-set and writes the event), and
it names its stream, so a replay is one range read. Every key expires
after the TTL; a stream keeps at most its last `max_events`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter

from handlestore import errors
from handlestore._encoding import digest_name, page_token_after
from handlestore.client import Client
from handlestore.ids import new_handle_id
from handlestore.state import StoreItem

logger = logging.getLogger(__name__)

EVENTS_PREFIX = "mcp/events"
BUCKET = 100
_APPEND_ATTEMPTS = 16
_HEADS_CAP = 10_000
# Appends to one stream are serialized within a process (striped locks), so
# compare-and-set conflicts come only from other replicas.
_STRIPES = 64
# Digits without leading zeros: one id per event.
_EVENT_ID = re.compile(r"([A-Z2-7]{26})\.(0|[1-9][0-9]{0,19})")


def _parse_event_id(event_id: str) -> tuple[str, int] | None:
    """`<token>.<seq>` as this store mints them; None for anything else
    (a `Last-Event-ID` is whatever a client sends)."""
    m = _EVENT_ID.fullmatch(event_id)
    if m is None or int(m.group(2)) >= 2**64:
        return None
    return m.group(1), int(m.group(2))


class _Head:
    def __init__(self, token: str, seq: int, revision: int | None) -> None:
        self.token, self.seq, self.revision = token, seq, revision


class ClusterEventStore(EventStore):
    """Events shared by every replica: pass it as the SDK's `event_store`.
    `ttl` (seconds) bounds how long events are kept, `max_events` how many
    of a stream's latest."""

    def __init__(
        self, client: Client, *, ttl: float = 3600.0, max_events: int = 1000, prefix: str = EVENTS_PREFIX
    ) -> None:
        self._state = client.state_tool()
        self._ttl = max(1.0, ttl)
        self._max_events = max(BUCKET, max_events)
        self._prefix = prefix
        self._heads: dict[str, _Head] = {}
        self._locks = [asyncio.Lock() for _ in range(_STRIPES)]

    def _head_key(self, stream_id: str) -> str:
        return f"{self._prefix}/streams/{digest_name(stream_id)}"

    def _token_key(self, token: str) -> str:
        return f"{self._prefix}/tokens/{token}"

    def _stream_prefix(self, token: str) -> str:
        return f"{self._prefix}/events/{token}/"

    def _event_key(self, token: str, seq: int) -> str:
        return f"{self._stream_prefix(token)}{seq // BUCKET:012}/{seq:020}"

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Appends an event (None: a priming event) and returns its id."""
        value = {
            "message": None
            if message is None
            else jsonrpc_message_adapter.dump_python(message, mode="json", by_alias=True, exclude_unset=True)
        }
        async with self._locks[hash(stream_id) % _STRIPES]:
            head = self._heads.get(stream_id) or _Head(new_handle_id(), 0, None)
            for attempt in range(_APPEND_ATTEMPTS):
                nxt = _Head(head.token, head.seq + 1, None)
                try:
                    nxt.revision = await self._try_append(stream_id, head, nxt, value)
                except (errors.Conflict, errors.NotFound):
                    # Another replica appended: back off a little, re-read.
                    await asyncio.sleep(random.uniform(0, 0.005 * 2 ** min(attempt, 6)))
                    head = await self._read_head(stream_id)
                    continue
                await self._advanced(stream_id, nxt)
                return f"{nxt.token}.{nxt.seq}"
        raise errors.Unavailable(f"event stream {stream_id}: {_APPEND_ATTEMPTS} appends lost to other writers")

    async def _try_append(self, stream_id: str, head: _Head, nxt: _Head, value: dict) -> int:
        items = [
            StoreItem(self._head_key(stream_id), {"token": nxt.token, "seq": nxt.seq}, self._ttl, head.revision or 0),
            StoreItem(self._event_key(nxt.token, nxt.seq), value, self._ttl),
            # The stream's name, kept alive as long as its events.
            StoreItem(self._token_key(nxt.token), stream_id, self._ttl),
        ]
        return await self._state.batch_store(items)

    async def _advanced(self, stream_id: str, nxt: _Head) -> None:
        if len(self._heads) >= _HEADS_CAP:
            self._heads.clear()
        self._heads[stream_id] = nxt
        buckets = -(-self._max_events // BUCKET)
        if nxt.seq % BUCKET == 0 and nxt.seq // BUCKET > buckets:
            old = nxt.seq // BUCKET - buckets - 1
            try:
                await self._state.delete(f"{self._stream_prefix(nxt.token)}{old:012}/", prefix=True, limit=BUCKET)
            except errors.HandlestoreError as e:  # the TTL removes them anyway
                logger.debug("old events not deleted yet: %s", e)

    async def _read_head(self, stream_id: str) -> _Head:
        entry = await self._state.retrieve(self._head_key(stream_id))
        if entry is None:
            return _Head(new_handle_id(), 0, None)
        v = entry.value
        if not (isinstance(v, dict) and isinstance(v.get("token"), str) and isinstance(v.get("seq"), int)):
            raise errors.CodecError(f"event stream {stream_id}: unreadable head")
        return _Head(v["token"], v["seq"], entry.mod_revision)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Sends the events of `last_event_id`'s stream after it, in order;
        returns the stream id, or None for an unknown or malformed id."""
        parsed = _parse_event_id(last_event_id or "")
        if parsed is None:
            return None
        token, seq = parsed
        stream_id = await self._state.get(self._token_key(token))
        if not isinstance(stream_id, str):
            return None
        page: str | None = page_token_after(self._event_key(token, seq))
        while page is not None:
            got = await self._state.list(self._stream_prefix(token), limit=100, page_token=page, with_values=True)
            for entry in got.entries:
                await self._send(token, entry.key, entry.value, send_callback)
            page = got.next_page_token
        return stream_id

    @staticmethod
    async def _send(token: str, key: str, value: object, send_callback: EventCallback) -> None:
        raw = value.get("message") if isinstance(value, dict) else None
        if raw is None:
            return  # a priming event: nothing to resend
        try:
            message = jsonrpc_message_adapter.validate_python(raw, by_name=False)
        except ValueError:
            logger.warning("skipping an unreadable stored event %s", key)
            return
        seq = int(key.rsplit("/", 1)[-1])
        await send_callback(EventMessage(message, f"{token}.{seq}"))
