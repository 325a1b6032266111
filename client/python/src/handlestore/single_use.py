"""Single use across replicas: SEP-2322 says the one-time redemption of
MRTR `requestState` MUST be enforced by the server, and with several
replicas "this replica has seen it" is not enough. A redemption is a
create-only mint of a handle whose id is derived from the token (SHA-256,
128 bits), in the same store as the Rust crate's `SingleUse`, so Rust and
Python replicas refuse each other's redeemed tokens."""

from __future__ import annotations

from handlestore import errors
from handlestore._encoding import digest_name
from handlestore.client import Client
from handlestore.handles import HandleStore

#: The handle store redemptions go to, in the client's namespace.
REDEEMED_STORE = "mcp-redeemed"


def token_id(token: str) -> str:
    """The handle id a token is redeemed under."""
    return digest_name(token)


class SingleUse:
    """Redeems tokens once across every replica."""

    def __init__(self, client: Client) -> None:
        self._store = HandleStore(client, REDEEMED_STORE)

    async def redeem(self, token: str, ttl: float) -> bool:
        """True if this was the token's first redemption anywhere, False if
        it was redeemed before. The record is kept `ttl` seconds (at least
        one): give the token's remaining lifetime. An exception leaves the
        outcome unknown: treat the token as not redeemed (fail closed)."""
        try:
            await self._store.mint_with_id(token_id(token), True, max(1.0, ttl))
            return True
        except errors.AlreadyExists:
            return False
