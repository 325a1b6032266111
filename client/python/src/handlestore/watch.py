"""Watch: the changes to state keys or handles, in revision order with no
gaps, from a revision or from now (the Rust crate's `watch.rs`).

A watch that loses its node (it stops, the network fails, nothing is heard
for a while) resumes on another node from the revision after the last one
it delivered, so a watcher sees every change once, in order; so does one a
node cut off because it fell behind ("slow_watcher"). It fails only for
what resuming cannot fix: no node takes it within the client's deadline,
the history moved past it (`Compacted`), or the caller may no longer read
what it watches.
"""

from __future__ import annotations

import asyncio
import enum
import time
from dataclasses import dataclass
from typing import Any

import grpc

from handlestore import errors
from handlestore.retry import Status
from handlestore.state import value_from_pb
from handlestore.transport import Transport
from handlestore.v1 import watch_pb2

# The node sends progress every 2 s while idle; three missed is a lost node.
SILENCE = 6.0


class ChangeKind(enum.Enum):
    PUT = watch_pb2.EVENT_KIND_PUT
    DELETE = watch_pb2.EVENT_KIND_DELETE
    #: Removed because its TTL ran out.
    EXPIRE = watch_pb2.EVENT_KIND_EXPIRE


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    #: The revision of the change (the changes of one write share it).
    revision: int
    #: The handle store, for changes to handles (None for state keys).
    store: str | None
    #: The state key, or the handle id.
    key: str
    #: Puts: the new value (None with keys_only). A handle's value is the
    #: bytes of its JSON.
    value: Any
    create_revision: int
    #: Unix ms, 0 = never.
    expires_at_ms: int


@dataclass(frozen=True)
class WatchBatch:
    #: Every change through this revision has been delivered.
    revision: int
    #: Empty for a progress notice.
    changes: list[Change]


def _target(prefix: str | None, key: str | None, store: str | None, handle: tuple[str, str] | None) -> dict:
    given = [t for t in (prefix, key, store, handle) if t is not None]
    if len(given) != 1:
        raise errors.InvalidArgument("watch exactly one of prefix=, key=, store= or handle=(store, id)")
    if prefix is not None:
        return {"prefix": prefix}
    if key is not None:
        return {"key": key}
    if store is not None:
        return {"store": store}
    assert handle is not None
    return {"handle": watch_pb2.HandleRef(store=handle[0], id=handle[1])}


class Watch:
    """A running watch: `async for batch in watch`, or `await watch.next()`.
    Close it (or use `async with`) to end the stream."""

    def __init__(self, client: Transport, request: watch_pb2.WatchRequest, progress: bool, start: int) -> None:
        self._client = client
        self._request = request
        self._progress = progress
        self._position = start
        self._node = client.watch_node()
        self._call: Any = None

    @property
    def position(self) -> int:
        """The next revision this watch delivers (resume a later one here)."""
        return self._position

    def __aiter__(self) -> "Watch":
        return self

    async def __anext__(self) -> WatchBatch:
        return await self.next()

    async def __aenter__(self) -> "Watch":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    async def next(self) -> WatchBatch:
        """The next batch of changes (or, with progress, of none)."""
        while True:
            if self._call is None:
                await self.connect()
            try:
                resp = await asyncio.wait_for(self._call.read(), SILENCE)
                if resp is grpc.aio.EOF:
                    lost = "the node ended the watch"
                else:
                    batch = self._take(resp)
                    if batch is not None:
                        return batch
                    continue
            except asyncio.TimeoutError:
                lost = f"nothing heard for {SILENCE}s"
            except grpc.aio.AioRpcError as err:
                status = Status.of_call(err)
                if not status.decision.resume:
                    self.close()
                    raise status.error() from None
                lost = status.message
            del lost  # the watch resumes on the next node
            self.close()
            self._node = (self._node + 1) % len(self._client.endpoints)

    async def connect(self) -> None:
        """Opens the watch on a node, trying them in turn with backoff until
        the client's deadline."""
        end = time.monotonic() + self._client.deadline
        tries, last = 0, ""
        while True:
            try:
                await self._open()
                return
            except asyncio.TimeoutError:
                last = "no answer to the watch"
            except grpc.aio.AioRpcError as err:
                last = _resumable(err)
            self.close()
            self._node = (self._node + 1) % len(self._client.endpoints)
            sleep = self._client.backoff(tries)
            tries += 1
            if time.monotonic() + sleep >= end:
                raise errors.DeadlineExceeded(self._client.deadline, last)
            await asyncio.sleep(sleep)

    async def _open(self) -> None:
        request = watch_pb2.WatchRequest()
        request.CopyFrom(self._request)
        if self._position > 0:
            request.start_revision = self._position
        self._call = self._client.stream(self._node, "watch", "Watch", request)
        created = await asyncio.wait_for(self._call.read(), SILENCE)
        if created is grpc.aio.EOF:
            raise asyncio.TimeoutError
        if not created.created:
            raise errors.HandlestoreError("the node's first watch answer is not 'created'")
        self._position = created.revision + 1

    def _take(self, resp: watch_pb2.WatchResponse) -> WatchBatch | None:
        start = self._position
        self._position = max(self._position, resp.revision + 1)
        changes = [_change(e) for e in resp.events if e.revision >= start]
        if not changes and (not self._progress or resp.revision + 1 < start):
            return None
        return WatchBatch(resp.revision, changes)


