"""The MCP Python SDK's `EventStore` on the cluster: every SSE event a
replica sends is committed before its id goes out, and a client that
reconnects with `Last-Event-ID` to any replica gets what it missed and,
while the stream's origin runs, everything after it until the response.

The layout is every client's (event_layout.py, proto/vectors/
mcp_events.json): a stream's head `{token, seq}`, its name under its
token, its events in sequence order, and while its origin may still add
to it, a liveness record naming the requests it answers (and a copy of
the ids that outlives it, kept as long as the events). An event id is
`<token>.<seq>`: unguessable, unique across replicas (one atomic batch
moves the head by compare-and-set and writes the event), and it names its
stream, so a replay is one range read. Every key expires after the TTL; a
stream keeps at most its last `max_events`.

`attach(session_manager)` is what makes a stream resumable on a replica
that does not hold its session (the SDK answers 404 there): resumption.py.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import TYPE_CHECKING

from mcp.server.streamable_http import EventCallback, EventId, EventStore, StreamId
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter

from handlestore import errors
from handlestore.client import Client
from handlestore.ids import new_handle_id
from handlestore.mcp.event_layout import (
    BUCKET,
    EVENTS_PREFIX,
    LIVE_ENDED_TTL,
    LIVE_REFRESH,
    LIVE_TTL,
    MAX_SEQ,
    Layout,
    event_id,
    parse_event_id,
)
from handlestore.mcp.follow import Follower
from handlestore.mcp.origin import CURRENT, Liveness, Session, Stream
from handlestore.mcp.resumption import attach
from handlestore.state import StoreItem

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

logger = logging.getLogger(__name__)

_APPEND_ATTEMPTS = 16


class ClusterEventStore(EventStore):
    """Events shared by every replica: pass it as the SDK's `event_store`,
    then `attach` it to the session manager. `ttl` (seconds) bounds how
    long events are kept, `max_events` how many of a stream's latest;
    `live_ttl` and `live_refresh` are the contract's (change them only in
    tests)."""

    def __init__(
        self,
        client: Client,
        *,
        ttl: float = 3600.0,
        max_events: int = 1000,
        prefix: str = EVENTS_PREFIX,
        live_ttl: float = LIVE_TTL,
        live_refresh: float = LIVE_REFRESH,
    ) -> None:
        self._client = client
        self._state = client.state_tool()
        self._ttl = max(1.0, ttl)
        self._max_events = max(BUCKET, max_events)
        self.layout = Layout(prefix)
        self._liveness = Liveness(self._state, self.layout, live_ttl, live_refresh)
        self._unscoped = Session(scoped=False)
        self._warned = False

    def attach(self, session_manager: StreamableHTTPSessionManager) -> None:
        """Wraps the manager's ASGI app (see resumption.py): streams are kept
        per session, requests' ids with their JSON type, and a GET with one
        of this store's `Last-Event-ID`s is served from the cluster on any
        replica. Call it once, after `streamable_http_app(event_store=...)`."""
        attach(session_manager, self)

    def close(self) -> None:
        """Stops refreshing liveness records (their streams' followers then
        answer `origin_lost` within the record's TTL)."""
        self._liveness.stop()

    # --- the origin: appending --------------------------------------------

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Appends an event (None: a priming event) and returns its id."""
        raw = (
            None
            if message is None
            else jsonrpc_message_adapter.dump_python(message, mode="json", by_alias=True, exclude_unset=True)
        )
        session = self._session()
        if message is not None:
            session.bind(asyncio.current_task())
        stream = session.stream(stream_id, new_handle_id)
        async with stream.lock:
            return await self._append(stream_id, stream, raw)

    def _session(self) -> Session:
        session = CURRENT.get()
        if session is not None:
            return session
        if not self._warned:
            self._warned = True
            logger.warning(
                "ClusterEventStore used without attach(session_manager): streams of different sessions with "
                "the same request id share one stream, and no other replica serves a resumption"
            )
        return self._unscoped

    async def _append(self, stream_id: str, stream: Stream, raw: object) -> EventId:
        after = stream.completion.copy()
        after.add(raw)
        first = stream.revision == 0 and stream.live_revision is None
        for attempt in range(_APPEND_ATTEMPTS):
            seq = stream.seq + 1
            if seq > MAX_SEQ:
                raise errors.InvalidArgument(f"event stream {stream.name!r} is full ({MAX_SEQ} events)")
            try:
                revision = await self._state.batch_store(self._batch(stream, seq, raw, first, after.complete))
            except (errors.Conflict, errors.NotFound):
                # Another replica appended (a follower's origin_lost): re-read.
                await asyncio.sleep(random.uniform(0, 0.005 * 2 ** min(attempt, 6)))
                await self._read_head(stream)
                continue
            stream.seq, stream.revision, stream.completion = seq, revision, after
            self._advanced(stream_id, stream, revision, first)
            await self._trim(stream)
            return event_id(stream.token, seq)
        raise errors.Unavailable(f"event stream {stream.name!r}: {_APPEND_ATTEMPTS} appends lost to other writers")

    def _batch(self, stream: Stream, seq: int, raw: object, first: bool, complete: bool) -> list[StoreItem]:
        items = [
            StoreItem(self.layout.head(stream.name), {"token": stream.token, "seq": seq}, self._ttl, stream.revision),
            StoreItem(self.layout.event(stream.token, seq), {"message": raw}, self._ttl),
            # The stream's name, kept alive as long as its events.
            StoreItem(self.layout.token(stream.token), stream.name, self._ttl),
        ]
        live = self.layout.live(stream.token)
        if first and not complete:
            items.append(StoreItem(live, stream.live_value(), self._liveness.ttl))
            # The ids again, kept as long as the events: a follower that
            # starts after the live record is gone still answers each one.
            items.append(StoreItem(self.layout.requests(stream.token), stream.live_value(), self._ttl))
        elif complete and not first and stream.live_revision is not None:
            items.append(StoreItem(live, stream.live_value(), LIVE_ENDED_TTL))
        return items

    def _advanced(self, stream_id: str, stream: Stream, revision: int, first: bool) -> None:
        if stream.completion.complete:
            self._liveness.closed(stream)
            if stream.session is not None:
                stream.session.ended(stream_id, stream)
        elif first:
            self._liveness.opened(stream, revision)

    async def _read_head(self, stream: Stream) -> None:
        entry = await self._state.retrieve(self.layout.head(stream.name))
        if entry is None:
            stream.revision = 0  # expired: written again, where it was
            return
        v = entry.value
        if not (isinstance(v, dict) and isinstance(v.get("token"), str) and isinstance(v.get("seq"), int)):
            raise errors.CodecError(f"event stream {stream.name!r}: unreadable head")
        stream.token, stream.seq, stream.revision = v["token"], v["seq"], entry.mod_revision

    async def _trim(self, stream: Stream) -> None:
        buckets = -(-self._max_events // BUCKET)
        if stream.seq % BUCKET == 0 and stream.seq // BUCKET > buckets:
            old = stream.seq // BUCKET - buckets - 1
            try:
                await self._state.delete(self.layout.bucket(stream.token, old), prefix=True, limit=BUCKET)
            except errors.HandlestoreError as e:  # the TTL removes them anyway
                logger.debug("old events not deleted yet: %s", e)

    # --- a resumption: following ------------------------------------------

    async def find_stream(self, last_event_id: str) -> tuple[str, int, str] | None:
        """`(token, seq, name)` of the stream an event id of this store
        names, or None for an unknown or malformed id."""
        parsed = parse_event_id(last_event_id or "")
        if parsed is None:
            return None
        name = await self._state.get(self.layout.token(parsed[0]))
        return (parsed[0], parsed[1], name) if isinstance(name, str) else None

    async def follow(self, token: str, after: int, name: str, send_callback: EventCallback) -> None:
        """Sends the stream's events after `after`, following its origin
        until nothing more can come (follow.py)."""
        follower = Follower(self._client, self._state, self.layout, self._ttl, token, name, send_callback)
        await follower.run(after)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """The SDK's replay: sends the events after `last_event_id` and every
        later one until the stream is complete or its origin is gone. Returns
        None always: the SDK would otherwise wait on its own process for
        more events of a stream that has none to come (and store a priming
        event on it)."""
        found = await self.find_stream(last_event_id)
        if found is not None:
            await self.follow(*found, send_callback)
        return None
