/**
 * The v2 SDK's seams (@modelcontextprotocol/server): ClusterServerEventBus
 * carries what one replica's `createMcpHandler` notifier publishes to every
 * replica's listeners; KeyRingRequestStateCodec mints on one replica and
 * verifies on another, in the SDK's own format, across a key rotation, and
 * stops verifying a retired key's state.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createMcpHandler, createRequestStateCodec, McpServer, type ServerContext } from "@modelcontextprotocol/server";
import { ClusterServerEventBus, KeyRingRequestStateCodec, requestStateKey } from "../src/mcp/v2/index.js";
import { skipReason, useCluster } from "./cluster.js";

type Ctx = ServerContext & { principal: string };
const as = (principal: string) => ({ principal }) as Ctx;
const bind = (ctx: ServerContext) => (ctx as Ctx).principal;

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as Error).message;
  }
  return "verified";
}

describe("v2 SDK seams on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();
  const replica = (namespace: string) => fx.client({ namespace });

  test("ServerEventBus: one replica's handler notifies, every replica's listeners hear it", async () => {
    const [a, b] = [
      await ClusterServerEventBus.start(replica("ts-v2-bus")),
      await ClusterServerEventBus.start(replica("ts-v2-bus")),
    ];
    try {
      const heard: unknown[] = [];
      const stop = b.subscribe((e) => heard.push(e));
      const handler = createMcpHandler(() => new McpServer({ name: "v2", version: "0.1.0" }), { bus: a });
      handler.notify.resourceUpdated("cart://1");
      handler.notify.toolsChanged();
      for (let i = 0; heard.length < 2; i++) {
        assert.ok(i < 400, JSON.stringify(heard));
        await sleep(25);
      }
      assert.deepEqual(
        new Set(heard.map((e) => JSON.stringify(e))),
        new Set([
          JSON.stringify({ kind: "resource_updated", uri: "cart://1" }),
          JSON.stringify({ kind: "tools_list_changed" }),
        ]),
      );
      stop();
      await a.publishCommitted({ kind: "prompts_list_changed" });
      await sleep(300);
      assert.equal(heard.length, 2, "an unsubscribed listener hears nothing more");
      await handler.close?.();
    } finally {
      a.close();
      b.close();
    }
  });

  test("RequestStateCodec: minted on one replica, verified on another, bound and tamper-proof", async () => {
    const admin = replica("ts-v2-codec");
    await admin.keyringRotate({ create: true });
    const [a, b] = [
      await KeyRingRequestStateCodec.fromCluster<{ step: number }>(replica("ts-v2-codec"), {
        bind,
        refreshEvery: 60_000,
      }),
      await KeyRingRequestStateCodec.fromCluster<{ step: number }>(replica("ts-v2-codec"), {
        bind,
        refreshEvery: 60_000,
      }),
    ];
    const token = await a.mint({ step: 2 }, as("alice"));
    assert.deepEqual(await b.verify(token, as("alice")), { step: 2 });
    assert.equal(await reason(b.verify(token, as("mallory"))), "bind");
    assert.equal(await reason(b.verify(`${token.slice(0, -2)}AA`, as("alice"))), "mac");
    assert.equal(await reason(b.verify("not a token", as("alice"))), "malformed");
    // The SDK's own codec, with the primary's derived key, opens it: the wire format is the SDK's.
    const [primary] = (await admin.keyring({ includeSecrets: true })).filter((k) => k.primary);
    const sdk = createRequestStateCodec<{ step: number }>({ key: requestStateKey(primary as never), bind });
    assert.deepEqual(await sdk.verify(token, as("alice")), { step: 2 });
  });

  test("RequestStateCodec: a rotation keeps state in flight; a retired key's state stops verifying", async () => {
    const admin = replica("ts-v2-rotate");
    const first = await admin.keyringRotate({ create: true });
    const a = await KeyRingRequestStateCodec.fromCluster(replica("ts-v2-rotate"), { refreshEvery: 60_000 });
    const b = await KeyRingRequestStateCodec.fromCluster(replica("ts-v2-rotate"), { refreshEvery: 60_000 });
    const old = await a.mint({ n: 1 });
    await admin.keyringRotate();
    await a.refresh();
    const fresh = await a.mint({ n: 2 });
    // b has not re-read the ring: it finds the new key when nothing it has verifies (at most once a second).
    await sleep(1_100);
    assert.deepEqual(await b.verify(fresh, as("x")), { n: 2 });
    assert.deepEqual(await b.verify(old, as("x")), { n: 1 });
    await admin.keyringRetire(first);
    await b.refresh();
    assert.equal(await reason(b.verify(old, as("x"))), "mac");
    assert.deepEqual(await b.verify(fresh, as("x")), { n: 2 });
  });
});
