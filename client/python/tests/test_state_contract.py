"""The StateTool contract, case for case the Rust suite's
(client/rust/src/testkit/state.rs), against a real three-node cluster."""

from __future__ import annotations

import asyncio

import pytest

from handlestore import NEVER, Conflict, InvalidArgument, NotFound, StoreItem

SHORT = 1.5


async def test_store_retrieve(client):
    t = client.state_tool()
    r1 = await t.store("checkpoints/agent-7/latest", {"step": 3})
    e = await t.retrieve("checkpoints/agent-7/latest")
    assert e.value == {"step": 3}
    assert (e.create_revision, e.mod_revision, e.expires_at_ms) == (r1, r1, None)
    r2 = await t.store("checkpoints/agent-7/latest", {"step": 4})
    assert r2 > r1, "revisions grow"
    e = await t.retrieve("checkpoints/agent-7/latest")
    assert (e.create_revision, e.mod_revision) == (r1, r2), "an overwrite keeps create_revision"
    await t.store("blob", bytes([0, 1, 255]))
    assert (await t.retrieve("blob")).value == bytes([0, 1, 255]), "bytes round-trip unchanged"
    assert await t.exists("blob")
    assert not await t.exists("nope")
    assert await t.retrieve("nope") is None
    d = await t.delete("blob")
    assert (d.count, d.more) == (1, False)
    assert (await t.delete("blob")).count == 0
    assert not await t.exists("blob")


async def test_keys_are_validated(client):
    t = client.state_tool()
    for bad in ["", "/lead", "trail/", "dou//ble", "ctl\x01", "k" * 1025]:
        for call in (t.store(bad, 1), t.retrieve(bad), t.exists(bad)):
            with pytest.raises(InvalidArgument):
                await call
    with pytest.raises(InvalidArgument):
        await t.delete("", prefix=True, limit=10)
    with pytest.raises(InvalidArgument):
        await t.batch_store([StoreItem("a", 1), StoreItem("a", 2)])
    assert (await t.list("")).entries == [], "nothing was stored"


async def test_compare_and_set(client):
    t = client.state_tool()
    r1 = await t.store("doc", 1)
    r2 = await t.store("doc", 2, expected_revision=r1)
    with pytest.raises(Conflict) as e:
        await t.store("doc", 3, expected_revision=r1)
    assert e.value.current_revision == r2
    with pytest.raises(NotFound):
        await t.store("missing", 1, expected_revision=1)
    with pytest.raises(Conflict):
        await t.delete("doc", expected_revision=r1)
    assert (await t.retrieve("doc")).value == 2, "failed compare-and-sets changed nothing"
    assert (await t.delete("doc", expected_revision=r2)).count == 1


async def test_create_only(client):
    t = client.state_tool()
    r1 = await t.store("claim", "a", expected_revision=0)
    with pytest.raises(Conflict) as e:
        await t.store("claim", "b", expected_revision=0)
    assert e.value.current_revision == r1
    with pytest.raises(Conflict):
        await t.batch_store([StoreItem("other", 1), StoreItem("claim", "c", expected_revision=0)])
    assert not await t.exists("other"), "the failed batch wrote nothing"
    assert (await t.retrieve("claim")).value == "a", "the first claim stands"
    assert (await t.delete("claim")).count == 1
    await t.store("claim", "d", expected_revision=0)


async def test_ttl_expiry(client):
    t = client.state_tool(default_ttl=SHORT)
    await t.store("short", 1, SHORT)
    await t.store("default", 1)
    await t.store("never", 1, NEVER)
    assert (await t.retrieve("short")).expires_at_ms is not None
    await asyncio.sleep(SHORT + 0.3)
    assert await t.retrieve("short") is None, "expired"
    assert not await t.exists("default"), "the default TTL applied"
    assert await t.exists("never")
    assert [e.key for e in (await t.list("")).entries] == ["never"], "list hides expired keys"
    got = await t.batch_retrieve(["short", "never"])
    assert got[0] is None and got[1] is not None


async def test_list_pages_in_order(client):
    t = client.state_tool()
    items = [StoreItem(f"logs/agent-1/{i:03}", i) for i in range(25)]
    items += [StoreItem("logs/agent-2/000", "other"), StoreItem("logsx", "not under logs/")]
    await t.batch_store(items)
    keys, token, pages = [], None, 0
    while True:
        page = await t.list("logs/agent-1/", limit=7, page_token=token, with_values=True)
        assert len(page.entries) <= 7
        assert all(e.value is not None for e in page.entries), "with_values returns values"
        keys += [e.key for e in page.entries]
        pages += 1
        token = page.next_page_token
        if token is None:
            break
    assert keys == [f"logs/agent-1/{i:03}" for i in range(25)], "every key once, in order"
    assert pages == 4
    every = await t.list("logs/", limit=1000)
    assert len(every.entries) == 26 and every.next_page_token is None
    assert all(e.value is None for e in every.entries), "no values unless asked"
    assert [e.key async for e in t.scan("logs/", page=10)] == [e.key for e in every.entries]
    with pytest.raises(InvalidArgument):
        await t.list("logs/", page_token="!!bad")
    with pytest.raises(InvalidArgument):
        await t.list("", limit=1001)


async def test_delete_by_prefix(client):
    t = client.state_tool()
    await t.batch_store([StoreItem(f"tmp/{i:02}", i) for i in range(12)])
    await t.store("tmpx", "kept")
    d = await t.delete("tmp/", prefix=True, limit=5)
    assert (d.count, d.more) == (5, True), "bounded by the limit, and says more remain"
    assert (await t.list("tmp/")).entries[0].key == "tmp/05", "the first keys in order went"
    d = await t.delete("tmp/", prefix=True, limit=100)
    assert (d.count, d.more) == (7, False)
    assert await t.exists("tmpx"), "keys outside the prefix stay"


async def test_batches_are_atomic(client):
    t = client.state_tool()
    r = await t.store("a", 1)
    rev = await t.batch_store([StoreItem("b", 2), StoreItem("c", 3)])
    got = await t.batch_retrieve(["a", "b", "c", "d"])
    assert len(got) == 4
    assert got[1].mod_revision == rev and got[2].mod_revision == rev, "one revision for the whole batch"
    assert got[3] is None
    bad = [StoreItem("new-1", 1), StoreItem("a", "changed", expected_revision=r + 1000), StoreItem("new-2", 2)]
    with pytest.raises(Conflict):
        await t.batch_store(bad)
    assert not await t.exists("new-1") and not await t.exists("new-2")
    a = await t.retrieve("a")
    assert a.value == 1
    await t.batch_store([StoreItem("a", "changed", expected_revision=a.mod_revision), StoreItem("new-1", 1)])
    assert await t.exists("new-1")


async def test_huge_values_are_refused_and_change_nothing(client):
    t = client.state_tool()
    with pytest.raises(InvalidArgument):
        await t.store("big", b"x" * ((1 << 20) + 1))
    assert not await t.exists("big")


async def test_namespaces_do_not_see_each_other(client):
    other = client.with_namespace(client.namespace[:50] + "-other")
    await client.state_tool().store("shared/key", "mine")
    assert await other.state_tool().retrieve("shared/key") is None
