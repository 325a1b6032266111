/** Watch against a real cluster: changes in revision order, replay from a revision, resume on another node. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Change, Watch } from "../src/index.js";
import { ClosedError, InvalidArgumentError } from "../src/index.js";
import { skipReason, useCluster } from "./cluster.js";

async function nextChanges(w: Watch, want: number, timeoutMs = 10_000): Promise<Change[]> {
  const got: Change[] = [];
  const signal = AbortSignal.timeout(timeoutMs);
  while (got.length < want) {
    const batch = await Promise.race([
      w.nextBatch(),
      new Promise<never>((_, reject) =>
        signal.addEventListener("abort", () => reject(new Error(`only ${got.length} of ${want} changes`))),
      ),
    ]);
    got.push(...batch.changes);
  }
  return got;
}

describe("watch on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();
  let n = 0;
  const client = () => fx.client({ namespace: `ts-watch-${++n}` });

  test("a prefix watch sees puts, deletes and expiry in order", async () => {
    const c = client();
    const t = c.stateTool();
    const w = await c.watch({ prefix: "jobs/" });
    const r1 = await t.store("jobs/1", { state: "queued" });
    await t.store("other/1", "not watched");
    const r2 = await t.store("jobs/1", { state: "done" });
    const r3 = (await t.delete("jobs/1")).revision;
    await t.store("jobs/2", "short", { ttl: 500 });
    const got = await nextChanges(w, 5);
    w.close();
    assert.deepEqual(
      got.slice(0, 3).map((ch) => [ch.kind, ch.key, ch.revision]),
      [
        ["put", "jobs/1", r1],
        ["put", "jobs/1", r2],
        ["delete", "jobs/1", r3],
      ],
    );
    assert.deepEqual(got[1]?.value, { state: "done" });
    assert.deepEqual(
      got.slice(3).map((ch) => ch.kind),
      ["put", "expire"],
    );
  });

  test("a watch from a revision replays the history; the iterator yields batches", async () => {
    const c = client();
    const t = c.stateTool();
    const first = await t.store("h/a", 1);
    await t.store("h/b", 2);
    const w = await c.watch({ prefix: "h/" }, { startRevision: first });
    const keys: string[] = [];
    for await (const batch of w) {
      keys.push(...batch.changes.map((ch) => ch.key));
      if (keys.length >= 2) break;
    }
    assert.deepEqual(keys, ["h/a", "h/b"]);
  });

  test("a handle watch names the store", async () => {
    const c = client();
    const carts = c.handleStore<{ lines: string[] }>("cart", { prefix: "cart" });
    const w = await c.watch({ store: "cart" }, { keysOnly: true });
    const cart = await carts.mint({ lines: [] });
    const [got] = await nextChanges(w, 1);
    w.close();
    assert.deepEqual([got?.store, got?.key, got?.value], ["cart", cart, undefined]);
  });

  test("a watch needs exactly one target", async () => {
    const c = client();
    await assert.rejects(c.watch({} as never), InvalidArgumentError);
    await assert.rejects(c.watch({ prefix: "a", key: "b" } as never), InvalidArgumentError);
  });

  test("a watch closed elsewhere ends its loop quietly", async () => {
    const c = client();
    const w = await c.watch({ prefix: "closing/" }, { progress: true });
    setTimeout(() => w.close(), 100);
    const started = performance.now();
    for await (const batch of w) assert.equal(batch.changes.length, 0);
    assert.ok(performance.now() - started < 5_000, "the loop ended when the watch was closed");
    await assert.rejects(w.nextBatch(), ClosedError);
  });

  test("an aborted watch ends with the signal's reason", async () => {
    const c = client();
    const abort = new AbortController();
    const w = await c.watch({ prefix: "quiet/" }, { signal: abort.signal });
    const pending = w.nextBatch();
    abort.abort(new Error("done watching"));
    await assert.rejects(pending, /done watching/);
  });

  test("watches open on the followers in turn", async () => {
    const c = client();
    await c.stateTool().store("f/0", 0);
    const leader = c.preferred;
    const watches = await Promise.all(Array.from({ length: 4 }, () => c.watch({ prefix: "f/" })));
    const nodes = watches.map((w) => w.node).sort();
    assert.ok(!nodes.includes(leader), `${leader} in ${nodes}`);
    assert.equal(new Set(nodes).size, c.endpoints.length - 1);
    await c.stateTool().store("f/1", 1);
    for (const w of watches) {
      assert.deepEqual(
        (await nextChanges(w, 1)).map((ch) => ch.key),
        ["f/1"],
      );
      w.close();
    }
  });

  test("a watch resumes on another node after its node is killed, with no gap and no duplicate", async () => {
    const c = client();
    const t = c.stateTool();
    const w = await c.watch({ prefix: "n/" });
    const serving = w.node + 1;
    await t.store("n/0", 0);
    assert.equal((await nextChanges(w, 1)).length, 1);
    await fx.cluster.kill(serving);
    for (let i = 1; i < 20; i++) await t.store(`n/${i}`, i);
    const got = await nextChanges(w, 19, 30_000);
    w.close();
    assert.deepEqual(
      got.map((ch) => ch.value),
      Array.from({ length: 19 }, (_, i) => i + 1),
      "every change once, in order",
    );
    assert.notEqual(w.node + 1, serving, "served by another node now");
    const revisions = got.map((ch) => ch.revision);
    assert.deepEqual(
      revisions,
      [...revisions].sort((a, b) => a - b),
    );
    assert.equal(new Set(revisions).size, revisions.length);
  });
});
