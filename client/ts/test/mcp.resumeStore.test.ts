/**
 * ClusterEventStore's follow, below the SDK: stores on their own clients
 * play the origin and the followers, with the scope `handleRequest` sets
 * made by hand. Followers of a stream get its later events live; when the
 * origin dies (its liveness record expires) or its transport closes (the
 * record goes at once) they send what is stored, and two followers append
 * one origin_lost error per unanswered request between them, which both
 * send.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { type Client, newHandleId, type StoreItem } from "../src/index.js";
import type { RequestId } from "../src/mcp/completion.js";
import { EventKeys, parseEventId } from "../src/mcp/eventKeys.js";
import { Follower } from "../src/mcp/follow.js";
import { ClusterEventStore, EVENTS_PREFIX, LIVE, ORIGIN_LOST } from "../src/mcp/index.js";
import { type RequestScope, runInScope } from "../src/mcp/requestScope.js";
import { skipReason, useCluster } from "./cluster.js";

/**
 * An origin in another process (or language) that writes its stream as
 * proto/vectors/mcp_events.json says, with its liveness record, and then
 * dies: it never writes the record again.
 */
class DeadOrigin {
  readonly keys = new EventKeys(EVENTS_PREFIX);
  readonly token = newHandleId();
  private readonly streamId = `stream-${this.token}`;
  readonly headKey = this.keys.head(this.streamId);
  private seq = 0;
  private revision = 0;

  constructor(
    private readonly client: Client,
    private readonly requests: RequestId[],
    private readonly liveTtl: number = LIVE.ttlMs,
  ) {}

  /** Appends `messages` (the first append also writes the record); the id of the first. */
  async append(...messages: JSONRPCMessage[]): Promise<string> {
    const { keys, token } = this;
    const from = this.seq + 1;
    this.seq += messages.length;
    const ttl = 60_000;
    const items: StoreItem[] = [
      { key: this.headKey, value: { token, seq: this.seq }, ttl, expectedRevision: this.revision },
      { key: keys.token(token), value: this.streamId, ttl },
      ...messages.map((m, i) => ({ key: keys.event(token, from + i), value: { message: empty(m) ? null : m }, ttl })),
    ];
    if (from === 1) {
      items.push({ key: keys.live(token), value: { requests: this.requests }, ttl: this.liveTtl });
      items.push({ key: keys.requests(token), value: { requests: this.requests }, ttl });
    }
    this.revision = await this.client.stateTool().batchStore(items);
    return `${token}.${from}`;
  }
}

const empty = (m: JSONRPCMessage) => Object.keys(m).length === 0;
const note = (n: number): JSONRPCMessage => ({ jsonrpc: "2.0", method: "notifications/message", params: { n } });

/** A scope as `handleRequest` makes it; `close()` plays the transport closing. */
function scope(requests: RequestId[] = []) {
  const closed = new AbortController();
  const gone = new AbortController();
  let ended = 0;
  const s: { -readonly [K in keyof RequestScope]: RequestScope[K] } = {
    requests,
    owner: {},
    gone: gone.signal,
    closed: closed.signal,
    end: () => ended++,
    endsOnReturn: false,
  };
  return { s, close: () => closed.abort(), leave: () => gone.abort(), ended: () => ended };
}

/** A follower of the stream after `eventId` (serving an exchange of `owner`): what it sent, how often it ended the response, and its client's leaving. */
async function follow(store: ClusterEventStore, eventId: string, owner?: object) {
  const sent: { id: string; message: JSONRPCMessage }[] = [];
  const sc = scope();
  if (owner) sc.s = { ...sc.s, owner };
  await runInScope(sc.s, () =>
    store.replayEventsAfter(eventId, {
      send: async (id, message) => {
        sent.push({ id, message });
      },
    }),
  );
  return { sent, ended: sc.ended, leave: sc.leave };
}

async function until(done: () => boolean, what: string, ms = 3 * LIVE.ttlMs): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    assert.ok(Date.now() < end, `no ${what} within ${ms} ms`);
    await sleep(50);
  }
}

const lost = (id: RequestId) => ({
  jsonrpc: "2.0",
  id,
  error: { code: ORIGIN_LOST.code, message: ORIGIN_LOST.message, data: { reason: ORIGIN_LOST.reason } },
});

