/**
 * The MCP TypeScript SDK's `EventStore` (resumable Streamable HTTP streams)
 * on the cluster: every SSE event a replica sends is committed before its
 * id goes out, so a client that reconnects with `Last-Event-ID` to any
 * replica gets exactly what it missed, in order.
 *
 * The layout is the Rust crate's and the Python package's ClusterEventStore
 * (client/rust/src/rmcp_seams/event_store.rs, client/python/src/handlestore/mcp/
 * event_store.py), in the client's namespace under a prefix (`mcp/events`):
 *
 * - `streams/<digest of the stream id>`: the stream's head `{token, seq}`:
 *   a random 128-bit token drawn with the stream's first event, and the
 *   last sequence number;
 * - `tokens/<token>`: the stream id (the SDK's replay answers with it);
 * - `events/<token>/<bucket>/<seq>`: one event `{message}` (null for the
 *   SDK's priming event, which is never replayed), in sequence order.
 *
 * An event id is `<token>.<seq>`: unguessable, unique across replicas (one
 * atomic batch moves the head by compare-and-set and writes the event), and
 * it names its stream, so a replay is one range read. Every key expires
 * after the TTL; a stream keeps at most its last `maxEvents`.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { EventId, EventStore, StreamId } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "../cluster.js";
import { CodecError } from "../errorBase.js";
import { newHandleId } from "../ids.js";
import { InvalidArgumentError, NotFoundError, RevisionMismatchError, UnavailableError } from "../reasons.js";
import type { StateTool } from "../state.js";
import { digestName, padded, pageTokenAfter } from "./keys.js";

export const EVENTS_PREFIX = "mcp/events";
/** Events per bucket: the unit older events are deleted in. */
export const BUCKET = 100;
const APPEND_ATTEMPTS = 16;
const HEADS_CAP = 10_000;
const REPLAY_PAGE = 100;
/** Digits without leading zeros: one id per event. */
const EVENT_ID = /^([A-Z2-7]{26})\.(0|[1-9][0-9]{0,15})$/;

export interface ClusterEventStoreOptions {
  /** How long events are kept, in ms (default an hour, at least a second). */
  readonly ttl?: number | undefined;
  /** How many of a stream's latest events are kept (default 1000, at least 100). */
  readonly maxEvents?: number | undefined;
  /** The key prefix (several servers in one namespace). */
  readonly prefix?: string | undefined;
}

interface Head {
  readonly token: string;
  readonly seq: number;
  /** The head key's revision; 0 before the stream exists. */
  readonly revision: number;
}

/** `<token>.<seq>` as this store mints them; undefined for anything else (a `Last-Event-ID` is whatever a client sends). */
export function parseEventId(eventId: unknown): { token: string; seq: number } | undefined {
  if (typeof eventId !== "string") return undefined;
  const m = EVENT_ID.exec(eventId);
  if (!m?.[1] || !m[2]) return undefined;
  const seq = Number(m[2]);
  return Number.isSafeInteger(seq) ? { token: m[1], seq } : undefined;
}

function malformed(eventId: unknown): InvalidArgumentError {
  const shown = typeof eventId === "string" ? JSON.stringify([...eventId].slice(0, 80).join("")) : typeof eventId;
  return new InvalidArgumentError(`malformed event id ${shown}`);
}

function newHead(): Head {
  return { token: newHandleId(), seq: 0, revision: 0 };
}

/** The SDK stores an empty object as a stream's priming event: kept as null, never replayed. */
function storedMessage(message: JSONRPCMessage): JSONRPCMessage | null {
  return Object.keys(message).length === 0 ? null : message;
}

/**
 * Events shared by every replica: pass it as `eventStore` to
 * `StreamableHTTPServerTransport`. `scoped(id)` gives a view whose streams
 * are its own (the SDK names every session's standalone GET stream
 * `_GET_stream`: give each session's transport `store.scoped(sessionId)`);
 * replays find any stream by its event id, whatever the scope.
 */
export class ClusterEventStore implements EventStore {
  private readonly state: StateTool;
  private readonly prefix: string;
  private readonly ttl: number;
  private readonly maxEvents: number;
  private scope = "";
  private heads = new Map<string, Head>();
  private chains = new Map<string, Promise<unknown>>();

  constructor(client: Client, options: ClusterEventStoreOptions = {}) {
    this.state = client.stateTool();
    this.prefix = options.prefix ?? EVENTS_PREFIX;
    this.ttl = Math.max(1_000, options.ttl ?? 3_600_000);
    this.maxEvents = Math.max(BUCKET, options.maxEvents ?? 1_000);
  }

  /** A view of this store whose stream ids are its own (one per session or transport); it shares this one's caches. */
  scoped(scope: string): ClusterEventStore {
    const view = new ClusterEventStore(this.state.client, {
      ttl: this.ttl,
      maxEvents: this.maxEvents,
      prefix: this.prefix,
    });
    view.scope = `${this.scope}${scope}\u0000`;
    view.heads = this.heads;
    view.chains = this.chains;
    return view;
  }

  private headKey(streamId: string): string {
    return `${this.prefix}/streams/${digestName(this.scope + streamId)}`;
  }

