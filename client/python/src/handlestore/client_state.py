"""`ClientStateStore`: what an MCP client must remember to survive its own
restart (session id, access token, negotiated protocol version, server
capabilities), kept in the state tool under `mcp-clients/<client key>/...`,
the same keys as the Rust crate's `ClientStateStore`. The access token is
stored encrypted with the replicated key ring (AES-256-GCM, bound to the
client key), so only holders of the ring read it."""

from __future__ import annotations

from typing import Any

from handlestore import errors
from handlestore.client import Client
from handlestore.request_state import Mode, RequestStateCodec
from handlestore.state import StateTool

ROOT = "mcp-clients"
SESSION_ID = "session-id"
ACCESS_TOKEN = "access-token"
PROTOCOL_VERSION = "protocol-version"
SERVER_CAPABILITIES = "server-capabilities"
# The sealed token carries an expiry; the store's own TTL (none) governs.
_TOKEN_SEAL_TTL = 10 * 365 * 24 * 3600


def check_client_key(client_key: str) -> None:
    ok = (
        isinstance(client_key, str)
        and 0 < len(client_key) <= 128
        and "/" not in client_key
        and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in client_key)
    )
    if not ok:
        raise errors.InvalidArgument(
            f"client key {client_key!r} must be 1-128 characters without '/' or control characters"
        )


class ClientStateStore:
    """Persisted state of one MCP client, under a client key of your choice
    (e.g. the server URL's host plus a user id)."""

    def __init__(self, tool: StateTool, codec: RequestStateCodec, client_key: str) -> None:
        if codec.mode is not Mode.ENCRYPTED:
            raise errors.InvalidArgument("the access token needs an encrypting codec (Mode.ENCRYPTED)")
        check_client_key(client_key)
        self._tool, self._codec, self.client_key = tool, codec, client_key

    @classmethod
    async def from_cluster(cls, client: Client, client_key: str) -> "ClientStateStore":
        """A store in the client's namespace, encrypting with its key ring
        (which must exist: `handlestore keyring create`)."""
        codec = await RequestStateCodec.from_cluster(client, Mode.ENCRYPTED)
        return cls(client.state_tool(), codec, client_key)

    def _key(self, field: str) -> str:
        return f"{ROOT}/{self.client_key}/{field}"

    async def _get_str(self, field: str) -> str | None:
        value = await self._tool.get(self._key(field))
        return value if isinstance(value, str) else None

    async def set_session_id(self, session_id: str) -> None:
        await self._tool.store(self._key(SESSION_ID), session_id)

    async def session_id(self) -> str | None:
        return await self._get_str(SESSION_ID)

    async def clear_session_id(self) -> None:
        await self._tool.delete(self._key(SESSION_ID))

    async def set_sealed(self, field: str, value: Any) -> None:
        """Stores any JSON `value` under `field`, encrypted and bound to
        this client key and the field."""
        sealed = await self._codec.encode(value, self.client_key, field, _TOKEN_SEAL_TTL)
        await self._tool.store(self._key(field), sealed)

    async def sealed(self, field: str) -> Any | None:
        """What `set_sealed` stored under `field`; None if nothing is there,
        or if it no longer decrypts (its key was retired)."""
        blob = await self._get_str(field)
        return None if blob is None else await self._codec.decode(blob, self.client_key, field)

    async def set_access_token(self, token: str) -> None:
        """Stores the token encrypted."""
        await self.set_sealed(ACCESS_TOKEN, token)

    async def access_token(self) -> str | None:
        """The token; None if there is none or it no longer decrypts (its
        key was retired): then the client signs in again."""
        token = await self.sealed(ACCESS_TOKEN)
        return token if isinstance(token, str) else None

    async def clear_access_token(self) -> None:
        await self._tool.delete(self._key(ACCESS_TOKEN))

    async def set_protocol_version(self, version: str) -> None:
        await self._tool.store(self._key(PROTOCOL_VERSION), version)

    async def protocol_version(self) -> str | None:
        return await self._get_str(PROTOCOL_VERSION)

    async def set_server_capabilities(self, capabilities: Any) -> None:
        await self._tool.store(self._key(SERVER_CAPABILITIES), capabilities)

    async def server_capabilities(self) -> Any | None:
        return await self._tool.get(self._key(SERVER_CAPABILITIES))

    async def clear(self) -> None:
        """Forgets everything stored for this client."""
        await self._tool.delete(f"{ROOT}/{self.client_key}/", prefix=True, limit=100)
