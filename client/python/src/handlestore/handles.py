"""`HandleStore`: opaque, server-stored handles (a cart, a job, a draft)
over the cluster, values as JSON, with the HandleStore semantics of the Rust
crate's `ClusterHandleStore` (mint, put, get, delete, len, update as a
compare-and-set loop; TTLs as in `handlestore.ttl`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from handlestore import errors
from handlestore._encoding import json_text, json_value
from handlestore.consistency import LINEARIZABLE, STALE, Consistency
from handlestore.ids import check_handle_id, new_handle_id
from handlestore.transport import Transport
from handlestore.ttl import DEFAULT, TtlLike, default_millis, to_millis
from handlestore.v1 import handles_pb2

T = TypeVar("T")


@dataclass(frozen=True)
class Versioned(Generic[T]):
    """A value with its revisions, for compare-and-set."""

    value: T
    create_revision: int
    mod_revision: int
    #: Unix milliseconds; None = never expires.
    expires_at_ms: int | None


@dataclass(frozen=True)
class WriteOutcome:
    #: Whether a live handle existed before.
    existed: bool
    #: The revision of the write (usable with `Consistency.at_least`).
    revision: int


class HandleStore:
    """A replicated store of JSON values named `store` in the client's
    namespace. Ids look like `<prefix>-<26 base32 chars>`.

    Options: `default_ttl` (used when a write's TTL is the default; none =
    never expires), `prefix` of minted ids, `consistency` of get and len
    (default linearizable).
    """

    def __init__(
        self,
        client: Transport,
        store: str,
        *,
        default_ttl: TtlLike = None,
        prefix: str = "",
        consistency: Consistency = LINEARIZABLE,
    ) -> None:
        self.client = client
        self.store = store
        self.prefix = prefix
        self.consistency = consistency
        self._default_ms = default_millis(default_ttl)
        self._closed = False

    def _ttl(self, ttl: TtlLike, keep: bool = False) -> handles_pb2.Ttl:
        return handles_pb2.Ttl(ttl_ms=to_millis(ttl), default_ttl_ms=self._default_ms, keep=keep)

    def _check(self, handle_id: str) -> None:
        if self._closed:
            raise errors.Closed("store is closed")
        why = check_handle_id(handle_id) if isinstance(handle_id, str) else "a handle id is a string"
        if why:
            raise errors.InvalidArgument(why)

    async def mint(self, value: Any, ttl: TtlLike = DEFAULT) -> str:
        """Stores `value` under a fresh id and returns the id."""
        handle_id = new_handle_id(self.prefix)
        await self.mint_with_id(handle_id, value, ttl)
        return handle_id

    async def mint_with_id(self, handle_id: str, value: Any, ttl: TtlLike = DEFAULT) -> WriteOutcome:
        """Mints under a caller-chosen id (AlreadyExists if it is taken)."""
        self._check(handle_id)
        with self.client.write_id() as write_id:
            req = handles_pb2.MintRequest(
                namespace=self.client.namespace,
                store=self.store,
                id=handle_id,
                value=json_text(value).encode(),
                ttl=self._ttl(ttl),
                write_id=write_id,
            )
            resp = await self.client.write("mint", req)
        return WriteOutcome(False, resp.revision)

    async def put(self, handle_id: str, value: Any, ttl: TtlLike = DEFAULT) -> bool:
        """Upsert; returns whether a live handle existed before."""
        return (await self.put_with(handle_id, value, ttl)).existed

    async def put_with(
        self, handle_id: str, value: Any, ttl: TtlLike = DEFAULT, expected_revision: int | None = None
    ) -> WriteOutcome:
        """Upsert, or compare-and-set with `expected_revision` (Conflict if
        the handle changed, NotFound if it is gone; 0 = create only)."""
        return await self._put(handle_id, value, self._ttl(ttl), expected_revision)

    async def _put(
        self, handle_id: str, value: Any, ttl: handles_pb2.Ttl, expected_revision: int | None
    ) -> WriteOutcome:
        self._check(handle_id)
        with self.client.write_id() as write_id:
            req = handles_pb2.PutRequest(
                namespace=self.client.namespace,
                store=self.store,
                id=handle_id,
                value=json_text(value).encode(),
                ttl=ttl,
                write_id=write_id,
                expected_revision=expected_revision,
            )
            resp = await self.client.write("put", req)
        return WriteOutcome(resp.existed, resp.revision)

    async def get(self, handle_id: str, consistency: Consistency | None = None) -> Any | None:
        """The value, or None if the handle is absent or expired."""
        got = await self.get_versioned(handle_id, consistency)
        return None if got is None else got.value

    async def get_versioned(self, handle_id: str, consistency: Consistency | None = None) -> Versioned[Any] | None:
        """The value with its revisions, or None."""
        self._check(handle_id)
        req = handles_pb2.GetRequest(
            namespace=self.client.namespace,
            store=self.store,
            id=handle_id,
            read=(consistency or self.consistency).to_pb(),
        )
        resp = await self.client.read_handle(req)
        if resp is None:
            return None
        return Versioned(json_value(resp.value), resp.create_revision, resp.mod_revision, resp.expires_at_ms or None)

    async def delete(self, handle_id: str) -> bool:
        """Deletes; returns whether a live handle existed."""
        return (await self.delete_with(handle_id)).existed

    async def delete_with(self, handle_id: str, expected_revision: int | None = None) -> WriteOutcome:
        """Deletes; with `expected_revision`, only if unchanged."""
        self._check(handle_id)
        with self.client.write_id() as write_id:
            req = handles_pb2.DeleteRequest(
                namespace=self.client.namespace,
                store=self.store,
                id=handle_id,
                write_id=write_id,
                expected_revision=expected_revision,
            )
            resp = await self.client.write("delete", req)
        return WriteOutcome(resp.existed, resp.revision)

    async def len(self, consistency: Consistency | None = None) -> int:
        """The number of live (unexpired) handles in the store."""
        if self._closed:
            raise errors.Closed("store is closed")
        req = handles_pb2.LenRequest(
            namespace=self.client.namespace, store=self.store, read=(consistency or self.consistency).to_pb()
        )
        return (await self.client.call("handles", "Len", req)).len

    async def update(self, handle_id: str, fn: Callable[[Any], Any]) -> Any | None:
        """Read-modify-write without lost updates: reads the value, calls
        `fn(value)` (which returns the new value, or None after changing the
        value in place), and writes it back only if nobody wrote in between,
        else tries again. Keeps the handle's expiry. Returns the value
        written, or None if the handle is absent. `fn` may run several times.
        """
        # The first read may be stale: the leader checks the compare-and-set
        # against the revision read, so an old value is refused, never
        # written over. After a conflict, or if the handle seems absent (a
        # node behind the write that made it), reads are linearizable.
        consistency = STALE
        while True:
            current = await self.get_versioned(handle_id, consistency)
            if current is None:
                if consistency == LINEARIZABLE:
                    return None
                consistency = LINEARIZABLE
                continue
            consistency = LINEARIZABLE
            value = current.value
            changed = fn(value)
            value = value if changed is None else changed
            try:
                await self._put(handle_id, value, self._ttl(DEFAULT, keep=True), current.mod_revision)
                return value
            except errors.Conflict:
                continue
            except errors.NotFound:
                return None

    async def close(self) -> None:
        """Refuses further calls on this store (the client stays open)."""
        self._closed = True
