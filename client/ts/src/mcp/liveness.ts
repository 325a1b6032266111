/**
 * The origin's side of a followed stream: while a stream this process runs
 * may still get events, `live/<token>` = `{requests}` stays alive (written
 * in the batch of the stream's first event with a TTL of `LIVE.ttlMs`,
 * ended in the batch of the event that completes the stream). A replica
 * following the stream takes its absence as the end of the origin's
 * writes: a process that dies stops writing it, and the cluster expires it.
 *
 * Who keeps it alive depends on what the process knows of the stream:
 *
 * - in a scope (`handleRequest`), the record is written again every
 *   `LIVE.refreshMs` until the stream completes or its transport closes
 *   (then it is deleted at once: no more events can come);
 * - without one, nothing says when a stream is abandoned, so no timer
 *   keeps it: each event's batch writes it again instead, and a stream
 *   silent for longer than the TTL looks ended to its followers.
 *
 * The first batch also writes the ids to `requests/<token>`, with the
 * events' TTL, for a follower that starts after the record is gone. The
 * cluster's batches cannot delete, so the completing batch writes the
 * record with a 1 ms TTL (`LIVE.endedTtlMs`): absent to every read from
 * that revision on, and swept (a change followers watch) within the node's
 * sweep interval.
 * Refreshes are compare-and-set on the record's revision, so a refresh in
 * flight never brings an ended record back; one that cannot be written for
 * longer than the TTL is given up (followers have taken the origin for dead).
 */
import { NotFoundError, RevisionMismatchError } from "../gen/reasons.js";
import type { StateTool, StoreItem } from "../state.js";
import { Completion, type RequestId } from "./completion.js";
import { LIVE } from "./contract.js";
import type { EventKeys } from "./eventKeys.js";
import { currentScope, type RequestScope } from "./requestScope.js";

/** The SDKs' name for a session's standalone GET stream: it answers no request. */
export const STANDALONE_STREAM = "_GET_stream";

interface OriginStream {
  readonly key: string;
  readonly requests: readonly RequestId[];
  readonly completion: Completion;
  readonly owner: object | undefined;
  /** Kept alive by a timer (in a scope), else by its events. */
  readonly timed: boolean;
  revision: number;
  /** When the record was last written. */
  writtenAt: number;
  timer?: NodeJS.Timeout;
  /** Stops listening for its transport's close. */
  release?: () => void;
  refreshing?: Promise<unknown>;
  /** A refresh is in flight (a slow cluster must not make them overlap and lose to each other). */
  writing?: boolean;
  done?: boolean;
}

/** The writes an append adds to its batch, and what to do once the batch is committed at `revision`. */
export interface LivePlan {
  readonly items: StoreItem[];
  committed(revision: number): void;
}

/** How many streams the registry holds before it forgets the silent ones. */
const PRUNE_AT = 1_000;

const NOTHING: LivePlan = { items: [], committed: () => {} };

/** The streams this process is the origin of (one registry per store and its scoped views). */
export class Origins {
  private readonly streams = new Map<string, OriginStream>();
  private closed = false;

  constructor(
    private readonly state: StateTool,
    private readonly keys: EventKeys,
    /** The events' TTL, which `requests/<token>` gets too. */
    private readonly ttl: number,
  ) {}

  /** Who runs stream `token` here (a transport, or a scoped view), if this process is its origin. */
  ownerOf(token: string): object | undefined {
    return this.streams.get(token)?.owner;
  }

  /**
   * The liveness writes of appending `message` to stream `token`: `first`
   * when the append draws the token (the stream's first event here).
   */
  plan(token: string, first: boolean, streamId: string, message: unknown, owner: object | undefined): LivePlan {
    if (this.closed) return NOTHING;
    if (first) return this.planFirst(token, streamId, message, owner);
    const s = this.streams.get(token);
    if (s === undefined || s.done) return NOTHING;
    const completes = s.completion.completesWith(message, s.requests);
    if (!completes && s.timed) return { items: [], committed: () => s.completion.add(message) };
    const value = { requests: s.requests };
    return {
      items: [{ key: s.key, value, ttl: completes ? LIVE.endedTtlMs : LIVE.ttlMs }],
      committed: (revision) => {
        s.completion.add(message);
        s.revision = revision;
        s.writtenAt = Date.now();
        if (completes) this.finish(token, s);
      },
    };
  }

