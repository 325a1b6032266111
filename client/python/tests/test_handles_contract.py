"""The HandleStore contract, case for case the Rust suite's
(client/rust/src/testkit/mod.rs), against a real three-node cluster."""

from __future__ import annotations

import asyncio

import pytest

from handlestore import NEVER, Closed, Conflict, InvalidArgument, NotFound, new_handle_id
from handlestore.ids import check_handle_id

SHORT = 1.5  # seconds: short for tests, long enough for a slow machine


async def wait_past(ttl: float) -> None:
    await asyncio.sleep(ttl + 0.3)


def doc(name: str, items: list[int] | None = None) -> dict:
    return {"name": name, "items": items or []}


async def test_mint_get(client):
    s = client.handle_store("mintget")
    handle = await s.mint(doc("a"))
    assert await s.get(handle) == doc("a"), "a minted value reads back"


async def test_ids(client):
    plain = client.handle_store("ids")
    seen = set()
    for _ in range(50):
        handle = await plain.mint(doc("x"))
        assert len(handle) == 26 and check_handle_id(handle) is None, handle
        seen.add(handle)
    assert len(seen) == 50, "minted ids are unique"
    prefixed = client.handle_store("idsp", prefix="cart")
    handle = await prefixed.mint(doc("x"))
    assert handle.startswith("cart-") and len(handle) == 31, handle
    assert await prefixed.get(handle) == doc("x")


async def test_unknown_and_malformed(client):
    s = client.handle_store("unknown")
    unknown = new_handle_id()
    assert await s.get(unknown) is None, "an unknown id reads as None"
    assert not await s.delete(unknown), "deleting an unknown id: existed=false"
    for bad in ["", "nope", "lowercase-aaaaaaaaaaaaaaaaaaaaaaaaaa", "AAAAAAAAAAAAAAAAAAAAAAAAA1", None, 7]:
        for call in (
            s.get(bad),
            s.put(bad, doc("x")),
            s.delete(bad),
            s.update(bad, lambda d: d["items"].append(1)),
            s.mint_with_id(bad, doc("x")),
        ):
            with pytest.raises(InvalidArgument):
                await call
    assert await s.len() == 0, "bad input changed nothing"


async def test_put_is_upsert(client):
    s = client.handle_store("put")
    handle = await s.mint(doc("v1"))
    assert await s.put(handle, doc("v2")), "put over a live handle: existed=true"
    assert await s.get(handle) == doc("v2")
    fresh = new_handle_id()
    assert not await s.put(fresh, doc("new")), "put of a new id: existed=false"
    assert await s.get(fresh) == doc("new"), "put creates"


async def test_delete_reports_existence(client):
    s = client.handle_store("delete")
    handle = await s.mint(doc("a"))
    assert await s.delete(handle), "first delete: existed=true"
    assert not await s.delete(handle), "second delete: existed=false"
    assert await s.get(handle) is None


async def test_len_counts_live_per_store(client):
    a, b = client.handle_store("lena"), client.handle_store("lenb")
    ids = [await a.mint(doc(str(i))) for i in range(5)]
    await b.mint(doc("other"))
    assert await a.len() == 5
    assert await b.len() == 1, "stores are counted separately"
    await a.delete(ids[0])
    await a.put(ids[1], doc("again"))
    assert await a.len() == 4, "delete lowers len, overwrite does not raise it"


async def test_ttl_expiry_hides_everywhere(client):
    s = client.handle_store("ttl")
    short = await s.mint(doc("short"), SHORT)
    long = await s.mint(doc("long"), NEVER)
    short2 = await s.mint(doc("short2"), SHORT)
    short3 = await s.mint(doc("short3"), SHORT)
    assert await s.get(short) == doc("short"), "alive before its ttl"
    assert await s.len() == 4
    await wait_past(SHORT)
    assert await s.get(short) is None, "expired: get is None"
    assert await s.len() == 1, "expired handles are not counted"
    assert not await s.delete(short2), "expired: delete says it did not exist"
    assert not await s.put(short3, doc("back"), NEVER), "expired: put says it did not exist"
    assert await s.get(short3) == doc("back"), "put over an expired handle creates it anew"
    assert await s.get(long) == doc("long")
    assert await s.update(short, lambda d: d["items"].append(1)) is None, "expired: update finds nothing"
    assert await s.len() == 2


