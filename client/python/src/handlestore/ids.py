"""Handle ids: `<prefix>-<26 chars>` or just the 26 chars, the 26 being 128
CSPRNG bits in RFC 4648 base32 (A-Z, 2-7, no padding), as the node and the
Rust client make and check them (proto/src/id.rs)."""

from __future__ import annotations

import base64
import re
import secrets

ID_LEN = 26
MAX_PREFIX_LEN = 64
# fullmatch, not match: "$" would also match before a trailing newline.
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_RANDOM = re.compile(r"[A-Z2-7]{26}")


def new_handle_id(prefix: str = "") -> str:
    """A fresh id; with a prefix, `<prefix>-<id>`."""
    raw = base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=")
    return f"{prefix}-{raw}" if prefix else raw


def is_name(s: str, max_len: int = 64) -> bool:
    """A namespace, store or prefix name: A-Z a-z 0-9 _ - . (1 to max_len)."""
    return len(s) <= max_len and _NAME.fullmatch(s) is not None


def check_handle_id(handle_id: str) -> str | None:
    """Why `handle_id` is malformed, or None if it is well formed."""
    shown = repr(handle_id[:80])
    if not isinstance(handle_id, str) or not handle_id:
        return "handle id must not be empty"
    if len(handle_id) > MAX_PREFIX_LEN + 1 + ID_LEN:
        return f"handle id {shown}... is too long"
    random = handle_id
    if len(handle_id) > ID_LEN and handle_id[-ID_LEN - 1] == "-":
        prefix, random = handle_id[: -ID_LEN - 1], handle_id[-ID_LEN:]
        if not is_name(prefix, MAX_PREFIX_LEN):
            return f"handle id {shown} has an invalid prefix (A-Z a-z 0-9 _ - . only)"
    if _RANDOM.fullmatch(random) and _decodes_to_16(random):
        return None
    return f'handle id {shown} is malformed: expected 26 base32 characters (A-Z, 2-7), optionally after "<prefix>-"'


def _decodes_to_16(random: str) -> bool:
    # 26 characters carry 130 bits: the last two must be zero (canonical).
    try:
        raw = base64.b32decode(random + "======")
    except ValueError:
        return False
    return len(raw) == 16 and base64.b32encode(raw).decode().rstrip("=") == random
