"""The MCP Python SDK's request-state security on the cluster's replicated
key ring. The SDK seals MRTR `requestState` with a `RequestStateCodec`
(`seal(payload) -> token`, `unseal(token) -> payload`) and stamps expiry,
request binding, audience and principal itself; by default its key lives
in one process, so state minted by one replica is refused by the next.
`KeyRingCodec` seals with the namespace's ring instead, which every replica
(Rust or Python) reads:

    token = "hs1." + b64url(key_tag[4] + nonce[12] + AES-256-GCM(ciphertext + tag))

with AES key HKDF-SHA256(ring secret, info "handlestore/mcp-request-state/v1"),
`key_tag` = the first 4 bytes of SHA-256 of that key (a non-secret
fingerprint to find the key), and "hs1." + key_tag as associated data.
The primary key seals; every key of the ring opens, so a rotation never
breaks state in flight, and a retired key's tokens stop opening.

The codec's methods are synchronous (the SDK calls them inline), so the
ring is cached and re-read in the background every `refresh_every`
seconds; `await codec.refresh()` re-reads it at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from mcp.server.request_state import InvalidRequestState, RequestStateSecurity, authenticated_principal

from handlestore import errors
from handlestore._encoding import b64, b64_decode
from handlestore.client import Client
from handlestore.keyring import RingKey, keyring
from handlestore.request_state import hkdf

logger = logging.getLogger(__name__)

PREFIX = "hs1."
_INFO = b"handlestore/mcp-request-state/v1"
_TAG_LEN, _NONCE_LEN = 4, 12
MAX_TOKEN_LEN = 64 * 1024


class KeyRingCodec:
    """The SDK's `RequestStateCodec` over a key ring (see the module docs)."""

    def __init__(self, keys: list[RingKey], client: Client | None = None, refresh_every: float = 10.0) -> None:
        self._client = client
        self._refresh_every = refresh_every
        self._task: asyncio.Task | None = None
        self._load(keys)

    @classmethod
    async def from_cluster(cls, client: Client, refresh_every: float = 10.0) -> "KeyRingCodec":
        """The codec over the ring of the client's namespace (NotFound if
        it has none: `handlestore keyring create`)."""
        keys = await keyring(client, include_secrets=True)
        codec = cls(keys, client, refresh_every)
        codec._task = asyncio.get_running_loop().create_task(codec._refresh_forever())
        return codec

    def _load(self, keys: list[RingKey]) -> None:
        aes = [(k.primary, hkdf(k.secret, _INFO)) for k in keys if len(k.secret) >= 32]
        primary = next((key for is_primary, key in aes if is_primary), None)
        if primary is None:
            raise errors.NotFound("the key ring has no primary key: run `handlestore keyring create`")
        self._primary = primary
        self._by_tag = {hashlib.sha256(key).digest()[:_TAG_LEN]: key for _, key in aes}

    async def refresh(self) -> None:
        if self._client is not None:
            self._load(await keyring(self._client, include_secrets=True))

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_every)
            try:
                await self.refresh()
            except errors.HandlestoreError as e:
                logger.warning("key ring refresh failed, using the cached ring: %s", e)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def seal(self, payload: bytes) -> str:
        tag = hashlib.sha256(self._primary).digest()[:_TAG_LEN]
        nonce = os.urandom(_NONCE_LEN)
        ct = AESGCM(self._primary).encrypt(nonce, payload, PREFIX.encode() + tag)
        return PREFIX + b64(tag + nonce + ct)

    def unseal(self, token: str) -> bytes:
        if not isinstance(token, str) or len(token) > MAX_TOKEN_LEN or not token.startswith(PREFIX):
            raise InvalidRequestState("malformed")
        raw = b64_decode(token[len(PREFIX) :])
        if raw is None or len(raw) < _TAG_LEN + _NONCE_LEN + 16:
            raise InvalidRequestState("malformed")
        tag, nonce, ct = raw[:_TAG_LEN], raw[_TAG_LEN : _TAG_LEN + _NONCE_LEN], raw[_TAG_LEN + _NONCE_LEN :]
        key = self._by_tag.get(tag)
        if key is None:
            raise InvalidRequestState("unknown key")
        try:
            return AESGCM(key).decrypt(nonce, ct, PREFIX.encode() + tag)
        except InvalidTag:
            raise InvalidRequestState("unauthentic") from None


async def request_state_security(
    client: Client,
    *,
    ttl: float = 600.0,
    audience: str | None = None,
    bind_principal: Any = authenticated_principal,
    refresh_every: float = 10.0,
) -> RequestStateSecurity:
    """The SDK's `RequestStateSecurity` sealing with the cluster's key ring:
    pass it as `request_state_security=` to `MCPServer`."""
    codec = await KeyRingCodec.from_cluster(client, refresh_every)
    return RequestStateSecurity(codec=codec, ttl=ttl, audience=audience, bind_principal=bind_principal)
