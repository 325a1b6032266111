/** The coalescer alone: a lone request goes at once, alone; concurrent ones share calls, each with its own answer. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Coalescer } from "../src/coalesce.js";
import { DeadlineExceededError } from "../src/index.js";

function echo(calls: number[][], delay = 5) {
  return async (items: number[]) => {
    calls.push(items);
    await sleep(delay);
    return items.map((i) => (i % 10 === 0 ? new Error(`no ${i}`) : i * 2));
  };
}

test("a lone request is sent at once, alone", async () => {
  const calls: number[][] = [];
  const c = new Coalescer(echo(calls), "test", { maxCalls: 2, maxItems: 100, maxBytes: 1000 });
  assert.equal(await c.run(3, 1, { deadline: 1000 }), 6);
  assert.equal(await c.run(4, 1, { deadline: 1000 }), 8);
  assert.deepEqual(calls, [[3], [4]]);
});

test("concurrent requests share calls, each with its own answer or error", async () => {
  const calls: number[][] = [];
  const c = new Coalescer(echo(calls), "test", { maxCalls: 1, maxItems: 50, maxBytes: 1000 });
  const results = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => c.run(i, 1, { deadline: 5000 })));
  results.forEach((r, i) => {
    if (i % 10 === 0) assert.equal(r.status, "rejected");
    else assert.deepEqual(r, { status: "fulfilled", value: i * 2 });
  });
  assert.ok(calls.length <= 6, `${calls.length} calls`);
  assert.ok(calls.every((batch) => batch.length <= 50));
  assert.deepEqual(
    calls.flat().sort((a, b) => a - b),
    Array.from({ length: 200 }, (_, i) => i),
  );
  assert.deepEqual(c.stats, { sent: 200, calls: calls.length });
});

test("the bytes bound splits calls, and a large request goes alone", async () => {
  const calls: number[][] = [];
  const c = new Coalescer(echo(calls), "test", { maxCalls: 1, maxItems: 100, maxBytes: 10 });
  await Promise.all([
    c.run(1, 1, { deadline: 1000 }),
    ...[2, 3, 4, 5].map((i) => c.run(i, i === 3 ? 50 : 4, { deadline: 1000 })),
  ]);
  assert.deepEqual(calls, [[1], [2], [3], [4, 5]]);
});

test("a request whose caller gives up while it waits is never sent", async () => {
  const calls: number[][] = [];
  const dropped: number[] = [];
  const c = new Coalescer(echo(calls, 50), "test", { maxCalls: 1, maxItems: 100, maxBytes: 1000 }, (i) =>
    dropped.push(i),
  );
  const first = c.run(1, 1, { deadline: 1000 });
  const abort = new AbortController();
  const gaveUp = c.run(2, 1, { deadline: 1000, signal: abort.signal });
  const timedOut = c.run(3, 1, { deadline: 10 });
  abort.abort("not any more");
  await assert.rejects(gaveUp, (e: unknown) => e === "not any more");
  await assert.rejects(timedOut, DeadlineExceededError);
  assert.equal(await first, 2);
  await sleep(60);
  assert.deepEqual(calls, [[1]]);
  assert.deepEqual(dropped.sort(), [2, 3]);
});
