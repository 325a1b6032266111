"""ClientStateStore: an MCP client's session and token survive its
restart; the token is encrypted at rest, under the Rust store's keys."""

from __future__ import annotations

import pytest

from handlestore import ClientStateStore, InvalidArgument, Mode, RequestStateCodec


async def test_fields_round_trip_and_the_token_is_encrypted(client):
    await client.keyring_rotate(create=True)
    s = await ClientStateStore.from_cluster(client, "server.example-alice")
    assert await s.session_id() is None
    await s.set_session_id("sess-1")
    await s.set_access_token("secret-token")
    await s.set_protocol_version("2026-07-28")
    await s.set_server_capabilities({"tools": {}})

    restarted = await ClientStateStore.from_cluster(client, "server.example-alice")
    assert await restarted.session_id() == "sess-1"
    assert await restarted.access_token() == "secret-token"
    assert await restarted.protocol_version() == "2026-07-28"
    assert await restarted.server_capabilities() == {"tools": {}}

    raw = await client.state_tool().get("mcp-clients/server.example-alice/access-token")
    assert raw.startswith("v1e.") and "secret-token" not in raw, "encrypted at rest"
    other = await ClientStateStore.from_cluster(client, "server.example-bob")
    await client.state_tool().store("mcp-clients/server.example-bob/access-token", raw)
    assert await other.access_token() is None, "bound to its client key"

    await s.clear()
    assert await restarted.session_id() is None and await restarted.access_token() is None


async def test_bad_client_keys_and_signing_codecs_are_refused(client):
    await client.keyring_rotate(create=True)
    for bad in ["", "a/b", "ctl\n", "x" * 129]:
        with pytest.raises(InvalidArgument):
            await ClientStateStore.from_cluster(client, bad)
    signing = await RequestStateCodec.from_cluster(client, Mode.SIGNED)
    with pytest.raises(InvalidArgument):
        ClientStateStore(client.state_tool(), signing, "k")
