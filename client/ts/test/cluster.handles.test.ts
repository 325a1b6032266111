/** HandleStore against a real cluster: the HandleStore contract, compare-and-set, TTLs, coalesced writes, reasons. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  AlreadyExistsError,
  InvalidArgumentError,
  NotFoundError,
  newHandleId,
  RevisionMismatchError,
  Ttl,
  ValueTooLargeError,
} from "../src/index.js";
import { skipReason, useCluster } from "./cluster.js";

interface Cart {
  items: string[];
}

describe("handle store on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();
  let n = 0;
  const client = (options = {}) => fx.client({ namespace: `ts-handles-${++n}`, ...options });

  test("mint, get, put, delete and len", async () => {
    const carts = client().handleStore<Cart>("cart", { prefix: "cart" });
    const id = await carts.mint({ items: [] });
    assert.match(id, /^cart-[A-Z2-7]{26}$/);
    assert.deepEqual(await carts.get(id), { items: [] });
    assert.equal(await carts.put(id, { items: ["sku-1"] }), true);
    const got = await carts.getVersioned(id);
    assert.deepEqual(got?.value, { items: ["sku-1"] });
    assert.ok((got?.modRevision ?? 0) > (got?.createRevision ?? 0));
    assert.equal(got?.expiresAtMs, undefined);
    assert.equal(await carts.len(), 1);
    assert.equal(await carts.delete(id), true);
    assert.equal(await carts.delete(id), false);
    assert.equal(await carts.len(), 0);
  });

  test("an unknown handle is absent, and a compare-and-set of it is not found", async () => {
    const carts = client().handleStore<Cart>("cart");
    const unknown = newHandleId();
    assert.equal(await carts.get(unknown), undefined);
    assert.equal(await carts.getVersioned(unknown), undefined);
    assert.equal(await carts.update(unknown, (c) => c), undefined);
    await assert.rejects(carts.putWith(unknown, { items: [] }, { expectedRevision: 5 }), (e: unknown) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.reason, "not_found");
      return true;
    });
    assert.equal(await carts.put(unknown, { items: [] }), false, "an upsert creates it");
  });

  test("a compare-and-set that lost says the current revision; create-only refuses a live handle", async () => {
    const carts = client().handleStore<Cart>("cart");
    const id = await carts.mint({ items: [] });
    const first = await carts.getVersioned(id);
    const won = await carts.putWith(id, { items: ["a"] }, { expectedRevision: first?.modRevision });
    await assert.rejects(
      carts.putWith(id, { items: ["b"] }, { expectedRevision: first?.modRevision }),
      (e: unknown) => {
        assert.ok(e instanceof RevisionMismatchError);
        assert.equal(e.reason, "revision_mismatch");
        assert.equal(e.currentRevision, won.revision);
        assert.ok(e.message.length > 0, "the node's message is kept");
        return true;
      },
    );
    await assert.rejects(carts.putWith(id, { items: [] }, { expectedRevision: 0 }), RevisionMismatchError);
    await assert.rejects(carts.deleteWith(id, { expectedRevision: 1 }), RevisionMismatchError);
    assert.deepEqual(await carts.get(id), { items: ["a"] }, "no losing write wrote");
  });

  test("update is a compare-and-set loop: concurrent updates from two clients lose nothing", async () => {
    const a = client();
    const b = a.withNamespace(a.namespace);
    const cartsA = a.handleStore<Cart>("cart");
    const cartsB = b.handleStore<Cart>("cart");
    const id = await cartsA.mint({ items: [] });
    let calls = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? cartsA : cartsB).update(id, (c) => {
          calls++;
          c.items.push(`sku-${i}`);
        }),
      ),
    );
    const items = (await cartsA.get(id))?.items ?? [];
    assert.deepEqual([...items].sort(), Array.from({ length: 20 }, (_, i) => `sku-${i}`).sort());
    assert.ok(calls >= 20);
  });

  test("TTL: > 0 expires after it, 0 is the store's default, < 0 never", async () => {
    const c = client();
    const withDefault = c.handleStore<Cart>("ttl", { defaultTtl: 400 });
    const noDefault = c.handleStore<Cart>("ttl-none");
    const byDefault = await withDefault.mint({ items: ["default"] });
    const never = await withDefault.mint({ items: ["never"] }, { ttl: Ttl.NEVER });
    const short = await noDefault.mint({ items: ["short"] }, { ttl: 300 });
    const kept = await noDefault.mint({ items: ["kept"] }, { ttl: Ttl.DEFAULT });
    const dated = await withDefault.getVersioned(byDefault);
    assert.ok(dated?.expiresAtMs !== undefined && dated.expiresAtMs > Date.now() - 5_000);
    assert.equal((await withDefault.getVersioned(never))?.expiresAtMs, undefined);
    await sleep(1_200);
    assert.equal(await withDefault.get(byDefault), undefined, "expired by the store's default");
    assert.deepEqual(await withDefault.get(never), { items: ["never"] });
    assert.equal(await noDefault.get(short), undefined, "expired by its own TTL");
    assert.deepEqual(await noDefault.get(kept), { items: ["kept"] }, "no default: never expires");
    assert.equal(await withDefault.len(), 1, "len counts live handles only");
    assert.equal(await noDefault.put(short, { items: [] }), false, "an expired handle did not exist");
  });

  test("update keeps the handle's expiry", async () => {
    const carts = client().handleStore<Cart>("cart");
    const id = await carts.mint({ items: [] }, { ttl: 60_000 });
    const before = (await carts.getVersioned(id))?.expiresAtMs;
    await carts.update(id, (c) => ({ items: [...c.items, "x"] }));
    const after = await carts.getVersioned(id);
    assert.deepEqual(after?.value, { items: ["x"] });
    assert.equal(after?.expiresAtMs, before);
  });

  test("concurrent writes share calls of Writes.Submit, each with its own answer", async () => {
    const c = client({ maxWriteCalls: 1 });
    const store = c.handleStore<{ n: number }>("coalesced");
    const held = await store.mint({ n: -1 });
    const stale = ((await store.getVersioned(held))?.modRevision ?? 0) + 1;
    const before = c.writeStats;
    const results = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) =>
        i % 10 === 0 ? store.putWith(held, { n: i }, { expectedRevision: stale }) : store.mint({ n: i }),
      ),
    );
    const stats = c.writeStats;
    assert.deepEqual([before.writes, stats.writes], [1, 201]);
    assert.ok(stats.calls - 1 < 100, `200 concurrent writes took ${stats.calls - 1} calls`);
    for (const [i, r] of results.entries()) {
      if (i % 10 === 0) assert.ok(r.status === "rejected" && r.reason instanceof RevisionMismatchError);
      else {
        assert.equal(r.status, "fulfilled");
        if (r.status === "fulfilled") assert.deepEqual(await store.get(r.value as string), { n: i });
      }
    }
    assert.deepEqual(await store.get(held), { n: -1 });
    assert.equal(await store.len(), 181);
  });

  test("a lone writer's writes each go alone", async () => {
    const c = client();
    const store = c.handleStore<{ a: number }>("alone");
    const before = c.writeStats;
    const id = await store.mint({ a: 1 });
    await store.put(id, { a: 2 });
    await store.delete(id);
    const after = c.writeStats;
    assert.deepEqual([after.writes - before.writes, after.calls - before.calls], [3, 3]);
  });

  test("errors carry the node's reason and message", async () => {
    const c = client();
    const carts = c.handleStore<Cart>("cart");
    const id = newHandleId();
    await carts.mintWithId(id, { items: [] });
    await assert.rejects(carts.mintWithId(id, { items: [] }), (e: unknown) => {
      assert.ok(e instanceof AlreadyExistsError);
      assert.equal(e.reason, "already_exists");
      return true;
    });
    // Store names are checked by the node alone.
    await assert.rejects(c.handleStore<Cart>("no spaces").mint({ items: [] }), (e: unknown) => {
      assert.ok(e instanceof InvalidArgumentError);
      assert.equal(e.reason, "invalid_argument");
      assert.match(e.message, /no spaces/);
      return true;
    });
    const big = { items: ["x".repeat(2 << 20)] };
    await assert.rejects(carts.mint(big), (e: unknown) => {
      assert.ok(e instanceof ValueTooLargeError);
      assert.equal(e.reason, "value_too_large");
      return true;
    });
  });
});
