"""State-tool keys (`checkpoints/agent-7/latest`) and key prefixes, checked
before sending as the node and the Rust client check them
(proto/src/key.rs): a key is non-empty, at most 1024 bytes (UTF-8), has no
control character and no empty segment; a prefix may be empty."""

from __future__ import annotations

MAX_KEY_LEN = 1024


def _is_control(c: str) -> bool:
    """Unicode's control characters (category Cc), as Rust's `char::is_control`."""
    o = ord(c)
    return o <= 0x1F or 0x7F <= o <= 0x9F


def _check_common(what: str, s: str, max_len: int) -> str | None:
    size = len(s.encode("utf-8", "surrogatepass"))
    if size > max_len:
        return f"{what} is {size} bytes; the limit is {max_len}"
    if any(map(_is_control, s)):
        return f"{what} {s[:80]!r} contains a control character"
    return None


def check_key(key: str, max_len: int = MAX_KEY_LEN) -> str | None:
    """Why `key` is malformed, or None if it is well formed."""
    if not isinstance(key, str) or not key:
        return "key must not be empty"
    why = _check_common("key", key, max_len)
    if why is None and "" in key.split("/"):
        why = f"key {key[:80]!r} has an empty segment (no leading, trailing or doubled '/')"
    return why


def check_prefix(prefix: str, max_len: int = MAX_KEY_LEN) -> str | None:
    """Why `prefix` is malformed, or None (empty is allowed: everything)."""
    if not isinstance(prefix, str):
        return "a prefix is a string"
    return _check_common("prefix", prefix, max_len)
