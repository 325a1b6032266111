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
from handlestore.client_state import ROOT, check_client_key
from handlestore.request_state import Mode, RequestStateCodec
from handlestore.state import StateTool

TOKENS = "oauth-tokens"
CLIENT_INFO = "oauth-client-info"
_SEAL_TTL = 10 * 365 * 24 * 3600


class ClusterTokenStorage:
    """Pass as `storage=` to the SDK's `OAuthClientProvider`."""

    def __init__(self, tool: StateTool, codec: RequestStateCodec, client_key: str) -> None:
        if codec.mode is not Mode.ENCRYPTED:
            raise ValueError("token storage needs an encrypting codec (Mode.ENCRYPTED)")
        check_client_key(client_key)
        self._tool, self._codec, self.client_key = tool, codec, client_key

    @classmethod
    async def from_cluster(cls, client: Client, client_key: str) -> "ClusterTokenStorage":
        """Storage in the client's namespace, encrypting with its key ring
        (which must exist: `handlestore keyring create`)."""
        return cls(client.state_tool(), await RequestStateCodec.from_cluster(client, Mode.ENCRYPTED), client_key)

    def _key(self, field: str) -> str:
        return f"{ROOT}/{self.client_key}/{field}"

    async def _put(self, field: str, model: OAuthToken | OAuthClientInformationFull) -> None:
        plain = model.model_dump(mode="json", exclude_none=True)
        sealed = await self._codec.encode(plain, self.client_key, field, _SEAL_TTL)
        await self._tool.store(self._key(field), sealed)

    async def _get(self, field: str) -> dict | None:
        sealed = await self._tool.get(self._key(field))
        if not isinstance(sealed, str):
            return None
        plain = await self._codec.decode(sealed, self.client_key, field)
        return plain if isinstance(plain, dict) else None

    async def get_tokens(self) -> OAuthToken | None:
        got = await self._get(TOKENS)
        return None if got is None else OAuthToken.model_validate(got)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._put(TOKENS, tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        got = await self._get(CLIENT_INFO)
        return None if got is None else OAuthClientInformationFull.model_validate(got)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._put(CLIENT_INFO, client_info)
