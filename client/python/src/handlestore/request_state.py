"""`RequestStateCodec`: seals MCP request state (MRTR `requestState`) so
that any replica, in Rust or Python, opens what another sealed, with keys
from the cluster's replicated key ring. The format is the Rust crate's
(client/rust/src/request_state.rs), checked by the same test vectors
(proto/vectors/request_state_vectors.json):

- signed: `v1.` b64(payload) `.` b64(HMAC-SHA256(mac_key, payload))
- encrypted: `v1e.` b64(nonce[12] + ciphertext + tag[16]), AES-256-GCM with
  the bind tag as associated data

(b64 = base64url without padding.) The payload is
`{"s": <state>, "exp": <unix seconds>, "b": <bind tag hex>}`; the bind tag
is HMAC-SHA256(mac_key, subject) or HMAC-SHA256(mac_key, subject + 0x00 +
tool). `mac_key` and `aes_key` come from each ring key by HKDF-SHA256 (no
salt; info `handlestore/request-state/v1/mac` and `.../aes`).

Opening is fail-closed: a bad MAC or tag, an expired blob, another subject
or tool, or any malformed input gives None, never an exception. Every key
of the ring is tried (blobs carry no key id), so a blob stays valid across
rotations until its key is retired. A JSON `null` state cannot be told
from a refusal: seal objects.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from handlestore import errors
from handlestore._encoding import b64, b64_decode
from handlestore.client import Client
from handlestore.keyring import RingKey, keyring
from handlestore.single_use import SingleUse

SIGNED_PREFIX = "v1."
ENCRYPTED_PREFIX = "v1e."
NONCE_LEN = 12
TAG_LEN = 16
#: The longest blob opening looks at.
MAX_BLOB_LEN = 64 * 1024


class Mode(enum.Enum):
    #: Readable by the client, tamper-proof.
    SIGNED = "signed"
    #: Also confidential.
    ENCRYPTED = "encrypted"


def hkdf(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=SHA256(), length=32, salt=None, info=info).derive(secret)


@dataclass(frozen=True)
class _Derived:
    """A ring key's derived sub-keys."""

    primary: bool
    mac: bytes
    aes: bytes

    @staticmethod
    def of(key: RingKey) -> "_Derived":
        if len(key.secret) < 32:
            raise errors.InvalidArgument(f"key {key.id} has no 32-byte secret")
        return _Derived(
            key.primary,
            hkdf(key.secret, b"handlestore/request-state/v1/mac"),
            hkdf(key.secret, b"handlestore/request-state/v1/aes"),
        )

    def bind_raw(self, subject: str, tool: str | None) -> bytes:
        msg = subject.encode() + (b"\0" + tool.encode() if tool is not None else b"")
        return hmac.new(self.mac, msg, hashlib.sha256).digest()

    def bind(self, subject: str, tool: str | None) -> str:
        return self.bind_raw(subject, tool).hex()


def _payload(state: Any, exp: int, bind: str) -> bytes:
    # As serde_json writes it: compact, object keys sorted, UTF-8.
    s = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return ('{"s":' + s + ',"exp":' + str(exp) + ',"b":' + json.dumps(bind) + "}").encode()


def _seal(
    keys: Sequence[_Derived],
    mode: Mode,
    state: Any,
    subject: str,
    tool: str | None,
    exp: int,
    nonce: bytes | None = None,
) -> str:
    key = next((k for k in keys if k.primary), None)
    if key is None:
        raise errors.NotFound("the key ring has no primary key")
    bind = key.bind(subject, tool)
    try:
        payload = _payload(state, exp, bind)
    except (TypeError, ValueError) as e:
        raise errors.CodecError(f"the state is not JSON: {e}") from None
    if mode is Mode.SIGNED:
        return SIGNED_PREFIX + b64(payload) + "." + b64(hmac.new(key.mac, payload, hashlib.sha256).digest())
    nonce = nonce if nonce is not None else os.urandom(NONCE_LEN)
    return ENCRYPTED_PREFIX + b64(nonce + AESGCM(key.aes).encrypt(nonce, payload, bind.encode()))


def _accept(key: _Derived, payload: bytes, subject: str, tool: str | None, now: int) -> tuple[Any, int] | None:
    """The opened payload checked against the expected binding and the clock."""
    try:
        p = json.loads(payload)
        bind = bytes.fromhex(p["b"]) if isinstance(p, dict) and isinstance(p.get("b"), str) else None
        exp = p["exp"]
    except (ValueError, KeyError, TypeError):
        return None
    if bind is None or not isinstance(exp, int) or isinstance(exp, bool) or "s" not in p:
        return None
    if not hmac.compare_digest(key.bind_raw(subject, tool), bind):
        return None
    return (p["s"], exp) if now < exp else None


