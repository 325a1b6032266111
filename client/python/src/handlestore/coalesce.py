"""Calls shared by concurrent requests of one client: the seam under
`writes.py` (writes share `Writes.Submit`) and `reads.py` (point reads
share `Reads.Submit`).

At most `max_calls` calls are in flight. A request that finds a call free
is sent at once, alone: a lone caller waits for nothing. A request that
finds them all busy waits in a queue, and when a call ends, what queued by
then leaves together in the next one: the requests of the first one's
group (requests of different groups never share a call), in order, up to
the bounds. Under load a call carries many requests, so the per-call
costs (in Python, mostly the interpreter's own work per gRPC call) are
paid once per call rather than once per request.

Each request still gets its own answer or error: `submit` returns one
result per request, an exception among them failing only its own; a call
that fails as a whole fails each of its requests.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Awaitable, Callable, Generic, Hashable, TypeVar

from handlestore import errors
from handlestore.transport import Transport

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass
class Stats:
    """Requests sent so far, and the calls that carried them."""

    sent: int = 0
    calls: int = 0


@dataclass
class Waiting(Generic[Item, Result]):
    item: Item
    size: int
    done: asyncio.Future[Result | BaseException]
    group: Hashable = None


#: One call for the requests given: a result (or an exception) per request.
Submit = Callable[[Transport, list[Item]], Awaitable[list[Result | BaseException]]]


class Coalescer(Generic[Item, Result]):
    """The calls in flight and the requests waiting for one (shared by a
    client's clones, as their connections are)."""

    def __init__(self, submit: Submit, what: str, max_calls: int, max_items: int, max_bytes: int) -> None:
        self._submit = submit
        self.what = what
        self.max_calls = max(1, max_calls)
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.waiting: deque[Waiting[Item, Result]] = deque()
        self.in_flight = 0
        self.stats = Stats()
        self._drains: set[asyncio.Task[None]] = set()

    async def run(self, client: Transport, item: Item, size: int, group: Hashable = None) -> Result:
        """Sends `item`, alone or with others of its group; its result, or
        its exception raised."""
        if self.in_flight < self.max_calls and not self.waiting:
            self.in_flight += 1
            try:
                (result,) = await self._call(client, [item])
            finally:
                self._release(client)
            return _raised(result)
        done: asyncio.Future[Result | BaseException] = asyncio.get_running_loop().create_future()
        self.waiting.append(Waiting(item, size, done, group))
        # Requests queue only while every call is busy, and a call that ends
        # drains the queue; this covers a queue found with a call free.
        if self.in_flight < self.max_calls:
            self.in_flight += 1
            self._spawn_drain(client)
        try:
            result = await asyncio.wait_for(done, client.deadline)
        except asyncio.TimeoutError:
            raise errors.DeadlineExceeded(
                client.deadline, f"waiting for a free call (every {self.what} call of this client is busy)"
            ) from None
        return _raised(result)

    def _release(self, client: Transport) -> None:
        """A call ended: its slot drains what queued meanwhile, or is freed."""
        if self.waiting:
            self._spawn_drain(client)
        else:
            self.in_flight -= 1

    def _spawn_drain(self, client: Transport) -> None:
        task = asyncio.get_running_loop().create_task(self._drain(client))
        # The loop keeps only a weak reference to a task.
        self._drains.add(task)
        task.add_done_callback(self._drains.discard)

    async def _drain(self, client: Transport) -> None:
        """Sends what is queued, call after call, on the slot it was given."""
        try:
            while batch := take_batch(self.waiting, self.max_items, self.max_bytes):
                await self._send(client, batch)
        finally:
            self.in_flight -= 1

    async def _send(self, client: Transport, batch: list[Waiting[Item, Result]]) -> None:
        try:
            results = await self._call(client, [w.item for w in batch])
        except Exception as e:  # the whole call failed: each request hears why
            for w in batch:
                if not w.done.done():
                    w.done.set_exception(e)
            return
        for w, r in zip(batch, results, strict=True):
            if not w.done.done():
                w.done.set_result(r)

    async def _call(self, client: Transport, items: list[Item]) -> list[Result | BaseException]:
        self.stats.sent += len(items)
        self.stats.calls += 1
        results = await self._submit(client, items)
        if len(results) != len(items):
            raise errors.HandlestoreError(f"the node answered {len(results)} results for {len(items)} requests")
        return results


def take_batch(waiting: deque[Waiting[Item, Result]], max_items: int, max_bytes: int) -> list[Waiting[Item, Result]]:
    """The next call's requests: those of the first live request's group,
    in order, up to the bounds (at least one). Requests whose caller has
    given up are dropped unsent; those of other groups keep their places."""
    batch: list[Waiting[Item, Result]] = []
    others: deque[Waiting[Item, Result]] = deque()
    size = 0
    while waiting:
        w = waiting.popleft()
        if w.done.done():
            continue
        if batch and w.group != batch[0].group:
            others.append(w)
            continue
        if batch and (len(batch) >= max_items or size + w.size > max_bytes):
            waiting.appendleft(w)
            break
        size += w.size
        batch.append(w)
    waiting.extendleft(reversed(others))
    return batch


def _raised(result: Result | BaseException) -> Result:
    if isinstance(result, BaseException):
        raise result
    return result
