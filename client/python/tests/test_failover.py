"""Retries across a killed leader, with nothing applied twice; no quorum
fails fast and closed. Each test here has a cluster of its own (it kills
nodes)."""

from __future__ import annotations

import asyncio

import pytest

from handlestore import DeadlineExceeded, StoreItem, Unavailable, new_handle_id
from handlestore.v1 import state_pb2


async def test_a_retried_write_is_answered_from_memory_not_applied_again(client):
    """The same write id twice: the second call gets the first answer, and
    the write happened once (a create-only store would conflict if it ran
    again)."""
    with client.write_id() as write_id:
        req = state_pb2.StoreRequest(
            namespace=client.namespace,
            key="once",
            value=state_pb2.StateValue(json="1"),
            expected_revision=0,
            write_id=write_id,
        )
        first = await client.call("state", "Store", req)
        again = await client.call("state", "Store", req)
    assert again.revision == first.revision
    assert (await client.state_tool().retrieve("once")).mod_revision == first.revision


async def test_writes_through_a_leader_kill_apply_exactly_once(own_cluster):
    client = own_cluster.client(namespace="failover", deadline=30.0, attempt_timeout=1.0)
    t = client.state_tool()
    handles = client.handle_store("jobs")
    await t.batch_store([StoreItem(f"old/{i:03}", i) for i in range(60)])
    leader = await own_cluster.wait_leader()

    async def create(i: int) -> None:
        # Create-only: a second application would fail with a conflict.
        await t.store(f"new/{i:03}", i, expected_revision=0)

    async def delete(i: int) -> None:
        # A second application would say the key did not exist.
        assert (await t.delete(f"old/{i:03}")).count == 1, f"old/{i:03} deleted once"

    async def mint(i: int) -> str:
        # A second application would say the id exists.
        handle = new_handle_id("job")
        await handles.mint_with_id(handle, {"n": i})
        return handle

    done: list[int] = []  # the writes acknowledged so far
    killed_at: list[int] = []

    async def writes() -> list[str]:
        minted = []
        for i in range(60):
            await asyncio.gather(create(i), delete(i))
            minted.append(await mint(i))
            done.append(i)
        return minted

    async def killer() -> None:
        # Once a third of the writes are acknowledged: the rest go through
        # the failover.
        while len(done) < 20:
            await asyncio.sleep(0.001)
        own_cluster.kill(leader)
        killed_at.append(len(done))

    minted, _ = await asyncio.gather(writes(), killer())
    assert killed_at[0] < 30, f"the leader died with {killed_at[0]} of 60 writes acknowledged"
    new = [e.key async for e in t.scan("new/")]
    assert new == [f"new/{i:03}" for i in range(60)]
    assert [e.key async for e in t.scan("old/")] == []
    assert await handles.len() == 60
    assert [(await handles.get(h))["n"] for h in minted] == list(range(60))
    assert await own_cluster.wait_leader() != leader, "a new leader took over"
    await client.close()


async def test_no_quorum_fails_closed_and_nothing_is_acknowledged(own_cluster):
    client = own_cluster.client(namespace="quorum", deadline=2.0, attempt_timeout=0.5)
    t = client.state_tool()
    await t.store("before", 1)
    own_cluster.kill(1)
    own_cluster.kill(2)
    with pytest.raises((Unavailable, DeadlineExceeded)):
        await t.store("during", 1)
    own_cluster.spawn(1)
    own_cluster.spawn(2)
    await own_cluster.wait_leader()
    patient = client.with_deadline(30.0)
    assert await patient.state_tool().get("before") == 1
    # The refused write may have reached a log before quorum was lost, but
    # it was never acknowledged; what the client saw is what counts.
    await client.close()


async def test_an_unreachable_endpoint_is_skipped(own_cluster):
    dead = "127.0.0.1:1"
    client = own_cluster.client(namespace="skip")
    client = type(client)([dead, *own_cluster.endpoints], namespace="skip")
    await client.state_tool().store("k", "v")
    assert await client.state_tool().get("k") == "v"
    await client.close()


async def test_writes_move_to_the_leader(cluster, namespace):
    leader = await cluster.wait_leader()
    addr = cluster.nodes[leader - 1].addr
    others = [e for e in cluster.endpoints if e != addr]
    client = type(cluster.client())([*others, addr], namespace=namespace)
    await client.state_tool().store("k", 1)  # sent to a follower, forwarded
    await client.state_tool().store("k", 2)
    assert client.endpoints[client.preferred] == addr, "the follower named the leader"
    await client.close()
