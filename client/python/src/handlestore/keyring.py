"""The cluster's replicated key ring (per namespace): list, create, rotate,
retire. Secrets are drawn by the leader from its CSPRNG inside a replicated
command, so every node holds the same ring."""

from __future__ import annotations

from dataclasses import dataclass, field

from handlestore.consistency import LINEARIZABLE
from handlestore.transport import Transport
from handlestore.v1 import admin_pb2


@dataclass(frozen=True)
class RingKey:
    id: str
    #: The primary seals new request state; every key opens.
    primary: bool
    created_ms: int
    #: Empty unless asked for.
    secret: bytes = field(default=b"", repr=False)


async def keyring(client: Transport, include_secrets: bool = False) -> list[RingKey]:
    """The key ring of the client's namespace, oldest first."""
    req = admin_pb2.KeyringListRequest(
        namespace=client.namespace, include_secrets=include_secrets, read=LINEARIZABLE.to_pb()
    )
    resp = await client.call("admin", "KeyringList", req)
    return [RingKey(k.id, k.state == "primary", k.created_ms, k.secret) for k in resp.keys]


async def keyring_rotate(client: Transport, create: bool = False) -> str:
    """Creates the ring with its first key (AlreadyExists if there is one),
    or with `create=False` rotates: a new primary, the old kept for
    opening. Returns the new key's id."""
    with client.write_id() as write_id:
        req = admin_pb2.KeyringRotateRequest(namespace=client.namespace, create=create, write_id=write_id)
        return (await client.call("admin", "KeyringRotate", req)).key_id


async def keyring_retire(client: Transport, key_id: str) -> None:
    """Retires a (non-primary) key: what it sealed no longer opens."""
    with client.write_id() as write_id:
        req = admin_pb2.KeyringRetireRequest(namespace=client.namespace, key_id=key_id, write_id=write_id)
        await client.call("admin", "KeyringRetire", req)
