"""Read coalescing (handlestore.reads): point reads made at the same time
(state retrieves and handle gets) share calls of Reads.Submit, each getting
its own answer or error; a lone reader's read goes at once, alone, on its
own method; a response that would be too large is split over calls;
coalesced reads stay linearizable."""

from __future__ import annotations

import asyncio

import pytest

from handlestore import InvalidArgument
from handlestore.client import STALE
from handlestore.state import StoreItem


async def test_concurrent_reads_share_calls_and_each_gets_its_own_answer(cluster, namespace):
    client = cluster.client(namespace=namespace, max_read_calls=1)
    try:
        tool = client.state_tool()
        await tool.batch_store([StoreItem(f"k{i}", {"i": i}) for i in range(0, 100, 2)])
        before = client.read_stats
        got = await asyncio.gather(*(tool.get(f"k{i % 100}", "absent") for i in range(300)))
        stats = client.read_stats
        assert stats.sent - before.sent == 300
        assert stats.calls - before.calls < 150, f"300 concurrent reads took {stats.calls - before.calls} calls"
        assert got == [{"i": i % 100} if i % 2 == 0 else "absent" for i in range(300)]
    finally:
        await client.close()


async def test_a_lone_reader_sends_each_read_alone(client):
    tool = client.state_tool()
    await tool.store("one", 1)
    before = client.read_stats
    assert await tool.get("one") == 1
    assert await tool.retrieve("none") is None
    assert (await tool.retrieve("one", STALE)).value == 1
    after = client.read_stats
    assert (after.sent - before.sent, after.calls - before.calls) == (3, 3)


async def test_a_key_the_node_refuses_fails_alone(cluster, namespace):
    client = cluster.client(namespace=namespace, max_read_calls=1)
    try:
        tool = client.state_tool()
        await tool.store("good", "yes")
        too_long = "k" * 5000

        async def read(i: int) -> object:
            return await tool.get(too_long if i == 7 else "good")

        got = await asyncio.gather(*(read(i) for i in range(40)), return_exceptions=True)
        assert isinstance(got[7], InvalidArgument), got[7]
        assert got[:7] + got[8:] == ["yes"] * 39, "the others got their own answers"
        assert client.read_stats.calls < 40, "the reads did share calls"
    finally:
        await client.close()


async def test_reads_of_other_kinds_options_and_namespaces_share_a_call_each_served_as_its_own(cluster, namespace):
    client = cluster.client(namespace=namespace, max_read_calls=1)
    other = client.with_namespace(namespace[:60] + "-b")
    try:
        await client.state_tool().store("k", "here")
        await other.state_tool().store("k", "there")
        carts = client.handle_store("carts")
        cart = await carts.mint({"lines": 1})
        mine, theirs = client.state_tool(), other.state_tool(consistency=STALE)
        before = client.read_stats

        async def three() -> list[object]:
            return [await mine.get("k"), await theirs.get("k"), await carts.get(cart)]

        got = await asyncio.gather(*(three() for _ in range(20)), carts.get("h-" + "A" * 26))
        assert got[:20] == [["here", "there", {"lines": 1}]] * 20
        assert got[20] is None, "an unknown handle reads as None"
        stats = client.read_stats
        assert stats.calls - before.calls < stats.sent - before.sent, "the reads did share calls"
    finally:
        await client.close()


async def test_a_response_too_large_for_one_call_is_split_over_calls(cluster, namespace):
    client = cluster.client(namespace=namespace, max_read_calls=1)
    try:
        tool = client.state_tool()
        big = "x" * (900 << 10)
        for i in range(12):
            await tool.store(f"big{i}", big + str(i))
        before = client.read_stats
        got = await asyncio.gather(*(tool.get(f"big{i % 12}") for i in range(24)))
        assert got == [big + str(i % 12) for i in range(24)]
        stats = client.read_stats
        assert stats.sent - before.sent == 24
        assert stats.calls - before.calls < 24, "the reads did share calls"
    finally:
        await client.close()


@pytest.mark.parametrize("readers", [64])
async def test_a_coalesced_read_sees_every_write_acknowledged_before_it(cluster, namespace, readers):
    writer = cluster.client(namespace=namespace)
    reader = cluster.client(namespace=namespace, max_read_calls=1)
    try:
        w, r = writer.state_tool(), reader.state_tool()

        async def one(task: int) -> None:
            for n in range(1, 11):
                await w.store(f"c{task}", n)
                # Acknowledged before the read began: the read must see it,
                # whichever batch it rides in.
                assert await r.get(f"c{task}") == n

        await asyncio.gather(*(one(t) for t in range(readers)))
        stats = reader.read_stats
        assert stats.calls < stats.sent, "the reads did share calls"
    finally:
        await writer.close()
        await reader.close()
