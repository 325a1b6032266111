"""The encodings the client shares with the Rust crate, in one place: key
names derived from arbitrary strings (128 bits of SHA-256 in base32, as the
Rust seams name them, so Rust and Python replicas share keys), unpadded
base64url (request-state blobs, list page tokens), and compact JSON values."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from handlestore.errors import CodecError

_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def digest_name(s: str) -> str:
    return base64.b32encode(hashlib.sha256(s.encode()).digest()[:16]).decode().rstrip("=")


def b64(raw: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def b64_decode(text: str) -> bytes | None:
    """Strict base64url without padding; None if malformed."""
    if len(text) % 4 == 1 or any(c not in _B64_CHARS for c in text):
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return None
    return raw if b64(raw) == text else None


def page_token_after(key: str) -> str:
    """The list page token that continues after `key` (proto/src/key.rs)."""
    return b64(key.encode())


def json_text(value: Any) -> str:
    """Compact JSON; CodecError if `value` is not JSON."""
    try:
        return json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise CodecError(f"the value is not JSON: {e}") from None


def json_value(raw: str | bytes) -> Any:
    """A stored JSON value; CodecError if it is not JSON."""
    try:
        return json.loads(raw)
    except ValueError as e:
        raise CodecError(f"the stored value is not JSON: {e}") from None
