"""A py-key-value `AsyncKeyValue` store on the cluster
(`pip install handlestore[kv]`), which gives FastMCP its shared state at
once: `FastMCP(session_state_store=...)`, the event store's storage
(`fastmcp.server.event_store.EventStore(storage=...)`), OAuth token storage
(`OAuth(token_storage=...)`, `OAuthProxy(client_storage=...)`), and any
other py-key-value user.

Each entry is one state key, `<prefix>/<collection>/<key>`, holding
py-key-value's own document (value, created_at, expires_at), with the
entry's TTL as the key's replicated TTL: expiry is decided by the cluster,
so an entry expires on every replica at once and a restart forgets nothing.
Collections and keys may hold any characters: each is percent-encoded into
one path segment (`k...`), or, when that would be long, named by its
SHA-256 (`h...`), so every name fits the key limit; listings read the
original names back from the documents.

`get_many` is one consistent read, `put_many` one atomic write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from urllib.parse import quote

from key_value.aio._utils.managed_entry import ManagedEntry
from key_value.aio._utils.serialization import BasicSerializationAdapter
from key_value.aio.errors import DeserializationError, SerializationError
from key_value.aio.stores.base import (
    BaseContextManagerStore,
    BaseDestroyCollectionStore,
    BaseEnumerateKeysStore,
    BaseStore,
)

from handlestore.client import Client
from handlestore.errors import CodecError
from handlestore.state import StateEntry, StoreItem
from handlestore.ttl import NEVER

DEFAULT_PREFIX = "kv"
# Percent-encoded names up to this long stay readable; longer are hashed,
# so <prefix>/<collection>/<key> stays within the 1024-byte key limit.
_MAX_SEGMENT = 300
# The node's limit on the items of one atomic batch.
_BATCH = 1000


def segment(name: str) -> str:
    """One path segment naming `name` (injective: `k` + escaped, or `h` + digest)."""
    escaped = quote(name, safe="")
    if len(escaped) <= _MAX_SEGMENT:
        return "k" + escaped
    return "h" + hashlib.sha256(name.encode()).hexdigest()


class HandlestoreStore(BaseEnumerateKeysStore, BaseDestroyCollectionStore, BaseContextManagerStore, BaseStore):
    """An `AsyncKeyValue` over the state keys under `prefix` (default
    "kv") in the client's namespace. Closing the store leaves the client
    open (it is yours)."""

    def __init__(self, client: Client, *, prefix: str = DEFAULT_PREFIX, default_collection: str | None = None) -> None:
        self._tool = client.state_tool()
        self._root = prefix.strip("/")
        self._adapter = BasicSerializationAdapter(date_format="isoformat", value_format="dict")
        super().__init__(default_collection=default_collection, client_provided_by_user=True, stable_api=True)

    def _collection_prefix(self, collection: str) -> str:
        return f"{self._root}/{segment(collection)}/"

    def _key(self, collection: str, key: str) -> str:
        return self._collection_prefix(collection) + segment(key)

    def _load(self, entry: StateEntry | None) -> ManagedEntry | None:
        if entry is None or not isinstance(entry.value, dict):
            return None
        try:
            return self._adapter.load_dict(data=entry.value)
        except DeserializationError:
            return None

    def _item(self, collection: str, key: str, entry: ManagedEntry) -> StoreItem:
        doc = self._adapter.dump_dict(entry=entry, key=key, collection=collection)
        ttl = entry.ttl
        # The cluster drops the key when the entry expires; the document's own
        # expiry is checked on every read as well. A TTL that ran out while
        # this was computed still expires (it must not read as "no TTL").
        return StoreItem(self._key(collection, key), doc, NEVER if ttl is None else max(ttl, 0.001))

    async def _get_managed_entry(self, *, collection: str, key: str) -> ManagedEntry | None:
        return self._load(await self._tool.retrieve(self._key(collection, key)))

    async def _get_managed_entries(self, *, collection: str, keys: Sequence[str]) -> list[ManagedEntry | None]:
        if not keys:
            return []
        got = await self._tool.batch_retrieve([self._key(collection, k) for k in keys])
        return [self._load(e) for e in got]

    async def _put_managed_entry(self, *, collection: str, key: str, managed_entry: ManagedEntry) -> None:
        item = self._item(collection, key, managed_entry)
        try:
            await self._tool.store(item.key, item.value, item.ttl)
        except CodecError as e:
            raise SerializationError(str(e)) from None

    async def _put_managed_entries(
        self,
        *,
        collection: str,
        keys: Sequence[str],
        managed_entries: Sequence[ManagedEntry],
        ttl: float | None,
        created_at: datetime,
        expires_at: datetime | None,
    ) -> None:
        # A key named twice: the last value wins, as with one put after another.
        items = {k: self._item(collection, k, e) for k, e in zip(keys, managed_entries, strict=True)}
        batch = list(items.values())
        try:
            for start in range(0, len(batch), _BATCH):
                await self._tool.batch_store(batch[start : start + _BATCH])
        except CodecError as e:
            raise SerializationError(str(e)) from None

    async def _delete_managed_entry(self, *, key: str, collection: str) -> bool:
        return (await self._tool.delete(self._key(collection, key))).count > 0

    async def _get_collection_keys(self, *, collection: str, limit: int | None = None) -> list[str]:
        names: list[str] = []
        async for entry in self._tool.scan(self._collection_prefix(collection), with_values=True):
            loaded = self._load(entry)
            name = entry.value.get("key") if isinstance(entry.value, dict) else None
            if loaded is not None and not loaded.is_expired and isinstance(name, str):
                names.append(name)
                if limit is not None and len(names) >= limit:
                    break
        return names

    async def _delete_collection(self, *, collection: str) -> bool:
        prefix = self._collection_prefix(collection)
        while (await self._tool.delete(prefix, prefix=True, limit=1000)).more:
            pass
        return True
