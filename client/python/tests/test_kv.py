"""The py-key-value store: the AsyncKeyValue protocol against a real
cluster, then under FastMCP's own usage (session state, the event store's
storage, OAuth token storage), each seen from a second "replica"."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("key_value.aio")
from key_value.aio.errors import InvalidTTLError, SerializationError  # noqa: E402

from handlestore.kv import HandlestoreStore  # noqa: E402

fastmcp = pytest.importorskip("fastmcp")
from fastmcp import Context  # noqa: E402


@pytest.fixture
async def two(cluster, namespace):
    """Two stores over two clients: two replicas of one server."""
    clients = [cluster.client(namespace=namespace) for _ in range(2)]
    try:
        yield [HandlestoreStore(c) for c in clients]
    finally:
        for c in clients:
            await c.close()


async def test_protocol(two):
    a, b = two
    assert await a.get("missing") is None
    await a.put("k", {"v": 1})
    assert await b.get("k") == {"v": 1}, "another replica reads it"
    await a.put("k", {"v": 2}, collection="other")
    assert await b.get("k") == {"v": 1} and await b.get("k", collection="other") == {"v": 2}
    value, ttl = await b.ttl("k")
    assert value == {"v": 1} and ttl is None
    await a.put("t", {"v": 3}, ttl=100)
    value, ttl = await b.ttl("t")
    assert value == {"v": 3} and 97 < ttl <= 100
    assert await b.delete("k") and not await a.delete("k")
    await a.put_many(["x", "y", "z"], [{"n": 1}, {"n": 2}, {"n": 3}], collection="many")
    assert await b.get_many(["x", "nope", "z"], collection="many") == [{"n": 1}, None, {"n": 3}]
    assert sorted(await b.keys("many")) == ["x", "y", "z"]
    assert await b.delete_many(["x", "y", "nope"], collection="many") == 2
    assert await b.destroy_collection("many") and await a.keys("many") == []


async def test_any_names_fit(two):
    a, b = two
    odd = ["", "a/b", "//", "%2F", "https://host/mcp/tokens", "!@#$%^&*()", "é" * 20, "x" * 1500]
    for i, name in enumerate(odd):
        await a.put(name, {"i": i}, collection="c" * 1500)
        await a.put("k", {"i": i}, collection=name)
    for i, name in enumerate(odd):
        assert await b.get(name, collection="c" * 1500) == {"i": i}, name
        assert await b.get("k", collection=name) == {"i": i}, name
    assert sorted(await b.keys("c" * 1500)) == sorted(odd)


async def test_expiry_is_the_clusters(two):
    a, b = two
    await a.put("short", {"v": 1}, ttl=1)
    assert await b.get("short") == {"v": 1}
    await asyncio.sleep(1.5)
    assert await b.get("short") is None
    raw = await b._tool.list("kv/")
    assert all("short" not in e.key for e in raw.entries), "the cluster dropped the key itself"


async def test_bad_input_is_refused_and_changes_nothing(two):
    a, _ = two
    with pytest.raises(InvalidTTLError):
        await a.put("k", {"v": 1}, ttl=-100)
    with pytest.raises(SerializationError):
        await a.put("k", {"v": object()})
    assert await a.get("k") is None


async def test_fastmcp_session_state_is_shared(cluster, namespace):
    clients = [cluster.client(namespace=namespace) for _ in range(2)]
    servers = []
    for c in clients:
        server = fastmcp.FastMCP("state", session_state_store=HandlestoreStore(c, prefix="fastmcp"))

        @server.tool
        async def remember(ctx: Context, value: str) -> dict:
            await ctx.set_state("remembered", value)
            return {"session": ctx.session_id}

        servers.append(server)
    try:
        async with fastmcp.Client(servers[0]) as mcp_client:
            got = await mcp_client.call_tool("remember", {"value": "tea"})
            session = got.structured_content["session"]
        # The other replica's store holds it under FastMCP's own key (on
        # 2026-07-28 connections FastMCP names a session per request).
        other = HandlestoreStore(clients[1], prefix="fastmcp")
        stored = await other.get(f"{session}:remembered", collection="fastmcp_state")
        assert stored == {"value": "tea"}
    finally:
        for c in clients:
            await c.close()


async def test_fastmcp_event_store_replays_on_another_replica(two):
    from fastmcp.server.event_store import EventStore
    from mcp.server.streamable_http import EventMessage
    from mcp_types import JSONRPCNotification

    a, b = (EventStore(storage=s) for s in two)
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": 1})
    first = await a.store_event("stream-1", note)
    second = await a.store_event("stream-1", JSONRPCNotification(jsonrpc="2.0", method="x", params={"n": 2}))
    seen: list[EventMessage] = []

    async def send(ev: EventMessage) -> None:
        seen.append(ev)

    assert await b.replay_events_after(first, send) == "stream-1"
    assert [e.event_id for e in seen] == [second]


async def test_fastmcp_oauth_token_storage(two):
    from fastmcp.client.auth.oauth import TokenStorageAdapter
    from mcp.shared.auth import OAuthToken

    a, b = (TokenStorageAdapter(s, server_url="https://mcp.example/mcp") for s in two)
    await a.set_tokens(OAuthToken(access_token="at-1", expires_in=3600, refresh_token="rt-1"))
    got = await b.get_tokens()
    assert got is not None and got.access_token == "at-1" and got.refresh_token == "rt-1"
