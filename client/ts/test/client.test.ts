/** The client's retry loop alone, against nodes that are not there: bounded by the deadline, ended by an AbortSignal. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, DeadlineError, InvalidArgumentError } from "../src/index.js";

const nowhere = ["127.0.0.1:1", "127.0.0.1:2"];

test("a call no node answers fails after its deadline, saying the last error", async () => {
  const client = new Client({ endpoints: nowhere, deadline: 400, attemptTimeout: 100 });
  const started = performance.now();
  await assert.rejects(client.stateTool().get("k"), (e: unknown) => {
    assert.ok(e instanceof DeadlineError);
    assert.equal(e.deadline, 400);
    assert.match(e.last, /127\.0\.0\.1:[12]/);
    return true;
  });
  // It gives up once the next backoff would pass the deadline, never long after it.
  const took = performance.now() - started;
  assert.ok(took < 2_000, `${took} ms`);
  client.close();
});

test("a call's own deadline overrides the client's", async () => {
  const client = new Client({ endpoints: nowhere, deadline: 60_000 });
  const started = performance.now();
  await assert.rejects(client.stateTool().store("k", 1, { deadline: 200 }), DeadlineError);
  assert.ok(performance.now() - started < 2_000);
  client.close();
});

test("an aborted call rejects with the signal's reason, at once", async () => {
  const client = new Client({ endpoints: nowhere, deadline: 60_000 });
  const store = client.handleStore<number>("n");
  const why = new Error("the caller left");
  const abort = new AbortController();
  const pending = store.mint(1, { signal: abort.signal });
  setTimeout(() => abort.abort(why), 100);
  const started = performance.now();
  await assert.rejects(pending, (e: unknown) => e === why);
  assert.ok(performance.now() - started < 1_000);
  await assert.rejects(store.len({ signal: AbortSignal.abort(why) }), (e: unknown) => e === why);
  await assert.rejects(
    store.get("AAAAAAAAAAAAAAAAAAAAAAAAAA", { signal: AbortSignal.timeout(50) }),
    (e: unknown) => e instanceof DOMException && e.name === "TimeoutError",
  );
  client.close();
});

test("options are checked when the client is made", () => {
  assert.throws(() => new Client({ endpoints: nowhere, deadline: 0 }), InvalidArgumentError);
  assert.throws(() => new Client({ endpoints: nowhere, token: "a\nb" }), InvalidArgumentError);
  assert.throws(() => new Client({ endpoints: ["ftp://127.0.0.1:1"] }), InvalidArgumentError);
  assert.throws(() => new Client({ endpoints: nowhere, tls: { ca: "x", cert: "y" } }), InvalidArgumentError);
  const client = new Client({ endpoints: "http://127.0.0.1:7401/, 127.0.0.1:7402" });
  assert.deepEqual(client.endpoints, ["127.0.0.1:7401", "127.0.0.1:7402"]);
  assert.ok(client.clientId > 0n && client.clientId < 1n << 64n);
  assert.notEqual(client.withNamespace("other").clientId, client.clientId, "another namespace has its own write ids");
  assert.equal(client.withDeadline(1_000).clientId, client.clientId);
  client.close();
});
