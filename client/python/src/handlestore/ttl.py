"""Time to live, with the HandleStore convention (the same as the Rust
crate's `Ttl` and mcpkit's Go API).

A TTL is given as seconds (int or float) or a `timedelta`:

- `> 0`: the entry expires that long after the write;
- `0` (or `None`, or `DEFAULT`): the store's default TTL, whose own 0 means never;
- `< 0` (or `NEVER`): never expires, whatever the default.

Expiry is decided by the cluster (the leader's clock), never by the client.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Union

#: The store's default TTL.
DEFAULT = 0
#: Never expires, whatever the store's default.
NEVER = -1

TtlLike = Union[int, float, timedelta, None]


def to_millis(ttl: TtlLike) -> int:
    """The signed-milliseconds form used on the wire. A positive TTL below a
    millisecond rounds up to one: it must still expire."""
    if ttl is None:
        return 0
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or math.isnan(seconds):
        raise TypeError(f"a TTL is seconds or a timedelta, not {ttl!r}")
    if seconds == 0:
        return 0
    if seconds < 0:
        return -1
    if math.isinf(seconds):
        return -1
    return max(1, math.ceil(seconds * 1000))


def default_millis(default_ttl: TtlLike) -> int:
    """A store's default TTL on the wire: 0 = never."""
    ms = to_millis(default_ttl)
    return ms if ms > 0 else 0