  private planFirst(token: string, streamId: string, message: unknown, fallbackOwner: object | undefined): LivePlan {
    const scope = currentScope();
    // Without a scope nothing bounds a standalone stream's life: it gets no record (and no follower).
    if (streamId === STANDALONE_STREAM && scope === undefined) return NOTHING;
    const requests = streamId === STANDALONE_STREAM ? [] : [...(scope?.requests ?? [])];
    const completion = new Completion();
    if (completion.completesWith(message, requests)) return NOTHING;
    const key = this.keys.live(token);
    this.prune();
    const value = { requests };
    return {
      items: [
        { key, value, ttl: LIVE.ttlMs },
        { key: this.keys.requests(token), value, ttl: this.ttl },
      ],
      committed: (revision) => {
        completion.add(message);
        const owner = scope?.owner ?? fallbackOwner;
        const s: OriginStream = { key, requests, completion, owner, timed: !!scope, revision, writtenAt: Date.now() };
        this.streams.set(token, s);
        if (scope) this.keepAlive(token, s, scope);
      },
    };
  }

  /** Forgets streams kept alive by their events that have been silent for longer than their record lives. */
  private prune(): void {
    if (this.streams.size < PRUNE_AT) return;
    const before = Date.now() - LIVE.ttlMs;
    for (const [token, s] of this.streams) if (!s.timed && s.writtenAt < before) this.finish(token, s);
  }

  /** Refreshes the record until the stream ends or its transport closes. */
  private keepAlive(token: string, s: OriginStream, scope: RequestScope): void {
    s.timer = setInterval(() => this.refresh(token, s), LIVE.refreshMs).unref();
    const onClosed = () => void this.abandon(token, s);
    scope.closed.addEventListener("abort", onClosed, { once: true });
    s.release = () => scope.closed.removeEventListener("abort", onClosed);
  }

  private refresh(token: string, s: OriginStream): void {
    if (s.done || s.writing) return;
    s.writing = true;
    // A refresh later than the next one is worth nothing: it gets that long.
    const options = { ttl: LIVE.ttlMs, expectedRevision: s.revision, deadline: LIVE.refreshMs };
    s.refreshing = this.state.store(s.key, { requests: s.requests }, options).then(
      (revision) => {
        s.revision = revision;
        s.writtenAt = Date.now();
      },
      (e: unknown) => {
        // The record changed under it (the stream ended, or it expired and followers took the origin for
        // dead), or it could not be written for longer than it lives: no more refreshes.
        const lost = e instanceof RevisionMismatchError || e instanceof NotFoundError;
        if (lost || Date.now() - s.writtenAt > LIVE.ttlMs) this.finish(token, s);
      },
    );
    s.refreshing.finally(() => {
      s.writing = false;
    });
  }

  /** This process runs no stream any more (it shuts down): every record goes at once, and no new one is kept. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.streams].map(([token, s]) => this.abandon(token, s)));
  }

  /** The stream gets no more events from here (its transport closed): its record goes at once. */
  private async abandon(token: string, s: OriginStream): Promise<void> {
    if (s.done) return;
    this.finish(token, s);
    await s.refreshing;
    await this.state.delete(s.key, { expectedRevision: s.revision }).catch(() => {
      // Someone ended it first, or the TTL will.
    });
  }

  private finish(token: string, s: OriginStream): void {
    s.done = true;
    clearInterval(s.timer);
    s.release?.();
    if (this.streams.get(token) === s) this.streams.delete(token);
  }
}
