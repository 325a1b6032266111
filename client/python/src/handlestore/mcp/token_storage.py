"""The MCP Python SDK client's OAuth `TokenStorage` in the cluster: the
tokens and the registered client's information (with its secret) of one
MCP client, encrypted with the namespace's key ring (AES-256-GCM, bound to
the client key), under `mcp-clients/<client key>/oauth-tokens` and
`.../oauth-client-info`, beside the `ClientStateStore` fields. Any instance
of the client (a restart, another worker) finds them, and a token refreshed
by one is used by all."""

from __future__ import annotations

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from handlestore.client import Client
from handlestore.client_state import ClientStateStore

TOKENS = "oauth-tokens"
CLIENT_INFO = "oauth-client-info"


class ClusterTokenStorage:
    """Pass as `storage=` to the SDK's `OAuthClientProvider`. Two sealed
    fields of the client's `ClientStateStore`."""

    def __init__(self, fields: ClientStateStore) -> None:
        self._fields = fields
        self.client_key = fields.client_key

    @classmethod
    async def from_cluster(cls, client: Client, client_key: str) -> "ClusterTokenStorage":
        """Storage in the client's namespace, encrypting with its key ring
        (which must exist: `handlestore keyring create`)."""
        return cls(await ClientStateStore.from_cluster(client, client_key))

    async def _get(self, field: str) -> dict | None:
        got = await self._fields.sealed(field)
        return got if isinstance(got, dict) else None

    async def get_tokens(self) -> OAuthToken | None:
        got = await self._get(TOKENS)
        return None if got is None else OAuthToken.model_validate(got)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._fields.set_sealed(TOKENS, tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        got = await self._get(CLIENT_INFO)
        return None if got is None else OAuthClientInformationFull.model_validate(got)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._fields.set_sealed(CLIENT_INFO, client_info.model_dump(mode="json", exclude_none=True))
