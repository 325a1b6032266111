"""Watch: changes in revision order, from a revision or from now, resumed
on another node when its node dies."""

from __future__ import annotations

import asyncio

import pytest

from handlestore import ChangeKind, InvalidArgument


async def next_changes(watch, want: int, timeout: float = 10.0) -> list:
    got = []
    while len(got) < want:
        got += (await asyncio.wait_for(watch.next(), timeout)).changes
    return got


async def test_prefix_watch_sees_puts_deletes_and_expiry_in_order(client):
    t = client.state_tool()
    async with await client.watch(prefix="jobs/") as w:
        r1 = await t.store("jobs/1", {"state": "queued"})
        await t.store("other/1", "not watched")
        r2 = await t.store("jobs/1", {"state": "done"})
        r3 = (await t.delete("jobs/1")).revision
        await t.store("jobs/2", "short", ttl=0.5)
        got = await next_changes(w, 5)
    assert [(c.kind, c.key, c.revision) for c in got[:3]] == [
        (ChangeKind.PUT, "jobs/1", r1),
        (ChangeKind.PUT, "jobs/1", r2),
        (ChangeKind.DELETE, "jobs/1", r3),
    ]
    assert got[1].value == {"state": "done"}
    assert [c.kind for c in got[3:]] == [ChangeKind.PUT, ChangeKind.EXPIRE]


async def test_watch_from_a_revision_replays_history(client):
    t = client.state_tool()
    first = await t.store("h/a", 1)
    await t.store("h/b", 2)
    async with await client.watch(prefix="h/", start_revision=first) as w:
        got = await next_changes(w, 2)
    assert [c.key for c in got] == ["h/a", "h/b"]


async def test_handle_watch_names_the_store(client):
    carts = client.handle_store("cart", prefix="cart")
    async with await client.watch(store="cart", keys_only=True) as w:
        cart = await carts.mint({"lines": []})
        got = await next_changes(w, 1)
    assert (got[0].store, got[0].key, got[0].value) == ("cart", cart, None)


async def test_a_watch_needs_exactly_one_target(client):
    with pytest.raises(InvalidArgument):
        await client.watch()
    with pytest.raises(InvalidArgument):
        await client.watch(prefix="a", key="b")


async def test_a_watch_resumes_on_another_node_without_gaps(own_cluster):
    client = own_cluster.client(namespace="resume")
    t = client.state_tool()
    w = await client.watch(prefix="n/")
    serving = w._node + 1
    await t.store("n/0", 0)
    assert len(await next_changes(w, 1)) == 1
    own_cluster.kill(serving)
    for i in range(1, 20):
        await t.store(f"n/{i}", i)
    got = await next_changes(w, 19, timeout=30)
    assert [c.value for c in got] == list(range(1, 20)), "every change once, in order"
    w.close()
    await client.close()


async def test_watches_open_on_the_followers_in_turn(client):
    await client.state_tool().store("f/0", 0)
    leader = client.preferred
    watches = [await client.watch(prefix="f/") for _ in range(4)]
    nodes = sorted(w._node for w in watches)
    assert leader not in nodes, (leader, nodes)
    assert len(set(nodes)) == len(client.endpoints) - 1, nodes
    await client.state_tool().store("f/1", 1)
    for w in watches:
        assert [c.key for c in await next_changes(w, 1)] == ["f/1"]
        w.close()
