"""Write coalescing, as the Rust client's `writes.rs`: concurrent writes of
one client share calls of the Writes service.

Every write (mint, put, delete, store, state delete, batch store) goes
through `Client.write`. At most `max_write_calls` calls of `Writes.Submit`
are in flight per client. A write that finds a call free is sent at once,
alone: a lone writer waits for nothing. A write that finds them all busy
waits in a queue, and when a call ends, everything queued by then leaves
together in the next one. Under load a call carries many writes, so the
per-call costs (in Python, mostly the interpreter's own work per gRPC call)
are paid once per call rather than once per write, and the node proposes
them together, usually as one Raft entry.

Nothing else changes for a write: it keeps its own write id, gets its own
answer or error, and is retried with the others when the call fails in a
way another node can fix (the node answers the writes that had already
succeeded from its memory of their write ids, so none applies twice). Only
writes in flight at the same time, which have no order between them, are
ever sent together.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from handlestore import errors
from handlestore.v1 import common_pb2, writes_pb2

if TYPE_CHECKING:
    from handlestore.client import Client

#: Calls of the Writes service in flight per client, by default.
MAX_WRITE_CALLS = 8
#: The most writes in one call (the node accepts 1000).
MAX_SUBMIT_WRITES = 256
#: The most bytes of writes in one call, unless a single write is larger,
#: which then goes alone (the node's limit, as the Rust client's).
MAX_SUBMIT_BYTES = 4 << 20

_CODES = {c.value[0]: c for c in grpc.StatusCode}


@dataclass
class WriteStats:
    """Writes sent so far, and the calls that carried them."""

    writes: int = 0
    calls: int = 0


@dataclass
class _Waiting:
    write: writes_pb2.Write
    size: int
    done: asyncio.Future[writes_pb2.WriteResult]


class Failure:
    """A write's failure as the status its own method would have answered."""

    def __init__(self, failure: writes_pb2.WriteFailure) -> None:
        self.code = _CODES.get(failure.code, grpc.StatusCode.UNKNOWN)
        self.message = failure.message
        self.detail = common_pb2.ErrorDetail()
        try:
            self.detail.ParseFromString(failure.details)
        except Exception:  # details that are not an ErrorDetail
            self.detail = common_pb2.ErrorDetail()

    def error(self) -> errors.HandlestoreError:
        return errors.from_status(self.code, self.message, self.detail)


class Writes:
    """The calls in flight and the writes waiting for one (shared by a
    client's clones, as their connections are)."""

    def __init__(self, max_calls: int = MAX_WRITE_CALLS) -> None:
        self.max_calls = max(1, max_calls)
        self.waiting: deque[_Waiting] = deque()
        self.in_flight = 0
        self.stats = WriteStats()
        self._drains: set[asyncio.Task[None]] = set()

    async def write(self, client: Client, write: writes_pb2.Write) -> writes_pb2.WriteResult:
        """Sends `write`, alone or with others, and returns its result (a
        failure is raised as the exception its own method would raise)."""
        if self.in_flight < self.max_calls and not self.waiting:
            self.in_flight += 1
            try:
                (result,) = await self._submit(client, [write])
            finally:
                self._release(client)
            return _checked(result)
        done: asyncio.Future[writes_pb2.WriteResult] = asyncio.get_running_loop().create_future()
        self.waiting.append(_Waiting(write, write.ByteSize(), done))
        # Writes queue only while every call is busy, and a call that ends
        # drains the queue; this covers a queue found with a call free.
        if self.in_flight < self.max_calls:
            self.in_flight += 1
            self._spawn_drain(client)
        try:
            result = await asyncio.wait_for(done, client.deadline)
        except asyncio.TimeoutError:
            raise errors.DeadlineExceeded(
                client.deadline, "waiting for a free call (every call of this client is busy)"
            ) from None
        return _checked(result)

    def _release(self, client: Client) -> None:
        """A call ended: its slot drains what queued meanwhile, or is freed."""
        if self.waiting:
            self._spawn_drain(client)
        else:
            self.in_flight -= 1

    def _spawn_drain(self, client: Client) -> None:
        task = asyncio.get_running_loop().create_task(self._drain(client))
        # The loop keeps only a weak reference to a task.
        self._drains.add(task)
        task.add_done_callback(self._drains.discard)

    async def _drain(self, client: Client) -> None:
        """Sends what is queued, call after call, on the slot it was given."""
        try:
            while batch := take_batch(self.waiting):
                await self._send(client, batch)
        finally:
            self.in_flight -= 1

    async def _send(self, client: Client, batch: list[_Waiting]) -> None:
        try:
            results = await self._submit(client, [w.write for w in batch])
        except Exception as e:  # the whole call failed: each write hears why
            for w in batch:
                if not w.done.done():
                    w.done.set_exception(e)
            return
        for w, r in zip(batch, results, strict=True):
            if not w.done.done():
                w.done.set_result(r)

    async def _submit(self, client: Client, writes: list[writes_pb2.Write]) -> list[writes_pb2.WriteResult]:
        """One call of the Writes service, with failover and retries: a
        write that failed for a reason another node can fix fails the whole
        attempt, so the call goes again where that error points."""
        self.stats.writes += len(writes)
        self.stats.calls += 1
        req = writes_pb2.SubmitRequest(writes=writes)
        resp = await client.call("writes", "Submit", req, check=_retryable_failure)
        if len(resp.results) != len(writes):
            raise errors.HandlestoreError(f"the node answered {len(resp.results)} results for {len(writes)} writes")
        return list(resp.results)


def take_batch(waiting: deque[_Waiting]) -> list[_Waiting]:
    """The next call's writes: in order, up to the bounds, at least one;
    writes whose caller has given up are dropped unsent."""
    batch: list[_Waiting] = []
    size = 0
    while waiting:
        w = waiting[0]
        if w.done.done():
            waiting.popleft()
            continue
        if batch and (len(batch) >= MAX_SUBMIT_WRITES or size + w.size > MAX_SUBMIT_BYTES):
            break
        size += w.size
        batch.append(waiting.popleft())
    return batch


def _retryable_failure(resp: writes_pb2.SubmitResponse) -> Failure | None:
    """The first write failure in `resp` that another node could fix."""
    from handlestore.client import retryable

    for r in resp.results:
        if r.WhichOneof("result") == "failure":
            f = Failure(r.failure)
            if retryable(f.code, f.detail, f.message):
                return f
    return None


def _checked(result: writes_pb2.WriteResult) -> writes_pb2.WriteResult:
    """The write's result, or its failure raised."""
    if result.WhichOneof("result") == "failure":
        raise Failure(result.failure).error()
    return result
