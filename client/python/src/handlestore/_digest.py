"""Key names derived from arbitrary strings: 128 bits of SHA-256 in base32,
as the Rust seams name them (so Rust and Python replicas share keys)."""

from __future__ import annotations

import base64
import hashlib


def digest_name(s: str) -> str:
    return base64.b32encode(hashlib.sha256(s.encode()).digest()[:16]).decode().rstrip("=")


def page_token_after(key: str) -> str:
    """The list page token that continues after `key` (proto/src/key.rs)."""
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")
