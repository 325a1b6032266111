/** StateTool, the key ring, RequestStateCodec (with single use) and ClientStateStore against a real cluster. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  AlreadyExistsError,
  Client,
  ClientStateStore,
  Consistency,
  InvalidArgumentError,
  PreconditionError,
  REDEEMED_STORE,
  RequestStateCodec,
  RevisionMismatchError,
  redeemedId,
  SingleUse,
} from "../src/index.js";
import { skipReason, useCluster } from "./cluster.js";

describe("state tool on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();
  let n = 0;
  const client = () => fx.client({ namespace: `ts-state-${++n}` });

  test("store, retrieve, exists and delete; JSON and bytes come back as they went", async () => {
    const t = client().stateTool();
    const r1 = await t.store("checkpoints/agent-7/latest", { step: 3, ok: true });
    await t.store("blobs/one", Buffer.from([0, 1, 2, 255]));
    const entry = await t.retrieve("checkpoints/agent-7/latest");
    assert.deepEqual(entry?.value, { step: 3, ok: true });
    assert.equal(entry?.modRevision, r1);
    assert.deepEqual(await t.get("blobs/one"), Buffer.from([0, 1, 2, 255]));
    assert.equal(await t.exists("blobs/one"), true);
    assert.equal(await t.exists("blobs/two"), false);
    assert.equal(await t.retrieve("blobs/two"), undefined);
    const deleted = await t.delete("blobs/one");
    assert.deepEqual([deleted.count, deleted.more], [1, false]);
    assert.ok(deleted.revision > r1);
    assert.equal((await t.delete("blobs/one")).count, 0);
  });

  test("a compare-and-set store: 0 creates only, a stale revision conflicts", async () => {
    const t = client().stateTool();
    const r = await t.store("k", 1, { expectedRevision: 0 });
    await assert.rejects(t.store("k", 2, { expectedRevision: 0 }), RevisionMismatchError);
    await assert.rejects(t.store("k", 2, { expectedRevision: r + 100 }), (e: unknown) => {
      assert.ok(e instanceof RevisionMismatchError);
      assert.equal(e.currentRevision, r);
      return true;
    });
    await t.store("k", 3, { expectedRevision: r });
    assert.equal(await t.get("k"), 3);
  });

  test("paged lists in key order, and a scan of every page", async () => {
    const t = client().stateTool();
    const keys = Array.from({ length: 25 }, (_, i) => `list/${String(i).padStart(3, "0")}`);
    await t.batchStore(keys.map((key, i) => ({ key, value: i })));
    await t.store("other/x", "not listed");
    const page = await t.list("list/", { limit: 10 });
    assert.deepEqual(
      page.entries.map((e) => e.key),
      keys.slice(0, 10),
    );
    assert.equal(page.entries[0]?.value, undefined, "values only when asked for");
    assert.ok(page.nextPageToken);
    const second = await t.list("list/", { limit: 10, pageToken: page.nextPageToken, withValues: true });
    assert.deepEqual(
      second.entries.map((e) => e.value),
      Array.from({ length: 10 }, (_, i) => i + 10),
    );
    const all: string[] = [];
    for await (const e of t.scan("list/", { limit: 7 })) all.push(e.key);
    assert.deepEqual(all, keys);
  });

  test("delete by prefix removes at most the limit, and says when more remain", async () => {
    const t = client().stateTool();
    await t.batchStore(Array.from({ length: 12 }, (_, i) => ({ key: `tmp/${i}`, value: i })));
    await t.store("tmpx", "kept: not under tmp/");
    const first = await t.deletePrefix("tmp/", { limit: 5 });
    assert.deepEqual([first.count, first.more], [5, true]);
    const rest = await t.deletePrefix("tmp/");
    assert.deepEqual([rest.count, rest.more], [7, false]);
    assert.equal(await t.get("tmpx"), "kept: not under tmp/");
  });

  test("batchStore is all or nothing; batchRetrieve is one view in the order asked", async () => {
    const t = client().stateTool();
    const r = await t.store("b/a", 1);
    await assert.rejects(
      t.batchStore([
        { key: "b/new", value: "x" },
        { key: "b/a", value: 2, expectedRevision: r + 50 },
      ]),
      RevisionMismatchError,
    );
    assert.equal(await t.exists("b/new"), false, "nothing of a failed batch was written");
    const rev = await t.batchStore([
      { key: "b/new", value: "x" },
      { key: "b/a", value: 2, expectedRevision: r },
    ]);
    const got = await t.batchRetrieve(["b/a", "b/missing", "b/new"], { consistency: Consistency.atLeast(rev) });
    assert.deepEqual(
      got.map((e) => e?.value),
      [2, undefined, "x"],
    );
    assert.ok(got.every((e) => e === undefined || e.modRevision === rev));
  });

  test("TTLs on state keys", async () => {
    const t = client().stateTool({ defaultTtl: 300 });
    await t.store("ttl/default", 1);
    await t.store("ttl/never", 2, { ttl: -1 });
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(await t.exists("ttl/default"), false);
    assert.equal(await t.get("ttl/never"), 2);
  });

  test("the key ring seals request state any replica opens, across a rotation, until retired", async () => {
    const c = client();
    const first = await c.keyringRotate({ create: true });
    await assert.rejects(c.keyringRotate({ create: true }), AlreadyExistsError);
    const sealer = await RequestStateCodec.fromCluster(c, "signed");
    const opener = await RequestStateCodec.fromCluster(c.withNamespace(c.namespace), "signed", { refreshEvery: 0 });
    const blob = await sealer.encode({ cart: "cart-1" }, "user-1", { tool: "checkout" });
    assert.deepEqual(await opener.decode(blob, "user-1", { tool: "checkout" }), { cart: "cart-1" });
    const second = await c.keyringRotate();
    const ring = await c.keyring();
    assert.deepEqual(
      ring.map((k) => [k.id, k.primary]),
      [
        [first, false],
        [second, true],
      ],
    );
    assert.ok(
      ring.every((k) => k.secret.length === 0),
      "no secrets unless asked for",
    );
    assert.deepEqual(await opener.decode(blob, "user-1", { tool: "checkout" }), { cart: "cart-1" });
    await assert.rejects(c.keyringRetire(second), PreconditionError);
    await c.keyringRetire(first);
    assert.equal(await opener.decode(blob, "user-1", { tool: "checkout" }), undefined);
  });

  test("single use: a blob opens once in the whole cluster, whichever replica tries", async () => {
    const c = client();
    await c.keyringRotate({ create: true });
    const replicas = await Promise.all(
      fx.cluster.endpoints.map(async (first) => {
        const endpoints = [first, ...fx.cluster.endpoints.filter((e) => e !== first)];
        const r = fx.client({ endpoints, namespace: c.namespace });
        return (await RequestStateCodec.fromCluster(r, "encrypted")).withSingleUse(new SingleUse(r));
      }),
    );
    const blob = await (replicas[0] as RequestStateCodec).encode({ step: 2 }, "user-1", { tool: "checkout", ttl: 60 });
    // Every replica at once: one opens it.
    const opened = await Promise.all(replicas.map((r) => r.decode(blob, "user-1", { tool: "checkout" })));
    assert.deepEqual(
      opened.filter((o) => o !== undefined),
      [{ step: 2 }],
    );
    for (const r of replicas) assert.equal(await r.decode(blob, "user-1", { tool: "checkout" }), undefined);
    // A blob that does not open is not redeemed: its rightful opening still works.
    const other = await (replicas[1] as RequestStateCodec).encode({ step: 3 }, "user-1", { ttl: 60 });
    assert.equal(await (replicas[2] as RequestStateCodec).decode(other, "user-2"), undefined);
    assert.deepEqual(await (replicas[2] as RequestStateCodec).decode(other, "user-1"), { step: 3 });
    // The record is a handle, kept about as long as the blob lives.
    const record = await c.handleStore<boolean>(REDEEMED_STORE).getVersioned(redeemedId(blob));
    assert.equal(record?.value, true);
    const left = (record?.expiresAtMs ?? 0) - Date.now();
    assert.ok(left > 50_000 && left <= 62_000, `${left} ms`);
  });

  test("single use fails closed: a redemption that cannot be recorded does not open", async () => {
    const c = client();
    await c.keyringRotate({ create: true });
    const codec = await RequestStateCodec.fromCluster(c, "signed");
    const blob = await codec.encode({ step: 1 }, "user-1");
    const dead = new Client({ endpoints: ["127.0.0.1:1"], namespace: c.namespace, deadline: 300 });
    codec.withSingleUse(new SingleUse(dead));
    assert.equal(await codec.decode(blob, "user-1"), undefined);
    dead.close();
    codec.withSingleUse(new SingleUse(c));
    assert.deepEqual(await codec.decode(blob, "user-1"), { step: 1 });
  });

  test("the client state store keeps the token encrypted, and forgets on clear", async () => {
    const c = client();
    await c.keyringRotate({ create: true });
    await assert.rejects(ClientStateStore.fromCluster(c, "has/slash"), InvalidArgumentError);
    const key = "mcp.example.com|user-1";
    const store = await ClientStateStore.fromCluster(c, key);
    await store.setSessionId("session-1");
    await store.setAccessToken("secret-token");
    await store.setProtocolVersion("2025-06-18");
    await store.setServerCapabilities({ tools: { listChanged: true } });
    // Another replica (its own connections) reads what this one stored.
    const replica = fx.client({ namespace: c.namespace });
    const again = await ClientStateStore.fromCluster(replica, key);
    assert.equal(await again.sessionId(), "session-1");
    assert.equal(await again.accessToken(), "secret-token");
    assert.equal(await again.protocolVersion(), "2025-06-18");
    assert.deepEqual(await again.serverCapabilities(), { tools: { listChanged: true } });
    const sealed = await c.stateTool().get(`mcp-clients/${key}/access-token`);
    assert.ok(typeof sealed === "string" && sealed.startsWith("v1e.") && !sealed.includes("secret-token"));
    assert.equal(await (await ClientStateStore.fromCluster(replica, "someone-else")).accessToken(), undefined);
    await store.clear();
    assert.equal(await again.sessionId(), undefined);
    assert.equal(await again.accessToken(), undefined);
  });
});
