"""The MCP Python SDK adapters under the SDK's own usage, against a real
cluster: the subscription bus behind `MCPServer` and the SDK client's
`listen`, the request-state codec inside `RequestStateSecurity`, the event
store behind the SDK's streamable HTTP transport, and OAuth token storage."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp")
from mcp.server.request_state import InvalidRequestState  # noqa: E402
from mcp.server.subscriptions import ResourceUpdated, ToolsListChanged  # noqa: E402

from handlestore.mcp import (  # noqa: E402
    ClusterEventStore,
    ClusterSubscriptionBus,
    ClusterTokenStorage,
    KeyRingCodec,
    request_state_security,
)


@pytest.fixture
async def replicas(cluster, namespace):
    clients = [cluster.client(namespace=namespace) for _ in range(2)]
    try:
        yield clients
    finally:
        for c in clients:
            await c.close()


async def test_the_bus_carries_events_between_replicas(replicas):
    a, b = (ClusterSubscriptionBus(c) for c in replicas)
    heard: list = []
    b.subscribe(heard.append)
    await b.start()
    await a.publish(ResourceUpdated(uri="cart://1"))
    await a.publish(ToolsListChanged())
    for _ in range(100):
        if len(heard) == 2:
            break
        await asyncio.sleep(0.05)
    assert ResourceUpdated(uri="cart://1") in heard and ToolsListChanged() in heard
    await a.close()
    await b.close()


async def test_a_bus_following_a_store_hears_each_change_to_its_handles(replicas):
    """`follow_store=(store, uri_prefix)`: a handle's mint and delete,
    made through another replica, are heard as updates of its URI; another
    store's writes are not."""
    a, b = replicas
    bus = ClusterSubscriptionBus(b, follow_store=("cart", "cart://"))
    heard: list = []
    bus.subscribe(heard.append)
    await bus.start()
    carts = a.handle_store("cart", prefix="cart")
    cart_id = await carts.mint({"lines": []})
    await a.handle_store("other").mint({})
    await carts.delete(cart_id)
    await a.handle_store("other").mint({})
    for _ in range(200):
        if len(heard) >= 2:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    await bus.close()
    assert heard == [ResourceUpdated(uri=f"cart://{cart_id}")] * 2


async def test_an_event_published_right_after_subscribe_returned_is_heard(cluster, namespace):
    """The SDK subscribes (synchronously) before it acknowledges a listen,
    so that no later event is lost: on a bus whose `start()` was never
    awaited, as the SDK uses it, an event published from another replica
    right after `subscribe()` returned is heard, every time."""
    from handlestore import Client

    eps = cluster.endpoints
    publisher_client = Client(eps[1:] + eps[:1], tls=cluster.tls, namespace=namespace)
    publisher = ClusterSubscriptionBus(publisher_client)
    try:
        for i in range(25):
            listener_client = Client(eps[2:] + eps[:2], tls=cluster.tls, namespace=namespace)
            bus = ClusterSubscriptionBus(listener_client)
            heard: list = []
            bus.subscribe(heard.append)
            event = ResourceUpdated(uri=f"cart://round-{i}")
            await publisher.publish(event)
            for _ in range(200):
                if event in heard:
                    break
                await asyncio.sleep(0.05)
            await bus.close()
            await listener_client.close()
            assert event in heard, f"round {i}: the event published after subscribe() returned was lost"
    finally:
        await publisher_client.close()


async def test_listen_on_one_replica_hears_a_publish_on_another(replicas):
    import uvicorn
    from cluster import free_port
    from mcp import Client as McpClient
    from mcp.server.mcpserver import MCPServer

    buses = [ClusterSubscriptionBus(c) for c in replicas]
    servers = [MCPServer("bus", subscriptions=bus) for bus in buses]

    @servers[0].tool()
    async def touch(uri: str) -> str:
        await buses[0].publish(ResourceUpdated(uri=uri))
        return "ok"

    port = free_port()
    app = servers[1].streamable_http_app(stateless_http=True)
    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(web.serve())
    try:
        await buses[1].start()
        while not web.started:
            await asyncio.sleep(0.05)
        async with McpClient(f"http://127.0.0.1:{port}/mcp", mode="auto") as listener:
            async with listener.listen(resource_subscriptions=["cart://7"]) as events:
                await buses[0].publish(ResourceUpdated(uri="cart://other"))
                await buses[0].publish(ResourceUpdated(uri="cart://7"))
                got = await asyncio.wait_for(events.__anext__(), 10)
        assert got == ResourceUpdated(uri="cart://7"), "only the resource asked for"
    finally:
        web.should_exit = True
        await serving
        for bus in buses:
            await bus.close()


