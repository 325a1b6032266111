"""Write coalescing (handlestore.writes): writes made at the same time share
calls of Writes.Submit, each keeping its own write id, answer and error;
a lone writer's write goes at once, alone."""

from __future__ import annotations

import asyncio

import pytest

from handlestore import Conflict, NotFound


async def test_concurrent_writes_share_calls_and_each_gets_its_own_answer(cluster, namespace):
    client = cluster.client(namespace=namespace, max_write_calls=1)
    try:
        store = client.handle_store("coalesced")
        held = await store.mint({"n": -1})
        stale = (await store.get_versioned(held)).mod_revision + 1
        before = client.write_stats

        async def one(i: int) -> object:
            if i % 10 == 0:
                # A compare-and-set that must lose: its failure is its own.
                return await store.put_with(held, {"n": i}, expected_revision=stale)
            return await store.mint({"n": i})

        results = await asyncio.gather(*(one(i) for i in range(200)), return_exceptions=True)
        stats = client.write_stats
        assert (before.writes, stats.writes) == (1, 201)
        assert stats.calls - 1 < 100, f"200 concurrent writes took {stats.calls - 1} calls"
        for i, r in enumerate(results):
            if i % 10 == 0:
                assert isinstance(r, Conflict), r
            else:
                assert isinstance(r, str), r
                assert await store.get(r) == {"n": i}, "each mint wrote its own value"
        assert await store.get(held) == {"n": -1}, "no losing compare-and-set wrote"
        assert await store.len() == 181
    finally:
        await client.close()


async def test_a_lone_writer_sends_each_write_alone(client):
    store = client.handle_store("alone")
    before = client.write_stats
    handle = await store.mint({"a": 1})
    assert await store.put(handle, {"a": 2}) is True
    assert await store.delete(handle) is True
    with pytest.raises(NotFound):
        await store.put_with(handle, {"a": 3}, expected_revision=5)
    after = client.write_stats
    assert (after.writes - before.writes, after.calls - before.calls) == (4, 4)


async def test_state_tool_writes_go_through_the_same_calls(cluster, namespace):
    client = cluster.client(namespace=namespace, max_write_calls=1)
    try:
        tool = client.state_tool()
        await asyncio.gather(*(tool.store(f"k{i}", {"i": i}) for i in range(50)))
        assert client.write_stats.calls < 50
        assert (await tool.retrieve("k7")).value == {"i": 7}
        await asyncio.gather(*(tool.delete(f"k{i}") for i in range(50)))
        assert await tool.retrieve("k7") is None
    finally:
        await client.close()
