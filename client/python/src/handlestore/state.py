"""`StateTool`: hierarchical keys ("checkpoints/agent-7/latest") with JSON
or byte values, listed by prefix in key order, written in atomic batches,
replicated like handles (the Rust crate's `ClusterStateTool`).

A value is stored as bytes when it is `bytes` (or `bytearray`), else as
JSON: reading it back gives the same kind.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any, AsyncIterator, Sequence

from handlestore import errors
from handlestore._encoding import json_text, json_value
from handlestore.consistency import LINEARIZABLE, Consistency
from handlestore.keys import check_key, check_prefix
from handlestore.transport import Transport
from handlestore.ttl import DEFAULT, TtlLike, default_millis, to_millis
from handlestore.v1 import handles_pb2, state_pb2


@dataclass(frozen=True)
class StateEntry:
    key: str
    #: None in a list without values.
    value: Any
    create_revision: int
    mod_revision: int
    #: Unix milliseconds; None = never expires.
    expires_at_ms: int | None


@dataclass(frozen=True)
class StoreItem:
    """One write of a `batch_store`."""

    key: str
    value: Any
    ttl: TtlLike = DEFAULT
    #: Compare-and-set: only if the key is at this revision (0 = absent).
    expected_revision: int | None = None


@dataclass(frozen=True)
class Deleted:
    #: How many live keys were deleted.
    count: int
    #: Prefix deletes: more keys remain under the prefix.
    more: bool
    revision: int


@dataclass(frozen=True)
class ListPage:
    entries: list[StateEntry]
    #: None when there are no more keys.
    next_page_token: str | None
    read_revision: int


def _key(key: str) -> str:
    """`key`, or InvalidArgument before anything is sent."""
    why = check_key(key)
    if why:
        raise errors.InvalidArgument(why)
    return key


def _prefix(prefix: str) -> str:
    """`prefix`, or InvalidArgument before anything is sent."""
    why = check_prefix(prefix)
    if why:
        raise errors.InvalidArgument(why)
    return prefix


def value_to_pb(value: Any) -> state_pb2.StateValue:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return state_pb2.StateValue(bytes=bytes(value))
    return state_pb2.StateValue(json=json_text(value))


def value_from_pb(value: state_pb2.StateValue) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "bytes":
        return value.bytes
    if kind == "json":
        return json_value(value.json)
    return None


def entry_from_pb(e: state_pb2.StateEntry) -> StateEntry:
    value = value_from_pb(e.value) if e.HasField("value") else None
    return StateEntry(e.key, value, e.create_revision, e.mod_revision, e.expires_at_ms or None)


class StateTool:
    """The state tool in the client's namespace. Options: `default_ttl`
    (for writes with the default TTL; none = never expires) and the
    `consistency` of reads (default linearizable)."""

    def __init__(self, client: Transport, *, default_ttl: TtlLike = None, consistency: Consistency = LINEARIZABLE):
        self.client = client
        self.consistency = consistency
        self._default_ms = default_millis(default_ttl)

    def _ttl(self, ttl: TtlLike) -> handles_pb2.Ttl:
        return handles_pb2.Ttl(ttl_ms=to_millis(ttl), default_ttl_ms=self._default_ms)

    def _read(self, consistency: Consistency | None) -> Any:
        return (consistency or self.consistency).to_pb()

    async def store(self, key: str, value: Any, ttl: TtlLike = DEFAULT, expected_revision: int | None = None) -> int:
        """Stores `value`; returns the write's revision. With
        `expected_revision`, only if the key is at that revision (0 = only
        if absent), else Conflict."""
        with self.client.write_id() as write_id:
            req = state_pb2.StoreRequest(
                namespace=self.client.namespace,
                key=_key(key),
                value=value_to_pb(value),
                ttl=self._ttl(ttl),
                expected_revision=expected_revision,
                write_id=write_id,
            )
            return (await self.client.write("store", req)).revision

    async def retrieve(self, key: str, consistency: Consistency | None = None) -> StateEntry | None:
        """The entry, or None if the key is absent or expired."""
        req = state_pb2.RetrieveRequest(namespace=self.client.namespace, key=_key(key), read=self._read(consistency))
        entry = await self.client.read_state(req)
        return None if entry is None else entry_from_pb(entry)

    async def get(self, key: str, default: Any = None) -> Any:
        """Just the value (or `default`)."""
        entry = await self.retrieve(key)
        return default if entry is None else entry.value

    async def delete(
        self, key: str, *, prefix: bool = False, limit: int = 0, expected_revision: int | None = None
    ) -> Deleted:
        """Deletes one key, or with `prefix=True` up to `limit` keys (0 =
        1000) under the prefix `key`, atomically."""
        with self.client.write_id() as write_id:
            req = state_pb2.StateDeleteRequest(
                namespace=self.client.namespace,
                key=_prefix(key) if prefix else _key(key),
                prefix=prefix,
                limit=limit,
                expected_revision=expected_revision,
                write_id=write_id,
            )
            resp = await self.client.write("state_delete", req)
        return Deleted(resp.deleted, resp.more, resp.revision)

    async def list(
        self,
        prefix: str = "",
        *,
        limit: int = 0,
        page_token: str | None = None,
        with_values: bool = False,
        consistency: Consistency | None = None,
    ) -> ListPage:
        """One page of the keys under `prefix`, in key order (limit 0 = 100)."""
        req = state_pb2.ListRequest(
            namespace=self.client.namespace,
            prefix=_prefix(prefix),
            limit=limit,
            page_token=page_token or "",
            with_values=with_values,
            read=self._read(consistency),
        )
        resp = await self.client.call("state", "List", req)
        entries = [entry_from_pb(e) for e in resp.entries]
        return ListPage(entries, resp.next_page_token or None, resp.read_revision)

    async def scan(self, prefix: str = "", *, with_values: bool = False, page: int = 0) -> AsyncIterator[StateEntry]:
        """Every entry under `prefix`, page after page. Later pages are read
        at least at the first page's revision."""
        token: str | None = None
        consistency: Consistency | None = None
        while True:
            got = await self.list(
                prefix, limit=page, page_token=token, with_values=with_values, consistency=consistency
            )
            for entry in got.entries:
                yield entry
            if got.next_page_token is None:
                return
            token = got.next_page_token
            consistency = Consistency.at_least(got.read_revision)

    async def exists(self, key: str, consistency: Consistency | None = None) -> bool:
        req = state_pb2.ExistsRequest(namespace=self.client.namespace, key=_key(key), read=self._read(consistency))
        return (await self.client.call("state", "Exists", req)).exists

    async def batch_store(self, items: Sequence[StoreItem]) -> int:
        """All or nothing, in one Raft entry: if any compare-and-set fails,
        nothing is written (Conflict). Returns the revision."""
        pb_items = [
            state_pb2.StoreItem(
                key=_key(i.key), value=value_to_pb(i.value), ttl=self._ttl(i.ttl), expected_revision=i.expected_revision
            )
            for i in items
        ]
        with self.client.write_id() as write_id:
            req = state_pb2.BatchStoreRequest(namespace=self.client.namespace, items=pb_items, write_id=write_id)
            return (await self.client.write("batch_store", req)).revision

    async def batch_retrieve(
        self, keys: Sequence[str], consistency: Consistency | None = None
    ) -> builtins.list[StateEntry | None]:
        """One consistent view of several keys, in the order asked."""
        req = state_pb2.BatchRetrieveRequest(
            namespace=self.client.namespace, keys=[_key(k) for k in keys], read=self._read(consistency)
        )
        resp = await self.client.call("state", "BatchRetrieve", req)
        return [entry_from_pb(m.entry) if m.HasField("entry") else None for m in resp.entries]
