/**
 * ClusterEventStore: the SDK's EventStore contract (against the SDK's own
 * in-memory store too), ids and limits, and a stream cut on one replica and
 * resumed with Last-Event-ID on another (two SDK servers in their own
 * processes, the SDK's client and HTTP), which replays exactly the missed
 * events, in order.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import {
  Client,
  DeadlineExceededError,
  InvalidArgumentError,
  NotFoundError,
  ValueTooLargeError,
} from "../src/index.js";
import { ClusterEventStore, parseEventId } from "../src/mcp/index.js";
import { skipReason, useCluster } from "./cluster.js";
import { eventStoreCases } from "./eventStoreCases.js";
import { Front, ServerProcess } from "./mcpHttp.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/eventServer.ts", import.meta.url));
const note = (method: string): JSONRPCMessage => ({ jsonrpc: "2.0", method, params: {} });

describe("event ids", () => {
  test("minted ids parse back; anything else is refused", () => {
    const token = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    assert.deepEqual(parseEventId(`${token}.42`), { token, seq: 42 });
    assert.deepEqual(parseEventId(`${token}.0`), { token, seq: 0 });
    const bad = ["", "x", "ABC.1", `${token}.`, `${token}.-1`, `${token}.+1`, `${token}.01`, `${token}.1e3`];
    bad.push(`${token.toLowerCase()}.1`, `${token}.99999999999999999`, `${token}.1.2`, ` ${token}.1`, `${token}.1\n`);
    for (const id of bad) assert.equal(parseEventId(id), undefined, id);
    assert.equal(parseEventId(7), undefined);
  });

  test("a malformed Last-Event-ID is refused before any call", async () => {
    // Nothing listens there: a call would end in a deadline error.
    const dead = new Client({ endpoints: ["127.0.0.1:1"], deadline: 300 });
    const store = new ClusterEventStore(dead);
    assert.equal(await store.getStreamIdForEventId("garbage"), undefined);
    await assert.rejects(store.replayEventsAfter("../etc", { send: async () => {} }), InvalidArgumentError);
    await assert.rejects(store.getStreamIdForEventId("ABCDEFGHIJKLMNOPQRSTUVWXYZ.1"), DeadlineExceededError);
    dead.close();
  });
});

describe("the SDK's in-memory EventStore", () => {
  // The example store 1.32.2 ships splits its ids on "_" (so "_GET_stream"
  // maps to stream "") and orders events by a random suffix within a
  // millisecond: it fails those two cases of the SDK's own later test of it.
  eventStoreCases("InMemoryEventStore", () => new InMemoryEventStore(), {
    order: "the 1.32.2 example InMemoryEventStore maps _GET_stream to the stream ''",
    streams: "the 1.32.2 example InMemoryEventStore reorders events stored within one millisecond",
  });
});

describe("ClusterEventStore on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();
  let n = 0;
  const client = (namespace = `ts-events-${++n}`) => fx.client({ namespace });
  // Closed before the cluster stops: it ends the follows its replays started.
  const events = (c = client()) => fx.track(new ClusterEventStore(c));

  eventStoreCases("ClusterEventStore", () => events());

  test("the priming event is never replayed; a replay spans buckets and pages", async () => {
    const store = events();
    const priming = await store.storeEvent("s", {} as JSONRPCMessage);
    const ids = [];
    for (let i = 1; i <= 230; i++) ids.push(await store.storeEvent("s", note(`n/${i}`)));
    const got: string[] = [];
    const streamId = await store.replayEventsAfter(priming, {
      send: async (id, m) => {
        got.push(`${id} ${(m as { method: string }).method}`);
      },
    });
    assert.equal(streamId, "s");
    assert.deepEqual(
      got,
      ids.map((id, i) => `${id} n/${i + 1}`),
    );
  });

  test("replicas appending to one stream at once: distinct ids, one order, nothing lost", async () => {
    const ns = `ts-events-${++n}`;
    const [a, b] = [events(client(ns)), events(client(ns))];
    const writes = [];
    for (let i = 0; i < 20; i++) writes.push((i % 2 ? a : b).storeEvent("shared", note(`w/${i}`)));
    const ids = await Promise.all(writes);
    assert.equal(new Set(ids).size, 20);
    const seqs = ids.map((id) => parseEventId(id)?.seq ?? -1).sort((x, y) => x - y);
    assert.deepEqual(
      seqs,
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    const first = ids.find((id) => parseEventId(id)?.seq === 1) as string;
    const seen: string[] = [];
    await a.replayEventsAfter(first, {
      send: async (id) => {
        seen.push(id);
      },
    });
    assert.deepEqual(
      seen.map((id) => parseEventId(id)?.seq),
      seqs.slice(1),
    );
  });

  test("scoped views keep same-named streams apart; a replay finds either by its id", async () => {
    const store = events();
    const [s1, s2] = [store.scoped("session-1"), store.scoped("session-2")];
    const a = await s1.storeEvent("_GET_stream", note("one/1"));
    const b = await s2.storeEvent("_GET_stream", note("two/1"));
    await s1.storeEvent("_GET_stream", note("one/2"));
    assert.notEqual(parseEventId(a)?.token, parseEventId(b)?.token);
    const seen: string[] = [];
    await store.replayEventsAfter(a, {
      send: async (_id, m) => {
        seen.push((m as { method: string }).method);
      },
    });
    assert.deepEqual(seen, ["one/2"]);
  });

  test("an unknown stream and the node's own refusals surface with their reason", async () => {
    const store = events();
    await assert.rejects(
      store.replayEventsAfter("ABCDEFGHIJKLMNOPQRSTUVWXYZ.3", { send: async () => {} }),
      NotFoundError,
    );
    const big = { jsonrpc: "2.0", method: "big", params: { blob: "x".repeat(1_100_000) } } as JSONRPCMessage;
    await assert.rejects(store.storeEvent("s", big), (e: unknown) => {
      assert.ok(e instanceof ValueTooLargeError);
      assert.equal(e.reason, "value_too_large");
      assert.match(e.message, /limit is 1048576 bytes/);
      return true;
    });
  });

  test("a stream cut on one replica resumes on another with exactly the missed events", async () => {
    const ns = `ts-events-${++n}`;
    const args = [fx.cluster.endpoints.join(","), ns];
    const [a, b] = [await ServerProcess.start(FIXTURE, args), await ServerProcess.start(FIXTURE, args)];
    const front = await new Front(a.port).start();
    const mcp = new McpClient({ name: "resume-test", version: "0.1.0" });
    try {
      await mcp.connect(new StreamableHTTPClientTransport(new URL(front.url)));
      const progress: number[] = [];
      let cutDone: () => void = () => {};
      const cutAt3 = new Promise<void>((resolve) => {
        cutDone = resolve;
      });
      const call = mcp.callTool({ name: "emit", arguments: { count: 8, pauseAfter: 3, pauseMs: 1_500 } }, undefined, {
        onprogress: (p) => {
          progress.push(p.progress);
          if (p.progress === 3) {
            // The load balancer loses replica A: hold new connections, cut the live ones.
            front.pause();
            front.cut();
            cutDone();
          }
        },
        timeout: 60_000,
      });
      await cutAt3;
      // Replica A goes on storing its events and its result; then the client's reconnection reaches B.
      const stored = await a.waitLine(/^result /, 30_000);
      front.target = b.port;
      front.resume();
      const result = await call;
      assert.deepEqual(result.content, [{ type: "text", text: "emitted 8" }]);
      assert.deepEqual(progress, [1, 2, 3, 4, 5, 6, 7, 8]);
      // B replayed progress 4 to 8 and the result, after the event that carried progress 3.
      const replayed = await b.waitLine(/^replayed /);
      const [, count, last] = /^replayed (\d+) after (\S+)$/.exec(replayed) ?? [];
      assert.equal(count, "6");
      assert.equal(parseEventId(last)?.token, parseEventId(stored.split(" ")[1])?.token);
      assert.equal(a.lines.filter((l) => l.startsWith("replayed")).length, 0, "A served no replay");
    } finally {
      await mcp.close();
      await front.stop();
      await a.stop();
      await b.stop();
    }
  });

  test("a replica refuses a Last-Event-ID this store never minted", async () => {
    const s = await ServerProcess.start(FIXTURE, [fx.cluster.endpoints.join(","), `ts-events-${++n}`]);
    try {
      const headers = { accept: "text/event-stream", "mcp-protocol-version": "2025-11-25" };
      for (const id of ["garbage", "ABCDEFGHIJKLMNOPQRSTUVWXYZ.7"]) {
        const resp = await fetch(s.url, { headers: { ...headers, "last-event-id": id } });
        assert.equal(resp.status, 400, id);
        assert.match(await resp.text(), /Invalid event ID format/);
      }
    } finally {
      await s.stop();
    }
  });
});