  private tokenKey(token: string): string {
    return `${this.prefix}/tokens/${token}`;
  }

  private streamPrefix(token: string): string {
    return `${this.prefix}/events/${token}/`;
  }

  private bucketPrefix(token: string, bucket: number): string {
    return `${this.streamPrefix(token)}${padded(bucket, 12)}/`;
  }

  private eventKey(token: string, seq: number): string {
    return `${this.bucketPrefix(token, Math.floor(seq / BUCKET))}${padded(seq, 20)}`;
  }

  /** Appends `message` to `streamId` and returns its event id; appends to one stream run one at a time in this process. */
  storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const key = this.headKey(streamId);
    const before = this.chains.get(key) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(() => this.append(key, streamId, storedMessage(message)));
    this.chains.set(key, mine);
    const forget = () => {
      if (this.chains.get(key) === mine) this.chains.delete(key);
    };
    mine.then(forget, forget);
    return mine;
  }

  private async append(key: string, streamId: string, message: JSONRPCMessage | null): Promise<EventId> {
    let head = this.heads.get(key) ?? newHead();
    for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
      const next = { token: head.token, seq: head.seq + 1 };
      try {
        const revision = await this.tryAppend(key, streamId, head, next, message);
        await this.advanced(key, { ...next, revision });
        return `${next.token}.${next.seq}`;
      } catch (e) {
        if (!(e instanceof RevisionMismatchError || e instanceof NotFoundError)) throw e;
        // Another replica appended: back off a little, read the head again.
        await sleep(Math.random() * 5 * 2 ** Math.min(attempt, 6));
        head = await this.readHead(key, streamId);
      }
    }
    throw new UnavailableError(`event stream ${streamId}: ${APPEND_ATTEMPTS} appends lost to other writers`);
  }

  /** One atomic batch: the head moves from `head` to `next` (created if new), the event is written, the token names the stream. */
  private tryAppend(
    key: string,
    streamId: string,
    head: Head,
    next: { token: string; seq: number },
    message: JSONRPCMessage | null,
  ): Promise<number> {
    return this.state.batchStore([
      { key, value: next, ttl: this.ttl, expectedRevision: head.revision },
      { key: this.eventKey(next.token, next.seq), value: { message }, ttl: this.ttl },
      { key: this.tokenKey(next.token), value: streamId, ttl: this.ttl },
    ]);
  }

  /** Remembers the head and, when a bucket fills, deletes the one that left the window (best effort: the TTL removes it anyway). */
  private async advanced(key: string, head: Head): Promise<void> {
    if (this.heads.size >= HEADS_CAP) this.heads.clear();
    this.heads.set(key, head);
    const buckets = Math.ceil(this.maxEvents / BUCKET);
    const bucket = head.seq / BUCKET;
    if (head.seq % BUCKET !== 0 || bucket <= buckets) return;
    await this.state.deletePrefix(this.bucketPrefix(head.token, bucket - buckets - 1), { limit: BUCKET }).catch(() => {
      // The TTL removes them.
    });
  }

  private async readHead(key: string, streamId: string): Promise<Head> {
    const entry = await this.state.retrieve(key);
    if (entry === undefined) return newHead();
    const v = entry.value as Partial<Head> | null;
    if (typeof v?.token !== "string" || !Number.isSafeInteger(v.seq)) {
      throw new CodecError(`event stream ${streamId}: unreadable head`);
    }
    return { token: v.token, seq: v.seq as number, revision: entry.modRevision };
  }

  /** The stream an event id of this store belongs to; undefined for an unknown or malformed id (malformed: without a call). */
  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    const parsed = parseEventId(eventId);
    if (parsed === undefined) return undefined;
    const streamId = await this.state.get(this.tokenKey(parsed.token));
    return typeof streamId === "string" ? streamId : undefined;
  }

  /**
   * Sends the events of `lastEventId`'s stream after it, in order, and
   * returns the stream id. InvalidArgumentError for a malformed id (before
   * any call), NotFoundError for a stream this cluster does not have (or no
   * longer: expired).
   */
  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const parsed = parseEventId(lastEventId);
    if (parsed === undefined) throw malformed(lastEventId);
    const streamId = await this.getStreamIdForEventId(lastEventId);
    if (streamId === undefined) throw new NotFoundError(`no event stream has event ${lastEventId}`);
    for await (const [eventId, message] of this.after(parsed.token, parsed.seq)) await send(eventId, message);
    return streamId;
  }

  /** The stored events of stream `token` after `seq`, in order, page by page (priming events left out). */
  private async *after(token: string, seq: number): AsyncGenerator<[EventId, JSONRPCMessage]> {
    let pageToken: string | undefined = pageTokenAfter(this.eventKey(token, seq));
    while (pageToken !== undefined) {
      const page = await this.state.list(this.streamPrefix(token), { limit: REPLAY_PAGE, pageToken, withValues: true });
      for (const entry of page.entries) {
        const message = (entry.value as { message?: JSONRPCMessage | null } | null)?.message;
        const n = Number(entry.key.slice(entry.key.lastIndexOf("/") + 1));
        if (message && Number.isSafeInteger(n)) yield [`${token}.${n}`, message];
      }
      pageToken = page.nextPageToken;
    }
  }
}
