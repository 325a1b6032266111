/**
 * ClusterNotificationBus: a publish on one replica is heard by every
 * replica's subscribers, nothing published after `subscribe()` resolved is
 * lost, a followed handle store's writes are updates with nothing
 * published, the keys are the Rust and Python buses', and, wired to SDK
 * servers with `forwardNotifications`, a client connected to one replica
 * gets `notifications/resources/updated` and list changes published on
 * another.
 */
import assert from "node:assert/strict";
import type { Server } from "node:http";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { Client, DeadlineExceededError, InvalidArgumentError, ValueTooLargeError } from "../src/index.js";
import { ClusterNotificationBus, digestName, forwardNotifications, type ServerEvent } from "../src/mcp/index.js";
import { skipReason, useCluster } from "./cluster.js";
import { listen } from "./fixtures/perRequest.js";

/** Collects a listener's events; `until` waits for `n` of them. */
function collector() {
  const events: ServerEvent[] = [];
  const listener = (e: ServerEvent) => {
    events.push(e);
  };
  const until = async (n: number, timeoutMs = 10_000) => {
    const end = Date.now() + timeoutMs;
    while (events.length < n) {
      if (Date.now() > end) throw new Error(`heard ${events.length} of ${n} events: ${JSON.stringify(events)}`);
      await sleep(20);
    }
    return events;
  };
  return { events, listener, until };
}

describe("the notification bus's bad input", () => {
  test("events that are not MCP server events are refused before any call", async () => {
    const dead = new Client({ endpoints: ["127.0.0.1:1"], deadline: 300 });
    const bus = new ClusterNotificationBus(dead);
    await assert.rejects(bus.publish({ kind: "nope" } as never), InvalidArgumentError);
    await assert.rejects(bus.publish({ kind: "resource_updated" } as never), InvalidArgumentError);
    await assert.rejects(bus.publish({ kind: "tools_list_changed" }), DeadlineExceededError);
    dead.close();
  });

  test("keys are the Rust and Python buses' (a URI's digest)", () => {
    // base32(SHA-256("cart://cart-ABC")[:16]), as Python's hashlib computes it.
    assert.equal(digestName("cart://cart-ABC"), "NYNYHAI3P53OFSBUAVTFMYR52E");
  });
});

