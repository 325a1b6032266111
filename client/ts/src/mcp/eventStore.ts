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
 *   SDK's priming event, which is never replayed), in sequence order;
 * - `live/<token>`: while the stream's origin may add events, the ids of
 *   the requests it answers (liveness.ts), which a replica resuming the
 *   stream follows it by (follow.ts); `requests/<token>`: the same ids, as
 *   long as the events.
 *
 * An event id is `<token>.<seq>`: unguessable, unique across replicas (one
 * atomic batch moves the head by compare-and-set and writes the event), and
 * it names its stream, so a replay is one range read. Every key expires
 * after the TTL; a stream keeps at most its last `maxEvents`.
 */
import { setMaxListeners } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type {
  EventId,
  EventStore,
  StreamableHTTPServerTransport,
  StreamId,
} from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "../cluster.js";
import { CodecError } from "../errorBase.js";
import { InvalidArgumentError, NotFoundError, RevisionMismatchError, UnavailableError } from "../gen/reasons.js";
import { newHandleId } from "../ids.js";
import type { StateTool, StoreItem } from "../state.js";
import { BUCKET, EVENTS_PREFIX } from "./contract.js";
import { EventKeys, eventId, parseEventId } from "./eventKeys.js";
import { Follower, type Send } from "./follow.js";
import { Origins, STANDALONE_STREAM } from "./liveness.js";
import { currentScope, runInScope, scopeOf } from "./requestScope.js";

export { BUCKET, EVENTS_PREFIX } from "./contract.js";
export { parseEventId } from "./eventKeys.js";

const APPEND_ATTEMPTS = 16;
const HEADS_CAP = 10_000;

export interface ClusterEventStoreOptions {
  /** How long events are kept, in ms (default an hour, at least a second). */
  readonly ttl?: number | undefined;
  /** How many of a stream's latest events are kept (default 1000, at least 100). */
  readonly maxEvents?: number | undefined;
  /** The key prefix (several servers in one namespace). */
  readonly prefix?: string | undefined;
  /** Where a follow that failed (the cluster unreachable past the client's deadline) is reported; default console.warn. */
  readonly onError?: ((error: unknown) => void) | undefined;
}

interface Head {
  readonly token: string;
  readonly seq: number;
  /** The head key's revision; 0 before the stream exists. */
  readonly revision: number;
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

/** Aborted when the HTTP exchange of `res` ends. */
function goneSignal(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  res.once("close", () => gone.abort(new Error("the client went away")));
  return gone.signal;
}

/**
 * Events shared by every replica: pass it as `eventStore` to
 * `StreamableHTTPServerTransport`, and serve requests with
 * `store.handleRequest(transport, req, res, parsedBody)` so a resumption
 * follows its origin to the end (docs/typescript.md). `scoped(id)` gives a
 * view whose streams are its own (the SDK names every session's standalone
 * GET stream `_GET_stream`: give each session's transport
 * `store.scoped(sessionId)`); replays find any stream by its event id,
 * whatever the scope.
 */
export class ClusterEventStore implements EventStore {
  private readonly client: Client;
  private readonly state: StateTool;
  private readonly keys: EventKeys;
  private readonly ttl: number;
  private readonly maxEvents: number;
  private readonly onError: (error: unknown) => void;
  private scope = "";
  private heads = new Map<string, Head>();
  private chains = new Map<string, Promise<unknown>>();
  private origins: Origins;
  /** Aborted by `close`: ends the follows this store runs. */
  private stopped = new AbortController();

  constructor(client: Client, options: ClusterEventStoreOptions = {}) {
    this.client = client;
    this.state = client.stateTool();
    this.keys = new EventKeys(options.prefix ?? EVENTS_PREFIX);
    this.ttl = Math.max(1_000, options.ttl ?? 3_600_000);
    this.maxEvents = Math.max(BUCKET, options.maxEvents ?? 1_000);
    this.onError = options.onError ?? ((e: unknown) => console.warn("handlestore event store:", e));
    this.origins = new Origins(this.state, this.keys, this.ttl);
    // Every follow listens to it.
    setMaxListeners(0, this.stopped.signal);
  }

  /** A view of this store whose stream ids are its own (one per session or transport); it shares this one's caches. */
  scoped(scope: string): ClusterEventStore {
    const view = new ClusterEventStore(this.client, {
      ttl: this.ttl,
      maxEvents: this.maxEvents,
      prefix: this.keys.prefix,
      onError: this.onError,
    });
    view.scope = `${this.scope}${scope}\u0000`;
    view.heads = this.heads;
    view.chains = this.chains;
    view.origins = this.origins;
    view.stopped = this.stopped;
    return view;
  }

  /**
   * Stops this store's background work, for a process that shuts down: the
   * follows it runs end (their responses stay as they are), and the streams
   * it runs lose their liveness records at once, so their followers answer
   * for them. The store (and every view of it) still stores and replays.
   */
  async close(): Promise<void> {
    this.stopped.abort(new Error("the event store is closed"));
    await this.origins.close();
  }