describe("ClusterEventStore: following a stream", { skip: skipReason }, () => {
  const fx = useCluster();
  let n = 0;
  const stores = () => {
    const namespace = `ts-follow-${++n}`;
    const origin = fx.cluster.client({ namespace });
    fx.track(origin);
    return { origin, store: (c = fx.client({ namespace })) => fx.track(new ClusterEventStore(c)) };
  };

  test("followers get later events live; a dead origin's requests get one origin_lost error each, the same for all", async () => {
    const { origin, store } = stores();
    const dead = new DeadOrigin(origin, [7, "x"]);
    const first = await dead.append({} as JSONRPCMessage, note(1));
    const [f1, f2] = [await follow(store(), first), await follow(store(), first)];
    await dead.append(note(2));
    await until(() => f1.sent.length === 2 && f2.sent.length === 2, "live event");
    // It never writes its record again: the record expires, and the followers answer for it.
    await until(() => f1.ended() === 1 && f2.ended() === 1, "end");
    assert.deepEqual(f1.sent, f2.sent);
    assert.deepEqual(
      f1.sent.map((e) => e.message),
      [note(1), note(2), lost(7), lost("x")],
    );
    const late = await follow(store(), first);
    await until(() => late.ended() === 1, "end of a late follower");
    assert.deepEqual(late.sent, f1.sent, "the errors were appended once");
    const again = await follow(store(), f1.sent[1]?.id ?? "");
    await until(() => again.ended() === 1, "end of a resumption from the last progress");
    assert.deepEqual(again.sent, f1.sent.slice(2));
  });

  test("a follower that starts after the origin's record is gone still answers its requests", async () => {
    const { origin, store } = stores();
    const dead = new DeadOrigin(origin, [5], 1);
    const first = await dead.append({} as JSONRPCMessage, note(1));
    const f = await follow(store(), first);
    await until(() => f.ended() === 1, "end");
    assert.deepEqual(
      f.sent.map((e) => e.message),
      [note(1), lost(5)],
    );
  });

  test("an origin's transport closing before it answers ends its record at once", async () => {
    const { origin, store } = stores();
    const o = store(origin);
    const os = scope([1]);
    const first = await runInScope(os.s, () => o.storeEvent("s", note(1)));
    const f = await follow(store(), first);
    const closedAt = Date.now();
    os.close();
    await until(() => f.ended() === 1, "end");
    assert.deepEqual(
      f.sent.map((e) => e.message),
      [lost(1)],
    );
    assert.ok(Date.now() - closedAt < LIVE.ttlMs, "the follower waited for the record to expire");
  });

  test("a complete stream's resumption ends at once", async () => {
    const { origin, store } = stores();
    const o = store(origin);
    const os = scope([1]);
    const first = await runInScope(os.s, () => o.storeEvent("s", note(1)));
    const answer: JSONRPCMessage = { jsonrpc: "2.0", id: 1, result: {} };
    await runInScope(os.s, () => o.storeEvent("s", answer));
    const f = await follow(store(), first);
    await until(() => f.ended() === 1, "end");
    assert.deepEqual(
      f.sent.map((e) => e.message),
      [answer],
    );
  });

  test("a resumption served by the origin's own transport is left to it; a follower stops when its client goes", async () => {
    const { origin, store } = stores();
    const o = store(origin);
    const os = scope([1]);
    const first = await runInScope(os.s, () => o.storeEvent("s", note(1)));
    await runInScope(os.s, () => o.storeEvent("s", note(2)));
    const own = await follow(o, first, os.s.owner);
    const other = await follow(store(), first);
    await runInScope(os.s, () => o.storeEvent("s", note(3)));
    await until(() => other.sent.length === 2, "live event");
    assert.deepEqual(
      own.sent.map((e) => e.message),
      [note(2)],
    );
    other.leave();
    await runInScope(os.s, () => o.storeEvent("s", note(4)));
    await sleep(500);
    assert.equal(other.sent.length, 2, "a follower whose client went sent on");
    await runInScope(os.s, () => o.storeEvent("s", { jsonrpc: "2.0", id: 1, result: {} }));
  });

  test("an origin_lost append that loses to a late write of the origin sends that event, then appends after it", async () => {
    const { origin } = stores();
    const dead = new DeadOrigin(origin, [7], 1_500);
    const first = await dead.append({} as JSONRPCMessage, note(1));
    // The origin writes once more between the follower's read of the head and its append.
    const state = origin.stateTool();
    let late = false;
    const racing = new Proxy(state, {
      get(target, prop, receiver) {
        if (prop !== "retrieve") return Reflect.get(target, prop, receiver);
        return async (key: string) => {
          const head = await target.retrieve(key);
          if (key === dead.headKey && !late) {
            late = true;
            await dead.append(note(2));
          }
          return head;
        };
      },
    });
    const sent: JSONRPCMessage[] = [];
    const source = { client: origin, state: racing, keys: dead.keys, headKey: dead.headKey, ttl: 60_000 };
    const send = async (_id: string, m: JSONRPCMessage) => {
      sent.push(m);
    };
    const follower = new Follower(
      source,
      dead.token,
      parseEventId(first)?.seq ?? 0,
      send,
      new AbortController().signal,
    );
    await follower.replay();
    assert.equal(await follower.follow(), true);
    assert.deepEqual(sent, [note(1), note(2), lost(7)]);
  });
});
