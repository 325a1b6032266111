/**
 * The numbers of the MCP event streams every client's adapters share
 * (proto/vectors/mcp_events.json, whose reasons are in docs/dev/resume.md):
 * the package cannot read that file once installed, so they are here, and
 * test/mcp.resumeVectors.test.ts holds every one of them to it.
 */

/** The key prefix of the streams (several servers in one namespace take another). */
export const EVENTS_PREFIX = "mcp/events";
/** Events per bucket: the unit older events are deleted in. */
export const BUCKET = 100;
/** Digits of a bucket and of a sequence number in an event key. */
export const WIDTHS = { bucket: 12, seq: 20 } as const;
/** The largest sequence number: JavaScript's safe integers. */
export const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/**
 * The origin's liveness record `live/<token>`, in ms: its TTL, how often the
 * origin writes it again, and the TTL it is written with in the batch that
 * completes the stream (a batch cannot delete).
 */
export const LIVE = { ttlMs: 10_000, refreshMs: 3_000, endedTtlMs: 1 } as const;

/** An SSE comment every this many ms of silence on a followed stream (the SDK 1.x transport sends its own). */
export const FOLLOW_KEEPALIVE_MS = 15_000;

/** The error a follower appends for a request whose origin stopped before it answered. */
export const ORIGIN_LOST = {
  code: -32603,
  message:
    "the replica running this request stopped before it answered; every event it stored was delivered, and whether the request took effect is unknown",
  reason: "origin_lost",
} as const;
