"""The MCP Python SDK's `SubscriptionBus` across replicas: a replica that
publishes an event (a resource changed, a list changed) writes it to the
cluster, and every replica's bus hears it through one watch and hands it to
its local listen streams. The SDK's in-process bus reaches only listeners
of the same process.

Keys, in the client's namespace: `mcp/resources/<digest of the URI>` =
`{"uri": ...}` for a resource update (the Rust crate's `ResourceBus`
writes the same, so Rust and Python replicas hear each other), and
`mcp/lists/{tools,prompts,resources}` for list changes. Each key is kept
for an hour (the latest publish of each).

A server whose resources are handles (a cart in a handle store) need not
publish them: with `follow_store=(store, uri_prefix)` the bus also hears
every change to that store's handles as `ResourceUpdated(uri=uri_prefix +
id)`, as the Rust crate's `ResourceBus::following_store` does, so a change
costs its own write only and Rust and Python replicas following the same
store hear each other.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from handlestore import errors
from handlestore._encoding import digest_name
from handlestore.client import Client
from handlestore.watch import Change, ChangeKind, Watch, position_now

logger = logging.getLogger(__name__)

RESOURCES_PREFIX = "mcp/resources"
LISTS_PREFIX = "mcp/lists"
_KEEP = 3600.0
_LISTS: dict[str, ServerEvent] = {
    "tools": ToolsListChanged(),
    "prompts": PromptsListChanged(),
    "resources": ResourcesListChanged(),
}


class ClusterSubscriptionBus:
    """A `SubscriptionBus` over the cluster. `publish` returns once the
    event is committed; a listener registered with `subscribe` hears every
    event published after `subscribe` returned, from any replica, in order.

    The SDK subscribes before it acknowledges a listen so that no later
    event is lost, and its `subscribe` is synchronous: the bus's first
    `subscribe` (when `start()` was not awaited) reads the cluster's
    current revision there and then, blocking the event loop for one round
    trip (up to the client's deadline while no node answers; then it
    raises and the listen is refused rather than acknowledged deaf). The
    bus's watches deliver everything after that revision, so later
    `subscribe`s return at once. Await `start()` at server start-up to take
    that round trip off the first listen."""

    def __init__(self, client: Client, follow_store: tuple[str, str] | None = None) -> None:
        self._state = client.state_tool(default_ttl=_KEEP)
        self._client = client
        self._follow_store = follow_store
        self._listeners: dict[object, Callable[[ServerEvent], None]] = {}
        self._tasks: list[asyncio.Task] = []
        self._ready: asyncio.Event | None = None

    async def publish(self, event: ServerEvent) -> None:
        if isinstance(event, ResourceUpdated):
            await self._state.store(f"{RESOURCES_PREFIX}/{digest_name(event.uri)}", {"uri": event.uri})
            return
        for name, kind in _LISTS.items():
            if isinstance(event, type(kind)):
                await self._state.store(f"{LISTS_PREFIX}/{name}", {"changed": name})
                return
        raise errors.InvalidArgument(f"not an MCP server event: {event!r}")

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        if not self._tasks:
            self._spawn(self._read_point())
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe

    async def start(self) -> None:
        """Starts the watches and waits until they are established."""
        if not self._tasks:
            start = await asyncio.to_thread(self._read_point)
            if not self._tasks:
                self._spawn(start)
        assert self._ready is not None
        await self._ready.wait()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def _read_point(self) -> int:
        """The revision from which the bus's watches deliver every event:
        every publish committed after this returns is at it or later (both
        prefixes share one revision space)."""
        return position_now(self._client, prefix=RESOURCES_PREFIX + "/")

    def _spawn(self, start: int) -> None:
        """One watch per source of events, all from `start` (one revision
        space); the bus is ready once every one is established."""
        self._ready = asyncio.Event()
        targets: list[dict[str, Any]] = [{"prefix": RESOURCES_PREFIX + "/"}, {"prefix": LISTS_PREFIX + "/"}]
        if self._follow_store is not None:
            targets.append({"store": self._follow_store[0], "keys_only": True})
        opened = [asyncio.Event() for _ in targets]
        self._tasks = [asyncio.create_task(self._follow(t, o, start)) for t, o in zip(targets, opened, strict=True)]

        async def all_opened() -> None:
            for o in opened:
                await o.wait()
            assert self._ready is not None
            self._ready.set()

        self._tasks.append(asyncio.create_task(all_opened()))

    async def _follow(self, target: dict[str, Any], opened: asyncio.Event, position: int) -> None:
        """One watch from `position`, kept alive: resumes from its position
        after failures."""
        while True:
            try:
                watch: Watch = await self._client.watch(**target, start_revision=position)
                opened.set()
                async with watch:
                    async for batch in watch:
                        position = watch.position
                        for change in batch.changes:
                            self._deliver(self._event(change))
            except asyncio.CancelledError:
                raise
            except errors.Compacted as e:
                position = e.compact_revision
            except Exception as e:  # keep listening: log, back off, resume
                logger.warning("subscription bus watch on %s lost (%s); resuming", target, e)
                await asyncio.sleep(1.0)

    def _event(self, change: Change) -> ServerEvent | None:
        """The event a watched change is, if any: a followed store's
        handle changed, or an event published under the bus's prefixes."""
        if change.store is not None and self._follow_store is not None:
            return ResourceUpdated(uri=self._follow_store[1] + change.key)
        if change.kind is ChangeKind.PUT:
            return _event_of(change.value)
        return None

    def _deliver(self, event: ServerEvent | None) -> None:
        if event is None:
            return
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # one bad listener must not starve the others
                logger.exception("subscription listener raised; continuing")


def _event_of(value: object) -> ServerEvent | None:
    if isinstance(value, dict):
        if isinstance(value.get("uri"), str):
            return ResourceUpdated(uri=value["uri"])
        return _LISTS.get(value.get("changed"))  # type: ignore[arg-type]
    return None
