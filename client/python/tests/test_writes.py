"""Write coalescing (handlestore.writes): writes made at the same time share
calls of Writes.Submit, each keeping its own write id, answer and error;
a lone writer's write goes at once, alone."""

from __future__ import annotations

import asyncio
from collections import deque

import pytest

from handlestore import Conflict, NotFound
from handlestore.v1 import writes_pb2
from handlestore.writes import MAX_SUBMIT_BYTES, MAX_SUBMIT_WRITES, _Waiting, take_batch


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


def _waiting(loop: asyncio.AbstractEventLoop, size: int) -> _Waiting:
    return _Waiting(writes_pb2.Write(), size, loop.create_future())


async def test_a_call_takes_writes_in_order_within_its_bounds_and_skips_the_abandoned():
    loop = asyncio.get_running_loop()
    queue: deque[_Waiting] = deque()
    kept = []
    for i in range(MAX_SUBMIT_WRITES * 2):
        w = _waiting(loop, 100)
        queue.append(w)
        if i % 3 == 0:
            w.done.cancel()  # this caller has given up
        else:
            kept.append(w)
    first = take_batch(queue)
    assert first == kept[:MAX_SUBMIT_WRITES]
    second = take_batch(queue)
    assert first + second == kept and not queue

    # By bytes: a write that would pass the bound waits for the next call;
    # one larger than the bound goes alone.
    sizes = [MAX_SUBMIT_BYTES // 2, MAX_SUBMIT_BYTES // 2 + 1, MAX_SUBMIT_BYTES * 2, 10]
    queue.extend(_waiting(loop, s) for s in sizes)
    for s in sizes:
        assert [w.size for w in take_batch(queue)] == [s]
    assert take_batch(queue) == []
