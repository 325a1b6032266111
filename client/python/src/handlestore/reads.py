"""Read coalescing: concurrent state-tool reads of one client share calls
of `State.BatchRetrieve`, as writes share `Writes.Submit`.

Every `StateTool.retrieve` goes through `Client.read_state`, and calls are
shared as `handlestore.coalesce` says: at most `max_read_calls` in flight
per client, a lone reader's read sent at once as a plain `Retrieve`, and
under load the reads queued meanwhile in one `BatchRetrieve`: one call and,
for linearizable reads, one read-index round for all of them. Only reads
of one namespace with the same read options share a call.

What a read sees does not change. Each read in a call was asked for
before the call was sent, and the node fixes the call's read point after
it arrives, so it is a point within each read's own lifetime: a
linearizable read stays linearizable, an `at_least(revision)` read sees
at least its revision. A key the node refuses (malformed, or one the
caller may not read) refuses the whole batch, so then each read of that
call is sent again alone, and only the refused one fails.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Optional

from handlestore import errors
from handlestore.coalesce import Coalescer
from handlestore.v1 import state_pb2

if TYPE_CHECKING:
    from handlestore.client import Client

#: Calls of the state reads in flight per client, by default.
MAX_READ_CALLS = 8
#: The most reads in one call (the node accepts 1000 keys).
MAX_BATCH_READS = 256
#: Bound on the keys' bytes in one call (a key is at most 1 KiB).
MAX_BATCH_KEY_BYTES = 256 << 10

#: Failures of a whole batch that no read of it would escape alone.
_SHARED_FAILURES = (errors.DeadlineExceeded, errors.Unavailable, errors.Unauthenticated, errors.Closed)

Read = state_pb2.RetrieveRequest
#: The entry, or None if the key is absent or expired.
Found = Optional[state_pb2.StateEntry]


class Reads:
    """A client's state reads and the calls carrying them."""

    def __init__(self, max_calls: int = MAX_READ_CALLS) -> None:
        self.calls: Coalescer[Read, Found] = Coalescer(_submit, "read", max_calls, MAX_BATCH_READS, MAX_BATCH_KEY_BYTES)

    async def read(self, client: Client, req: Read) -> Found:
        group = (req.namespace, req.read.SerializeToString(deterministic=True))
        return await self.calls.run(client, req, len(req.key), group)


async def _submit(client: Client, reads: list[Read]) -> list[Found | BaseException]:
    """One read alone as `Retrieve`, several as one `BatchRetrieve`."""
    if len(reads) == 1:
        return [await _one(client, reads[0])]
    first = reads[0]
    req = state_pb2.BatchRetrieveRequest(namespace=first.namespace, keys=[r.key for r in reads], read=first.read)
    try:
        resp = await client.call("state", "BatchRetrieve", req)
    except _SHARED_FAILURES:
        raise
    except errors.HandlestoreError:
        # One read may be the cause: each alone, so only its own fails.
        return list(await asyncio.gather(*(_one(client, r) for r in reads), return_exceptions=True))
    if len(resp.entries) != len(reads):
        raise errors.HandlestoreError(f"the node answered {len(resp.entries)} entries for {len(reads)} keys")
    return [m.entry if m.HasField("entry") else None for m in resp.entries]


async def _one(client: Client, req: Read) -> Found:
    try:
        return (await client.call("state", "Retrieve", req)).entry
    except errors.NotFound:
        return None