describe("ClusterNotificationBus on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();
  let n = 0;
  // Each bus is tracked after its client, so it is closed first.
  const replicas = (count: number, follow?: { store: string; uriPrefix: string }) => {
    const ns = `ts-bus-${++n}`;
    return Array.from({ length: count }, () => {
      const c = fx.client({ namespace: ns });
      const bus = fx.track(new ClusterNotificationBus(c, { followStore: follow }));
      return { client: c, bus };
    });
  };

  test("a publish on one replica reaches every replica's subscribers", async () => {
    const [a, b, c] = replicas(3);
    const heard = [collector(), collector(), collector()];
    await a?.bus.subscribe(heard[0]?.listener as never);
    await b?.bus.subscribe(heard[1]?.listener as never);
    await c?.bus.subscribe(heard[2]?.listener as never);
    await a?.bus.publish({ kind: "resource_updated", uri: "cart://1" });
    await b?.bus.publish({ kind: "tools_list_changed" });
    for (const h of heard) {
      const got = await h.until(2);
      assert.deepEqual(
        new Set(got.map((e) => JSON.stringify(e))),
        new Set([
          JSON.stringify({ kind: "resource_updated", uri: "cart://1" }),
          JSON.stringify({ kind: "tools_list_changed" }),
        ]),
      );
    }
    const raw = await a?.client.stateTool().get(`mcp/resources/${digestName("cart://1")}`);
    assert.deepEqual(raw, { uri: "cart://1" });
    assert.deepEqual(await a?.client.stateTool().get("mcp/lists/tools"), { changed: "tools" });
  });

  test("nothing published after subscribe() resolves is lost, from any replica", async () => {
    const [a, b] = replicas(2);
    const heard = collector();
    await b?.bus.subscribe(heard.listener);
    // At once, from both replicas, including the subscriber's own.
    const uris = Array.from({ length: 40 }, (_, i) => `res://${i}`);
    await Promise.all(uris.map((uri, i) => (i % 2 ? a : b)?.bus.publish({ kind: "resource_updated", uri })));
    const got = await heard.until(40);
    assert.deepEqual(got.map((e) => (e.kind === "resource_updated" ? e.uri : e.kind)).sort(), [...uris].sort());
    await sleep(300);
    assert.equal(heard.events.length, 40, "each event once");
  });

  test("a followed handle store's writes are heard as updates, with nothing published", async () => {
    const [a, b] = replicas(2, { store: "cart", uriPrefix: "cart://" });
    const heard = collector();
    await b?.bus.subscribe(heard.listener);
    const carts = a?.client.handleStore<{ lines: string[] }>("cart", { prefix: "cart" });
    const id = (await carts?.mint({ lines: [] })) as string;
    await carts?.update(id, (c) => {
      c.lines.push("sku-1");
    });
    const got = await heard.until(2);
    assert.deepEqual(got.slice(0, 2), [
      { kind: "resource_updated", uri: `cart://${id}` },
      { kind: "resource_updated", uri: `cart://${id}` },
    ]);
  });

  test("an unsubscribed or throwing listener does not disturb the others; the node's refusals surface", async () => {
    const [a] = replicas(1);
    const kept = collector();
    const dropped = collector();
    const errors: unknown[] = [];
    const bus = fx.track(new ClusterNotificationBus(a?.client as Client, { onError: (e) => errors.push(e) }));
    await bus.subscribe(() => {
      throw new Error("bad listener");
    });
    const stop = await bus.subscribe(dropped.listener);
    await bus.subscribe(kept.listener);
    stop();
    await bus.publish({ kind: "prompts_list_changed" });
    await kept.until(1);
    assert.equal(dropped.events.length, 0);
    assert.match(String(errors[0]), /bad listener/);
    const huge = { kind: "resource_updated", uri: `x://${"u".repeat(1_100_000)}` } as const;
    await assert.rejects(
      bus.publish(huge),
      (e: unknown) => e instanceof ValueTooLargeError && e.reason === "value_too_large",
    );
  });

  test("SDK servers: a client on one replica hears what another publishes", async () => {
    const [a, b] = replicas(2);
    let streams = 0;
    const make = (bus: ClusterNotificationBus) => async (req: { method?: string }) => {
      const server = new McpServer(
        { name: "bus-replica", version: "0.1.0" },
        { capabilities: { resources: { subscribe: true, listChanged: true }, tools: { listChanged: true } } },
      );
      if (req.method === "GET") {
        await forwardNotifications(bus, server);
        streams++;
      }
      return server;
    };
    const http: Server[] = [listen(make(a?.bus as never), {}, true), listen(make(b?.bus as never), {}, true)];
    await Promise.all(
      http.map((h) => new Promise((resolve) => (h.listening ? resolve(0) : h.once("listening", resolve)))),
    );
    const port = (h: Server) => (h.address() as { port: number }).port;
    const mcp = new McpClient({ name: "bus-test", version: "0.1.0" });
    try {
      const heard: string[] = [];
      mcp.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
        heard.push(note.params.uri);
      });
      mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        heard.push("tools");
      });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port(http[1] as Server)}/mcp`)));
      // The client opens its GET stream on replica B after initializing.
      for (let i = 0; streams === 0; i++) {
        assert.ok(i < 200, "no GET stream opened");
        await sleep(25);
      }
      await a?.bus.publish({ kind: "resource_updated", uri: "cart://7" });
      await a?.bus.publish({ kind: "tools_list_changed" });
      for (let i = 0; heard.length < 2; i++) {
        assert.ok(i < 400, `heard ${JSON.stringify(heard)}`);
        await sleep(25);
      }
      assert.deepEqual(heard, ["cart://7", "tools"]);
    } finally {
      await mcp.close();
      for (const h of http) {
        h.closeAllConnections();
        h.close();
      }
    }
  });
});
