"""Write coalescing, as the Rust client's `writes.rs`: concurrent writes of
one client share calls of the Writes service.

Every write (mint, put, delete, store, state delete, batch store) goes
through `Client.write`, and calls of `Writes.Submit` are shared as
`handlestore.coalesce` says: at most `max_write_calls` in flight per
client, a lone writer's write sent at once, alone, and under load many
writes per call, which the node proposes together, usually as one Raft
entry.

Nothing else changes for a write: it keeps its own write id, gets its own
answer or error, and is retried with the others when the call fails in a
way another node can fix (the node answers the writes that had already
succeeded from its memory of their write ids, so none applies twice). Only
writes in flight at the same time, which have no order between them, are
ever sent together.
"""

from __future__ import annotations

from dataclasses import dataclass

from handlestore import _wire
from handlestore.coalesce import Coalescer
from handlestore.retry import Status, retryable_failure
from handlestore.transport import Transport
from handlestore.v1 import writes_pb2

#: Calls of the Writes service in flight per client, by default.
MAX_WRITE_CALLS = _wire.MAX_CALLS
#: The most writes in one call (the node accepts 1000).
MAX_SUBMIT_WRITES = _wire.MAX_SUBMIT_WRITES
#: The most bytes of writes in one call, unless a single write is larger,
#: which then goes alone (the node's limit, as the Rust client's).
MAX_SUBMIT_BYTES = _wire.MAX_SUBMIT_WRITE_BYTES


@dataclass
class WriteStats:
    """Writes sent so far, and the calls that carried them."""

    writes: int = 0
    calls: int = 0


class Writes:
    """A client's writes and the calls of the Writes service carrying them
    (shared by a client's clones, as their connections are)."""

    def __init__(self, max_calls: int = MAX_WRITE_CALLS) -> None:
        self.calls: Coalescer[writes_pb2.Write, writes_pb2.WriteResult] = Coalescer(
            _submit, "write", max_calls, MAX_SUBMIT_WRITES, MAX_SUBMIT_BYTES
        )

    @property
    def stats(self) -> WriteStats:
        return WriteStats(self.calls.stats.sent, self.calls.stats.calls)

    async def write(self, client: Transport, write: writes_pb2.Write) -> writes_pb2.WriteResult:
        """Sends `write`, alone or with others, and returns its result (a
        failure is raised as the exception its own method would raise)."""
        return await self.calls.run(client, write, write.ByteSize())


async def _submit(client: Transport, writes: list[writes_pb2.Write]) -> list[writes_pb2.WriteResult | BaseException]:
    """One call of the Writes service, with failover and retries: a write
    that failed for a reason another node can fix fails the whole attempt,
    so the call goes again where that error points. Each write's failure
    is its own exception."""
    req = writes_pb2.SubmitRequest(writes=writes)
    resp = await client.call("writes", "Submit", req, check=retryable_failure)
    return [Status.of_failure(r.failure).error() if r.WhichOneof("result") == "failure" else r for r in resp.results]