def _resumable(err: grpc.RpcError) -> str:
    """The message of a failure to open a watch that another node (or this
    one, later) may not have; raises the caller's error for any other. A
    node that cut the watch off as it opened ("slow_watcher") is asked
    again from the position, as mid-stream."""
    status = Status.of_call(err)
    if not status.decision.resume:
        raise status.error() from None
    return status.message


def _change(e: watch_pb2.WatchEvent) -> Change:
    try:
        kind = ChangeKind(e.kind)
    except ValueError:
        raise errors.HandlestoreError(f"unknown change kind {e.kind}") from None
    value = value_from_pb(e.value) if e.HasField("value") else None
    return Change(kind, e.revision, e.store or None, e.key, value, e.create_revision, e.expires_at_ms)


def position_now(
    client: Transport,
    *,
    prefix: str | None = None,
    key: str | None = None,
    store: str | None = None,
    handle: tuple[str, str] | None = None,
) -> int:
    """The revision a watch of this target opened now starts at (the one
    after a linearizable read point), read without the event loop: it
    blocks the calling thread for a round trip, longer while nodes fail (up
    to the client's deadline, then it raises). For a caller that must know,
    before it returns, from where every later change is delivered but
    cannot await (the MCP SDK's synchronous `SubscriptionBus.subscribe`)."""
    request = watch_pb2.WatchRequest(namespace=client.namespace, **_target(prefix, key, store, handle))
    end = time.monotonic() + client.deadline
    node, tries = client.watch_node(), 0
    while True:
        timeout = max(0.001, min(end - time.monotonic(), client.attempt_timeout))
        call = client.stream(node, "watch", "Watch", request, blocking=True, timeout=timeout)
        try:
            created = next(call)
            if not created.created:
                raise errors.HandlestoreError("the node's first watch answer is not 'created'")
            return created.revision + 1
        except StopIteration:
            last = "the node ended the watch"
        except grpc.RpcError as err:
            last = _resumable(err)
        finally:
            call.cancel()
        node = (node + 1) % len(client.endpoints)
        sleep = client.backoff(tries)
        tries += 1
        if time.monotonic() + sleep >= end:
            raise errors.DeadlineExceeded(client.deadline, last)
        time.sleep(sleep)


async def watch(
    client: Transport,
    *,
    prefix: str | None = None,
    key: str | None = None,
    store: str | None = None,
    handle: tuple[str, str] | None = None,
    start_revision: int | None = None,
    progress: bool = False,
    keys_only: bool = False,
) -> Watch:
    """Starts watching one target; returns once a node has established the
    watch, so every change after this call (or from `start_revision`,
    inclusive) is delivered."""
    request = watch_pb2.WatchRequest(
        namespace=client.namespace,
        start_revision=start_revision or 0,
        progress_notify=True,
        keys_only=keys_only,
        **_target(prefix, key, store, handle),
    )
    w = Watch(client, request, progress, start_revision or 0)
    await w.connect()
    return w