def _open(keys: Sequence[_Derived], blob: str, subject: str, tool: str | None, now: int) -> tuple[Any, int] | None:
    if not isinstance(blob, str) or len(blob) > MAX_BLOB_LEN:
        return None
    if blob.startswith(ENCRYPTED_PREFIX):
        raw = b64_decode(blob[len(ENCRYPTED_PREFIX) :])
        if raw is None or len(raw) < NONCE_LEN + TAG_LEN:
            return None
        nonce, ct = raw[:NONCE_LEN], raw[NONCE_LEN:]
        for k in keys:
            try:
                payload = AESGCM(k.aes).decrypt(nonce, ct, k.bind(subject, tool).encode())
            except InvalidTag:
                continue
            got = _accept(k, payload, subject, tool, now)
            if got is not None:
                return got
        return None
    if not blob.startswith(SIGNED_PREFIX):
        return None
    payload_b64, dot, tag_b64 = blob[len(SIGNED_PREFIX) :].partition(".")
    signed, tag = b64_decode(payload_b64), b64_decode(tag_b64)
    if not dot or signed is None or tag is None:
        return None
    for k in keys:
        if hmac.compare_digest(hmac.new(k.mac, signed, hashlib.sha256).digest(), tag):
            got = _accept(k, signed, subject, tool, now)
            if got is not None:
                return got
    return None


class RequestStateCodec:
    """Seals and opens request state with a key ring: fixed keys
    (`with_keys`), or the cluster's (`from_cluster`), re-read every
    `refresh_every` seconds and at once when a blob opens under no cached
    key (it may be sealed with a key rotated in since)."""

    def __init__(
        self, keys: Sequence[RingKey], mode: Mode, client: Client | None = None, refresh_every: float = 10.0
    ) -> None:
        self.mode = mode
        self._keys = [_Derived.of(k) for k in keys]
        self._client = client
        self._fetched = time.monotonic()
        self._refresh_every = refresh_every
        self._single_use: SingleUse | None = None

    @classmethod
    def with_keys(cls, keys: Sequence[RingKey], mode: Mode) -> "RequestStateCodec":
        """A codec over fixed keys (tests, single-process use)."""
        return cls(keys, mode)

    @classmethod
    async def from_cluster(cls, client: Client, mode: Mode, refresh_every: float = 10.0) -> "RequestStateCodec":
        """A codec over the replicated key ring of the client's namespace.
        NotFound if it has none yet (`handlestore keyring create`)."""
        keys = await keyring(client, include_secrets=True)
        if not any(k.primary for k in keys):
            raise errors.NotFound(f"namespace {client.namespace} has no key ring: run `handlestore keyring create`")
        return cls(keys, mode, client, refresh_every)

    def with_single_use(self, single_use: SingleUse) -> "RequestStateCodec":
        """Opens each blob once in the whole cluster (SEP-2322's one-time
        redemption); refuses it when the redemption cannot be recorded."""
        self._single_use = single_use
        return self

    async def refresh(self) -> None:
        """Re-reads the ring from the cluster now (no-op for fixed keys)."""
        if self._client is not None:
            keys = await keyring(self._client, include_secrets=True)
            self._keys, self._fetched = [_Derived.of(k) for k in keys], time.monotonic()

    async def _fresh_keys(self) -> list[_Derived]:
        if self._client is not None and time.monotonic() - self._fetched >= self._refresh_every:
            try:
                await self.refresh()
            except errors.HandlestoreError:
                pass  # the cached ring serves until the cluster answers again
        return self._keys

    async def encode(self, state: Any, subject: str, tool: str | None = None, ttl: float = 600.0) -> str:
        """Seals `state` for `subject` (and `tool`), valid for `ttl` seconds."""
        keys = await self._fresh_keys()
        return _seal(keys, self.mode, state, subject, tool, int(time.time()) + max(1, int(ttl)))

    async def decode(self, blob: str, subject: str, tool: str | None = None) -> Any | None:
        """The state of a blob sealed for `subject` (and `tool`); None if it
        is forged, tampered with, expired, for someone else or malformed, and
        with single use, if it was opened before anywhere."""
        now = int(time.time())
        # The ring as re-read every refresh interval: a retired key stops
        # opening within one interval, also on a replica that only opens.
        got = _open(await self._fresh_keys(), blob, subject, tool, now)
        if got is None and self._client is not None and time.monotonic() - self._fetched >= 1.0:
            try:
                await self.refresh()
                got = _open(self._keys, blob, subject, tool, now)
            except errors.HandlestoreError:
                return None
        if got is None:
            return None
        if self._single_use is None:
            return got[0]
        try:
            first = await self._single_use.redeem(blob, ttl=max(0, got[1] - now) + 1)
        except errors.HandlestoreError:
            return None  # fail closed: the redemption could not be recorded
        return got[0] if first else None

    def encode_at(self, state: Any, subject: str, tool: str | None, exp: int, nonce: bytes | None = None) -> str:
        """Deterministic sealing at an expiry (and nonce): for test vectors."""
        return _seal(self._keys, self.mode, state, subject, tool, exp, nonce)

    def decode_at(self, blob: str, subject: str, tool: str | None, now: int) -> Any | None:
        """Opening at a given time (unix seconds): for test vectors."""
        got = _open(self._keys, blob, subject, tool, now)
        return None if got is None else got[0]
