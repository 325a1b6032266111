"""The origin's side of a stream: which stream an event belongs to, and the
liveness record (`live/<token>`) that tells a replica following the stream
that this process may still add to it (docs/dev/resume.md).

The SDK hands the event store only `(stream id, message)`, and its stream
ids are request ids, the same in every session. `ClusterEventStore.attach`
learns the rest from the HTTP exchange: a context variable holds the
`Session` of the request being served; the session's message loop, started
while its `initialize` was served, inherits the same `Session`. So a stream
is found by (session, SDK stream id), and the request's id keeps the JSON
type the client gave it (the POST's body), which the SDK's `str(id)` loses.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable

from handlestore import errors
from handlestore.mcp.completion import Completion, RequestId
from handlestore.mcp.event_layout import Layout, stream_name
from handlestore.state import StateTool

logger = logging.getLogger(__name__)


class Stream:
    """One stream this process appends to: its head, what it answers, and
    its liveness record's last write."""

    def __init__(self, token: str, name: str, requests: list[RequestId]) -> None:
        self.token, self.name = token, name
        self.seq, self.revision = 0, 0  # the head; revision 0: not written yet
        self.completion = Completion(requests)
        self.live_revision: int | None = None
        self.live_at = 0.0
        self.lock = asyncio.Lock()
        self.session: Session | None = None

    def live_value(self) -> dict:
        """The value of its `live/` and `requests/` records."""
        return {"requests": self.completion.requests}


class Session:
    """The streams of one MCP session in this process, or (`scoped=False`,
    a store not attached) of every session."""

    def __init__(self, scoped: bool) -> None:
        self.scoped = scoped
        self.streams: dict[str, Stream] = {}
        #: SDK stream id -> the request's id as the client sent it.
        self.request_ids: dict[str, RequestId] = {}
        self.closed = False
        self._tasks: set[int] = set()

    def stream(self, sdk_stream_id: str, new_token: Callable[[], str]) -> Stream:
        """The open stream of that id, or a new one under a new token."""
        s = self.streams.get(sdk_stream_id)
        if s is None:
            # Not known (the standalone stream, a store not attached): no
            # request recorded, so the first response completes the stream.
            # The SDK's stream id is `str(id)`: it cannot tell 7 from "7".
            known = self.request_ids.pop(sdk_stream_id, None)
            requests: list[RequestId] = [known] if known is not None else []
            token = new_token()
            s = Stream(token, stream_name(token, sdk_stream_id, self.scoped), requests)
            s.session = self
            self.streams[sdk_stream_id] = s
        return s

    def ended(self, sdk_stream_id: str, stream: Stream) -> None:
        if self.streams.get(sdk_stream_id) is stream:
            del self.streams[sdk_stream_id]

    def bind(self, task: asyncio.Task | None) -> None:
        """The session ends with `task` (its message loop, the only caller
        that stores messages): its streams stop being refreshed then."""
        if not self.scoped or task is None or id(task) in self._tasks:
            return
        self._tasks.add(id(task))
        task.add_done_callback(lambda _: self.close())

    def close(self) -> None:
        self.closed = True


#: The session of the HTTP exchange being served (set by the attached
#: wrapper), inherited by the session's message loop.
CURRENT: contextvars.ContextVar[Session | None] = contextvars.ContextVar("handlestore_mcp_session", default=None)


class Liveness:
    """Writes the liveness records of this process's open streams again
    every `refresh` seconds, each by compare-and-set on its last write: a
    record the completing event ended (or that expired) stays ended."""

    def __init__(self, state: StateTool, layout: Layout, ttl: float, refresh: float) -> None:
        self._state, self._layout = state, layout
        self.ttl, self.refresh = ttl, refresh
        self._open: set[Stream] = set()
        self._task: asyncio.Task | None = None

    def opened(self, stream: Stream, revision: int) -> None:
        stream.live_revision, stream.live_at = revision, time.monotonic()
        self._open.add(stream)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def closed(self, stream: Stream) -> None:
        self._open.discard(stream)

    async def _run(self) -> None:
        while self._open:
            await asyncio.sleep(self.refresh / 3)
            for s in [s for s in self._open if s.session is not None and s.session.closed]:
                self._open.discard(s)  # no more events can come: let the record expire
            now = time.monotonic()
            due = [s for s in self._open if now - s.live_at >= self.refresh]
            await asyncio.gather(*(self._refresh(s) for s in due))

    async def _refresh(self, stream: Stream) -> None:
        if stream.live_revision is None:  # never written: nothing to refresh (0 would create it)
            self._open.discard(stream)
            return
        try:
            stream.live_revision = await self._state.store(
                self._layout.live(stream.token), stream.live_value(), self.ttl, stream.live_revision
            )
            stream.live_at = time.monotonic()
        except (errors.Conflict, errors.NotFound):
            self._open.discard(stream)  # ended by the completing event, or expired
        except errors.Closed:
            self._open.clear()  # the client was closed: nothing can be written
        except errors.HandlestoreError as e:
            logger.warning("liveness record of an event stream not refreshed: %s", e)

    def stop(self) -> None:
        self._open.clear()
        if self._task is not None:
            self._task.cancel()