async def test_request_state_sealed_by_one_replica_opens_in_another(replicas):
    a, b = replicas
    await a.keyring_rotate(create=True)
    sec_a = await request_state_security(a, audience="cart")
    codec_b = await KeyRingCodec.from_cluster(b)
    token = sec_a.codec.seal(b'{"step":1}')
    assert codec_b.unseal(token) == b'{"step":1}'
    # One character changed (to another: an "A" where there was one would
    # leave the token as it was, one run in 64).
    flipped = token[:10] + ("B" if token[10] == "A" else "A") + token[11:]
    for bad in ["", "hs1.", token[:-2], flipped, "v1." + token[4:], "x" * 70000]:
        with pytest.raises(InvalidRequestState):
            codec_b.unseal(bad)
    # A rotation: the new primary seals, the old key still opens; retired, it does not.
    first = (await a.keyring())[0].id
    await a.keyring_rotate()
    await codec_b.refresh()
    newer = codec_b.seal(b"new")
    assert codec_b.unseal(token) == b'{"step":1}'
    await a.keyring_retire(first)
    await codec_b.refresh()
    with pytest.raises(InvalidRequestState):
        codec_b.unseal(token)
    assert codec_b.unseal(newer) == b"new"
    sec_a.codec.close()
    codec_b.close()


async def test_the_event_store_under_the_sdk_transport(replicas):
    """The SDK's own resumability flow (stateful, 2025-11-25): every SSE
    event is stored, and a GET with Last-Event-ID replays what came after."""
    httpx = pytest.importorskip("httpx2")
    import uvicorn
    from cluster import free_port
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("events")

    @server.tool()
    async def hello(name: str) -> str:
        return f"hello {name}"

    store = ClusterEventStore(replicas[0])
    port = free_port()
    app = server.streamable_http_app(event_store=store)
    store.attach(server.session_manager)
    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(web.serve())
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    try:
        while not web.started:
            await asyncio.sleep(0.05)
        async with httpx.AsyncClient(timeout=10) as http:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
            r = await http.post(url, json=init, headers=headers)
            session = r.headers["mcp-session-id"]
            h = {**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "hello", "arguments": {"name": "tea"}},
            }
            r = await http.post(url, json=call, headers=h)
            ids = [line[3:].strip() for line in r.text.splitlines() if line.startswith("id:")]
            assert len(ids) >= 2, r.text
            # The other replica's store replays the answer after the priming
            # event, and returns no stream id: nothing more is to come.
            replayed = []

            async def send(ev):
                replayed.append(ev)

            other = ClusterEventStore(replicas[1])
            assert await other.replay_events_after(ids[0], send) is None
            assert [e.event_id for e in replayed] == ids[1:]
            assert "hello tea" in replayed[-1].message.model_dump_json()
            assert await other.replay_events_after("NOPE.1", send) is None
    finally:
        web.should_exit = True
        await serving
        store.close()


def test_event_ids_are_taken_only_as_the_store_mints_them():
    from handlestore.mcp.event_layout import parse_event_id

    token = "A2" * 13
    assert parse_event_id(f"{token}.42") == (token, 42)
    assert parse_event_id(f"{token}.0") == (token, 0)
    for bad in ["", "x", f"{token}.", f"{token}.+1", f"{token}.01", f"{token}.1\n", f"{token}.-1"]:
        assert parse_event_id(bad) is None, repr(bad)
    for bad in [f"{token}.9007199254740992", f"{token.lower()}.1", f"{token}.1.2", f"{token}x.1"]:
        assert parse_event_id(bad) is None, repr(bad)


async def test_event_store_ids_are_unique_across_replicas(replicas):
    from mcp_types import JSONRPCNotification

    a, b = (ClusterEventStore(c) for c in replicas)
    note = JSONRPCNotification(jsonrpc="2.0", method="n", params={})
    ids = await asyncio.gather(*[s.store_event("shared", note) for s in (a, b) for _ in range(10)])
    assert len(set(ids)) == 20
    assert sorted(int(i.split(".")[1]) for i in ids) == list(range(1, 21)), "one sequence, no gaps"
    a.close()
    b.close()


async def test_token_storage_is_encrypted_and_shared(replicas):
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    a, b = replicas
    await a.keyring_rotate(create=True)
    sa = await ClusterTokenStorage.from_cluster(a, "mcp.example-alice")
    sb = await ClusterTokenStorage.from_cluster(b, "mcp.example-alice")
    await sa.set_tokens(OAuthToken(access_token="secret-at", refresh_token="secret-rt", expires_in=60))
    await sa.set_client_info(
        OAuthClientInformationFull(client_id="cid", client_secret="csecret", redirect_uris=["http://localhost:1/cb"])
    )
    assert (await sb.get_tokens()).access_token == "secret-at"
    assert (await sb.get_client_info()).client_secret == "csecret"
    raw = [e.value async for e in a.state_tool().scan("mcp-clients/", with_values=True)]
    assert raw and all("secret" not in str(v) for v in raw), "encrypted at rest"
    assert await (await ClusterTokenStorage.from_cluster(b, "mcp.example-bob")).get_tokens() is None