  /**
   * `transport.handleRequest(req, res, parsedBody)` with what the store
   * needs to know of the exchange: the ids of the requests in the body
   * (pass the parsed body: without it they are unknown), when the client
   * goes, and the transport, which a stateless server's resumption closes
   * once the stream it follows is complete.
   */
  handleRequest(
    transport: StreamableHTTPServerTransport,
    req: IncomingMessage,
    res: ServerResponse,
    parsedBody?: unknown,
  ): Promise<void> {
    const scope = scopeOf(transport, parsedBody, goneSignal(res), false);
    return runInScope(scope, () => transport.handleRequest(req, res, parsedBody));
  }

  private headKey(streamId: string): string {
    return this.keys.head(this.scope + streamId);
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
      const live = this.origins.plan(next.token, head.revision === 0, streamId, message, this.owner());
      try {
        const revision = await this.tryAppend(key, streamId, head, next, message, live.items);
        live.committed(revision);
        await this.advanced(key, { ...next, revision });
        return eventId(next.token, next.seq);
      } catch (e) {
        if (!(e instanceof RevisionMismatchError || e instanceof NotFoundError)) throw e;
        // Another replica appended: back off a little, read the head again.
        await sleep(Math.random() * 5 * 2 ** Math.min(attempt, 6));
        head = await this.readHead(key, streamId);
      }
    }
    throw new UnavailableError(`event stream ${streamId}: ${APPEND_ATTEMPTS} appends lost to other writers`);
  }

  /** Who runs a stream stored without a scope: a scoped view stands for its session's transport. */
  private owner(): object | undefined {
    return this.scope === "" ? undefined : this;
  }

  /** One atomic batch: the head moves from `head` to `next` (created if new), the event is written, the token names the stream. */
  private tryAppend(
    key: string,
    streamId: string,
    head: Head,
    next: { token: string; seq: number },
    message: JSONRPCMessage | null,
    live: readonly StoreItem[],
  ): Promise<number> {
    return this.state.batchStore([
      { key, value: next, ttl: this.ttl, expectedRevision: head.revision },
      { key: this.keys.event(next.token, next.seq), value: { message }, ttl: this.ttl },
      { key: this.keys.token(next.token), value: streamId, ttl: this.ttl },
      ...live,
    ]);
  }

  /** Remembers the head and, when a bucket fills, deletes the one that left the window (best effort: the TTL removes it anyway). */
  private async advanced(key: string, head: Head): Promise<void> {
    if (this.heads.size >= HEADS_CAP) this.heads.clear();
    this.heads.set(key, head);
    const buckets = Math.ceil(this.maxEvents / BUCKET);
    const bucket = head.seq / BUCKET;
    if (head.seq % BUCKET !== 0 || bucket <= buckets) return;
    await this.state.deletePrefix(this.keys.bucket(head.token, bucket - buckets - 1), { limit: BUCKET }).catch(() => {
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
    const streamId = await this.state.get(this.keys.token(parsed.token));
    return typeof streamId === "string" ? streamId : undefined;
  }

  /**
   * Sends the events of `lastEventId`'s stream after it, in order, and
   * returns the stream id; then, unless the stream is complete or runs on
   * the very transport serving the resumption (the SDK forwards its events
   * itself), follows it: every later event goes out through `send` once, in
   * order, until the stream is complete, the client goes, or its origin is
   * gone (its unanswered requests then get an `origin_lost` error). The SDK
   * 1.x transport keeps the response open after this returns, so the follow
   * runs on after it; the 2.x transport ends it, so there it holds until an
   * event has gone out. InvalidArgumentError for a malformed id (before any
   * call), NotFoundError for a stream this cluster does not have (or no
   * longer: expired).
   */
  async replayEventsAfter(lastEventId: EventId, { send }: { send: Send }): Promise<StreamId> {
    const parsed = parseEventId(lastEventId);
    if (parsed === undefined) throw malformed(lastEventId);
    const streamId = await this.getStreamIdForEventId(lastEventId);
    if (streamId === undefined) throw new NotFoundError(`no event stream has event ${lastEventId}`);
    const scope = currentScope();
    const source = {
      client: this.client,
      state: this.state,
      keys: this.keys,
      headKey: this.headKey(streamId),
      ttl: this.ttl,
    };
    const stop = scope ? AbortSignal.any([scope.gone, this.stopped.signal]) : this.stopped.signal;
    const follower = new Follower(source, parsed.token, parsed.seq, send, stop);
    await follower.replay();
    const owner = scope?.owner ?? this.owner();
    if (owner !== undefined && this.origins.ownerOf(parsed.token) === owner) return streamId;
    if (scope?.endsOnReturn && streamId !== STANDALONE_STREAM) {
      // The transport ends the response when this returns: hold it until an event has gone out (a failure
      // makes it answer 500, and the client tries again from the same event).
      if (follower.sent === 0) await follower.follow(() => follower.sent > 0);
    } else {
      // After the transport has registered the response it returns: ending it before would refuse the resumption.
      setImmediate(() => void this.follow(follower, scope?.end));
    }
    return streamId;
  }

  /** Runs a follow to its end: `end` ends the response once the stream is complete; a failed follow is reported. */
  private async follow(follower: Follower, end: (() => void) | undefined): Promise<void> {
    try {
      if (await follower.follow()) end?.();
    } catch (e) {
      if (follower.stop.aborted) return;
      this.onError(e);
      // The client reconnects from the last event it got; with none on this response it would lose its place.
      if (follower.sent > 0) end?.();
    }
  }
}
