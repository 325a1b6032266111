/**
 * The event store held to proto/vectors/mcp_events.json, the contract every
 * client's adapters share: its numbers, the stream digests, the key layout,
 * which event ids are valid, and when a stream is complete.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Completion } from "../src/mcp/completion.js";
import { BUCKET, EVENTS_PREFIX, FOLLOW_KEEPALIVE_MS, LIVE, MAX_SEQ, ORIGIN_LOST, WIDTHS } from "../src/mcp/contract.js";
import { EventKeys, parseEventId } from "../src/mcp/eventKeys.js";
import { digestName } from "../src/mcp/keys.js";
import { REPO } from "./vectors.js";

interface McpEvents {
  prefix: string;
  bucket: number;
  widths: { bucket: number; seq: number };
  max_seq: number;
  live: { ttl_ms: number; refresh_ms: number; ended_ttl_ms: number };
  follow: { keepalive_ms: number };
  origin_lost: { code: number; message: string; reason: string };
  digests: { input: string; digest: string }[];
  keys: {
    kind: "head" | "token" | "live" | "event";
    stream_digest?: string;
    token?: string;
    seq?: number;
    key: string;
  }[];
  event_ids: { input: string; token?: string; seq?: number; valid?: boolean; why?: string }[];
  completion: { cases: { requests: (string | number)[]; messages: unknown[]; complete: boolean; why: string }[] };
}

const V = JSON.parse(readFileSync(join(REPO, "proto", "vectors", "mcp_events.json"), "utf8")) as McpEvents;

describe("proto/vectors/mcp_events.json", () => {
  test("the numbers", () => {
    assert.equal(EVENTS_PREFIX, V.prefix);
    assert.equal(BUCKET, V.bucket);
    assert.deepEqual(WIDTHS, V.widths);
    assert.equal(MAX_SEQ, V.max_seq);
    assert.deepEqual(LIVE, { ttlMs: V.live.ttl_ms, refreshMs: V.live.refresh_ms, endedTtlMs: V.live.ended_ttl_ms });
    assert.equal(FOLLOW_KEEPALIVE_MS, V.follow.keepalive_ms);
    const { code, message, reason } = V.origin_lost;
    assert.deepEqual(ORIGIN_LOST, { code, message, reason });
  });

  test("stream digests", () => {
    for (const d of V.digests) assert.equal(digestName(d.input), d.digest, JSON.stringify(d.input));
  });

  test("keys", () => {
    const keys = new EventKeys(V.prefix);
    for (const k of V.keys) {
      const token = k.token ?? "";
      const named = {
        head: () => keys.head(V.digests.find((d) => d.digest === k.stream_digest)?.input ?? ""),
        token: () => keys.token(token),
        live: () => keys.live(token),
        requests: () => keys.requests(token),
        event: () => keys.event(token, k.seq ?? -1),
      }[k.kind];
      assert.ok(named, `a key kind this store does not write: ${k.kind}`);
      const got = named();
      assert.equal(got, k.key);
      if (k.kind === "event") assert.equal(keys.seqOf(k.key), k.seq);
    }
  });

  test("event ids", () => {
    for (const e of V.event_ids) {
      const expected = e.valid === false ? undefined : { token: e.token, seq: e.seq };
      assert.deepEqual(parseEventId(e.input), expected, `${JSON.stringify(e.input)}: ${e.why ?? ""}`);
    }
  });

  test("completion", () => {
    for (const c of V.completion.cases) {
      const completion = new Completion();
      for (const [i, m] of c.messages.entries()) {
        const last = i === c.messages.length - 1;
        if (last) assert.equal(completion.completesWith(m, c.requests), c.complete, `${c.why} (before it is added)`);
        completion.add(m);
      }
      assert.equal(completion.complete(c.requests), c.complete, c.why);
    }
  });
});
