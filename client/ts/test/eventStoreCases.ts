/**
 * What an MCP SDK `EventStore` must do, as cases run against the SDK's own
 * in-memory store (examples/shared/inMemoryEventStore, which the package
 * ships) and against ClusterEventStore: the case of the SDK's test of its
 * in-memory store (typescript-sdk examples/shared/test/inMemoryEventStore.test.ts,
 * "resumes the standalone GET stream in event insertion order"), written
 * anew, and the rest of the contract the transport relies on.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { EventStore } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

type Replayed = { eventId: string; message: JSONRPCMessage }[];

function note(method: string): JSONRPCMessage {
  return { jsonrpc: "2.0", method, params: {} };
}

async function replay(store: EventStore, after: string): Promise<{ streamId: string; events: Replayed }> {
  const events: Replayed = [];
  const streamId = await store.replayEventsAfter(after, {
    send: async (eventId, message) => {
      events.push({ eventId, message });
    },
  });
  return { streamId, events };
}

/** Registers the cases; `known` names the cases a store is known to fail ("order", "streams"), with why: they are skipped, saying so. */
export function eventStoreCases(name: string, make: () => EventStore, known: Record<string, string> = {}): void {
  test(`${name}: resumes the standalone GET stream in event insertion order`, { skip: known.order }, async () => {
    const store = make();
    const ids: string[] = [];
    for (const m of ["test/event1", "test/event2", "test/event3"])
      ids.push(await store.storeEvent("_GET_stream", note(m)));
    const got = await replay(store, ids[0] as string);
    assert.equal(got.streamId, "_GET_stream");
    assert.deepEqual(got.events, [
      { eventId: ids[1], message: note("test/event2") },
      { eventId: ids[2], message: note("test/event3") },
    ]);
  });

  test(`${name}: replays only its own stream, nothing after the last event`, { skip: known.streams }, async () => {
    const store = make();
    const a1 = await store.storeEvent("stream-a", note("a/1"));
    await store.storeEvent("stream-b", note("b/1"));
    const a2 = await store.storeEvent("stream-a", note("a/2"));
    await store.storeEvent("stream-b", note("b/2"));
    const got = await replay(store, a1);
    assert.equal(got.streamId, "stream-a");
    assert.deepEqual(got.events, [{ eventId: a2, message: note("a/2") }]);
    assert.deepEqual((await replay(store, a2)).events, []);
  });

  test(`${name}: every event gets its own id, mapped back to its stream`, { skip: known.ids }, async () => {
    const store = make();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await store.storeEvent(`s${i % 2}`, note(`n/${i}`)));
    assert.equal(new Set(ids).size, ids.length);
    if (store.getStreamIdForEventId) {
      assert.equal(await store.getStreamIdForEventId(ids[3] as string), "s1");
      assert.equal(await store.getStreamIdForEventId(ids[4] as string), "s0");
    }
  });
}
