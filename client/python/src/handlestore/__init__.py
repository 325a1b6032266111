"""handlestore: a Raft-replicated store for the state stateless MCP servers
still need. This is the Python client: the same guarantees as the Rust
crate (exactly-once retried writes, leader following, linearizable reads,
compare-and-set updates, replicated TTLs), over gRPC.

    from handlestore import Client

    async with Client(["127.0.0.1:7401", "127.0.0.1:7402", "127.0.0.1:7403"]) as client:
        carts = client.handle_store("cart", default_ttl=3600, prefix="cart")
        cart_id = await carts.mint({"lines": []})
        await carts.update(cart_id, lambda cart: cart["lines"].append({"sku": "tea"}))
"""

from handlestore.client import Client, Tls, read_token_file
from handlestore.client_state import ClientStateStore
from handlestore.consistency import LINEARIZABLE, STALE, Consistency
from handlestore.errors import (
    AlreadyExists,
    Closed,
    CodecError,
    Compacted,
    Conflict,
    DeadlineExceeded,
    FailedPrecondition,
    HandlestoreError,
    Internal,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from handlestore.handles import HandleStore, Versioned, WriteOutcome
from handlestore.ids import new_handle_id
from handlestore.keyring import RingKey
from handlestore.request_state import Mode, RequestStateCodec
from handlestore.single_use import SingleUse
from handlestore.state import Deleted, ListPage, StateEntry, StateTool, StoreItem
from handlestore.ttl import DEFAULT, NEVER
from handlestore.watch import Change, ChangeKind, Watch, WatchBatch

__all__ = [
    "DEFAULT",
    "LINEARIZABLE",
    "NEVER",
    "STALE",
    "AlreadyExists",
    "Change",
    "ChangeKind",
    "Client",
    "ClientStateStore",
    "Closed",
    "CodecError",
    "Compacted",
    "Conflict",
    "Consistency",
    "DeadlineExceeded",
    "FailedPrecondition",
    "Deleted",
    "HandleStore",
    "HandlestoreError",
    "Internal",
    "InvalidArgument",
    "ListPage",
    "Mode",
    "NotFound",
    "PermissionDenied",
    "RequestStateCodec",
    "ResourceExhausted",
    "RingKey",
    "SingleUse",
    "StateEntry",
    "StateTool",
    "StoreItem",
    "Tls",
    "Unauthenticated",
    "Unavailable",
    "Versioned",
    "Watch",
    "WatchBatch",
    "WriteOutcome",
    "new_handle_id",
    "read_token_file",
]