async def test_ttl_default_and_never(client):
    from datetime import timedelta

    with_default = client.handle_store("ttldef", default_ttl=SHORT)
    by_default = await with_default.mint(doc("d"))
    zero = await with_default.mint(doc("z"), 0)
    never = await with_default.mint(doc("n"), NEVER)
    explicit = await with_default.mint(doc("e"), timedelta(hours=1))
    no_default = client.handle_store("ttlnodef")
    forever = await no_default.mint(doc("f"))
    await wait_past(SHORT)
    assert await with_default.get(by_default) is None, "the default TTL uses the store default"
    assert await with_default.get(zero) is None, "a zero ttl means the store default"
    assert await with_default.get(never) == doc("n"), "NEVER ignores the default"
    assert await with_default.get(explicit) == doc("e"), "an explicit ttl wins over the default"
    assert await no_default.get(forever) == doc("f"), "no default: never expires"


async def test_update_read_modify_write(client):
    s = client.handle_store("update")
    handle = await s.mint(doc("u"), 3600)
    new = await s.update(handle, lambda d: d["items"].append(7))
    assert new == doc("u", [7])
    assert await s.get(handle) == new
    # A function may also return the new value.
    assert await s.update(handle, lambda d: {**d, "name": "v"}) == doc("v", [7])
    missing = new_handle_id()
    assert await s.update(missing, lambda d: d["items"].append(1)) is None
    assert await s.get(missing) is None, "update never creates"


async def test_update_keeps_the_expiry(client):
    s = client.handle_store("updttl")
    handle = await s.mint(doc("u"), 3600)
    before = await s.get_versioned(handle)
    await s.update(handle, lambda d: d["items"].append(1))
    after = await s.get_versioned(handle)
    assert after.expires_at_ms == before.expires_at_ms and after.mod_revision > before.mod_revision


async def test_concurrent_updates_lose_nothing(cluster, namespace):
    # Four writers, each with its own client (as four replicas would be).
    clients = [cluster.client(namespace=namespace) for _ in range(4)]
    try:
        handle = await clients[0].handle_store("concurrent").mint(doc("c"))

        async def writer(w: int) -> None:
            s = clients[w].handle_store("concurrent")
            for i in range(10):
                await s.update(handle, lambda d, item=w * 1000 + i: d["items"].append(item))

        await asyncio.gather(*(writer(w) for w in range(4)))
        items = sorted((await clients[0].handle_store("concurrent").get(handle))["items"])
        assert items == sorted(w * 1000 + i for w in range(4) for i in range(10)), (
            "every concurrent update landed exactly once"
        )
    finally:
        for c in clients:
            await c.close()


async def test_compare_and_set_and_create_only(client):
    s = client.handle_store("cas")
    handle = new_handle_id()
    created = await s.put_with(handle, doc("a"), expected_revision=0)
    assert not created.existed
    with pytest.raises(Conflict) as e:
        await s.put_with(handle, doc("b"), expected_revision=0)
    assert e.value.current_revision == created.revision and e.value.reason == "revision_mismatch"
    moved = await s.put_with(handle, doc("c"), expected_revision=created.revision)
    with pytest.raises(Conflict):
        await s.delete_with(handle, expected_revision=created.revision)
    assert await s.get(handle) == doc("c")
    with pytest.raises(NotFound):
        await s.put_with(new_handle_id(), doc("x"), expected_revision=5)
    assert (await s.delete_with(handle, expected_revision=moved.revision)).existed


async def test_values_must_be_json(client):
    from handlestore import CodecError

    s = client.handle_store("codec")
    with pytest.raises(CodecError):
        await s.mint({"not": object()})
    assert await s.len() == 0


async def test_close_refuses(client):
    s = client.handle_store("close")
    handle = await s.mint(doc("a"))
    await s.close()
    with pytest.raises(Closed):
        await s.get(handle)
    with pytest.raises(Closed):
        await s.mint(doc("b"))
