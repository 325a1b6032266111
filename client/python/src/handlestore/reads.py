"""Read coalescing, as the Rust client's `reads.rs`: concurrent point
reads of one client (handle gets, state retrieves) share calls of the
Reads service, as writes share `Writes.Submit`.

Every `HandleStore.get` and `StateTool.retrieve` goes through
`Client.read_handle` or `Client.read_state`, and calls are shared as
`handlestore.coalesce` says: at most `max_read_calls` in flight per client,
a lone reader's read sent at once on its own method (`Handles.Get`,
`State.Retrieve`), and under load the reads queued meanwhile in one
`Reads.Submit`: one call and, for the linearizable ones, one read-index
round on the node.

What a read sees does not change: the node serves each read of a call
exactly as its own method would, with its own read options, authorization
and answer. A read the node left unserved because the response was full
(`batch_full`) goes again in the next call; a node without the Reads
service (older than this client) gets each read on its own method.
"""

from __future__ import annotations

import asyncio
from typing import Union

from handlestore import _wire, errors
from handlestore.coalesce import Coalescer
from handlestore.reasons import BATCH_FULL
from handlestore.retry import Status, retryable_failure
from handlestore.transport import Transport
from handlestore.v1 import handles_pb2, reads_pb2, state_pb2

#: Calls of point reads in flight per client, by default.
MAX_READ_CALLS = _wire.MAX_CALLS
#: The most reads in one call (the node accepts 1000).
MAX_BATCH_READS = _wire.MAX_SUBMIT_READS
#: Bound on the reads' bytes in one call (a key is at most 1 KiB).
MAX_BATCH_READ_BYTES = _wire.MAX_SUBMIT_READ_BYTES

#: A read's answer: its method's response, or None if the handle or key is
#: absent or expired.
Answer = Union[handles_pb2.GetResponse, state_pb2.RetrieveResponse, None]


class Reads:
    """A client's point reads and the calls carrying them."""

    def __init__(self, max_calls: int = MAX_READ_CALLS) -> None:
        self.calls: Coalescer[reads_pb2.Read, Answer] = Coalescer(
            _submit, "read", max_calls, MAX_BATCH_READS, MAX_BATCH_READ_BYTES
        )

    async def read(self, client: Transport, read: reads_pb2.Read) -> Answer:
        return await self.calls.run(client, read, read.ByteSize())


async def _submit(client: Transport, reads: list[reads_pb2.Read]) -> list[Answer | BaseException]:
    """One read alone on its own method; several in calls of `Reads.Submit`
    until each is answered."""
    if len(reads) == 1:
        return list(await asyncio.gather(_one(client, reads[0]), return_exceptions=True))
    answers: list[Answer | BaseException | None] = [None] * len(reads)
    pending = list(range(len(reads)))
    while pending:
        results = await _submit_once(client, [reads[i] for i in pending])
        unserved = []
        # A node always serves a call's first read; one that served none
        # gets its answers back as they are, never a loop.
        none_served = all(_batch_full(r) for r in results)
        for i, r in zip(pending, results, strict=True):
            if _batch_full(r) and not none_served:
                unserved.append(i)
            else:
                answers[i] = r
        pending = unserved
    return answers


async def _submit_once(client: Transport, reads: list[reads_pb2.Read]) -> list[Answer | BaseException]:
    """One call of the Reads service, with failover and retries: a read
    that failed for a reason another node can fix fails the whole attempt,
    so the call goes again where that error points."""
    try:
        resp = await client.call("reads", "Submit", reads_pb2.ReadsRequest(reads=reads), check=retryable_failure)
    except errors.Unimplemented:
        return list(await asyncio.gather(*(_one(client, r) for r in reads), return_exceptions=True))
    if len(resp.results) != len(reads):
        raise errors.HandlestoreError(f"the node answered {len(resp.results)} results for {len(reads)} reads")
    return [_answer(r) for r in resp.results]


def _batch_full(r: Answer | BaseException) -> bool:
    """A read the node left unserved because the response was full."""
    return isinstance(r, errors.HandlestoreError) and r.reason == BATCH_FULL


def _answer(r: reads_pb2.ReadResult) -> Answer | BaseException:
    kind = r.WhichOneof("result")
    if kind == "failure":
        error = Status.of_failure(r.failure).error()
        return None if isinstance(error, errors.NotFound) else error
    if kind == "get":
        return r.get
    if kind == "retrieve":
        return r.retrieve
    return errors.HandlestoreError("the node answered a read with nothing")


async def _one(client: Transport, read: reads_pb2.Read) -> Answer:
    """A read on its own method."""
    kind = read.WhichOneof("op")
    try:
        if kind == "get":
            resp: Answer = await client.call("handles", "Get", read.get)
        elif kind == "retrieve":
            resp = await client.call("state", "Retrieve", read.retrieve)
        else:
            raise errors.InvalidArgument("a read names no operation")
    except errors.NotFound:
        return None
    return resp
