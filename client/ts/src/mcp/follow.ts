/**
 * The follower: the replica serving a resumption whose stream another
 * transport runs (docs/dev/resume.md). It sends the stored events after the
 * client's last one; then, unless the stream is complete, it watches the
 * stream's events and the origin's liveness record from the replay's read
 * revision on and sends every later event once, in order (a gap is filled
 * by a range read), until the stream is complete, the client goes, or the
 * record is gone. Then it sends what is stored and, if the stream is still
 * not complete, appends one `origin_lost` error per recorded request not
 * answered, by compare-and-set on the head at the last event it sent (two
 * followers of one dead stream append one error between them), and sends
 * them.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "../cluster.js";
import { NotFoundError, RevisionMismatchError } from "../gen/reasons.js";
import type { StateTool } from "../state.js";
import type { Change, Watch } from "../watch.js";
import { Completion, type RequestId } from "./completion.js";
import { ORIGIN_LOST } from "./contract.js";
import { type EventKeys, eventId } from "./eventKeys.js";
import { pageTokenAfter } from "./keys.js";

const REPLAY_PAGE = 100;
const APPEND_ATTEMPTS = 16;

export type Send = (eventId: string, message: JSONRPCMessage) => Promise<void>;

/** The store a follower reads and appends to. */
export interface FollowSource {
  /** The client the store was made with, whose watches the follower opens. */
  readonly client: Client;
  readonly state: StateTool;
  readonly keys: EventKeys;
  /** The stream's head, as the replaying store names the stream. */
  readonly headKey: string;
  /** The TTL of the events it appends, in ms. */
  readonly ttl: number;
}

/** The requests a liveness record names (undefined for anything else). */
function requestsOf(value: unknown): RequestId[] | undefined {
  const requests = (value as { requests?: unknown } | null)?.requests;
  if (!Array.isArray(requests)) return undefined;
  return requests.filter((id): id is RequestId => typeof id === "string" || typeof id === "number");
}

function originLost(id: RequestId): JSONRPCMessage {
  const { code, message, reason } = ORIGIN_LOST;
  return { jsonrpc: "2.0", id, error: { code, message, data: { reason } } };
}

type Next = { readonly from: "events" | "live"; readonly changes?: Change[]; readonly error?: unknown };

export class Follower {
  /** Events sent on this resumption. */
  sent = 0;
  private last: number;
  private readonly completion = new Completion();
  /** The origin's recorded requests; undefined when it recorded none (an origin that keeps no record). */
  private requests: RequestId[] | undefined;
  /** Whether the origin's record was there after the replay, and the revision to watch from. */
  private live = false;
  private from = 0;

  constructor(
    private readonly src: FollowSource,
    private readonly token: string,
    after: number,
    private readonly send: Send,
    /** Aborted when the client goes (or the store closes): the follow stops. */
    readonly stop: AbortSignal,
  ) {
    this.last = after;
  }

  get complete(): boolean {
    return this.completion.complete(this.requests ?? []);
  }

  /**
   * Sends what is stored after the client's last event and reads the
   * origin's liveness record (and, once it is gone, the ids it named).
   */
  async replay(): Promise<void> {
    const revision = await this.sendStored();
    const { keys, state } = this.src;
    const [live, kept] = await state.batchRetrieve([keys.live(this.token), keys.requests(this.token)]);
    this.requests = requestsOf((live ?? kept)?.value);
    this.live = live !== undefined;
    this.from = revision + 1;
  }

  /**
   * Follows the stream until it is complete (true), the client goes (an
   * abort error), the origin is gone and nothing more can be sent (false),
   * or `enough()` says so after an event (false).
   */
  async follow(enough: () => boolean = () => false): Promise<boolean> {
    if (this.complete) return true;
    if (!this.live) return this.originGone();
    const watches = await this.watches();
    const next = (i: 0 | 1): Promise<Next> => {
      const from = i === 0 ? "events" : "live";
      return watches[i].nextBatch().then(
        (b) => ({ from, changes: b.changes }),
        (error: unknown) => ({ from, error }),
      );
    };
    const pending = [next(0), next(1)];
    try {
      for (;;) {
        const got = await Promise.race(pending);
        if (got.error !== undefined) throw got.error;
        const i = got.from === "events" ? 0 : 1;
        pending[i] = next(i);
        if (got.from === "live") {
          if (got.changes?.some((c) => c.kind !== "put")) return await this.originGone();
          continue;
        }
        await this.take(got.changes ?? []);
        if (this.complete) return true;
        if (enough()) return false;
      }
    } finally {
      for (const w of watches) w.close();
    }
  }

  /** Watches of the stream's events and of the origin's record, from the replay's read revision on. */
  private async watches(): Promise<readonly [Watch, Watch]> {
    const options = { startRevision: this.from, signal: this.stop };
    const client = this.src.client;
    const events = await client.watch({ prefix: this.src.keys.events(this.token) }, options);
    try {
      return [events, await client.watch({ key: this.src.keys.live(this.token) }, options)];
    } catch (e) {
      events.close();
      throw e;
    }
  }

  /** Sends the events a watch batch carries, in order; a gap is read from the store. */
  private async take(changes: Change[]): Promise<void> {
    for (const c of changes) {
      const seq = c.kind === "put" ? this.src.keys.seqOf(c.key) : undefined;
      if (seq === undefined || seq <= this.last) continue;
      if (seq > this.last + 1) {
        await this.sendStored();
        continue;
      }
      await this.deliver(seq, (c.value as { message?: JSONRPCMessage | null } | null)?.message ?? null);
    }
  }

  private async deliver(seq: number, message: JSONRPCMessage | null): Promise<void> {
    this.last = seq;
    this.completion.add(message);
    if (message === null) return;
    this.sent++;
    await this.send(eventId(this.token, seq), message);
  }

  /** Sends every stored event after the last one sent; the read revision of the first page. */
  private async sendStored(): Promise<number> {
    const { state, keys } = this.src;
    const prefix = keys.events(this.token);
    const options = { limit: REPLAY_PAGE, withValues: true };
    let page = await state.list(prefix, { ...options, pageToken: pageTokenAfter(keys.event(this.token, this.last)) });
    const revision = page.readRevision;
    for (;;) {
      for (const entry of page.entries) {
        const seq = keys.seqOf(entry.key);
        if (seq === undefined || seq <= this.last) continue;
        await this.deliver(seq, (entry.value as { message?: JSONRPCMessage | null } | null)?.message ?? null);
      }
      if (page.nextPageToken === undefined) return revision;
      page = await state.list(prefix, { ...options, pageToken: page.nextPageToken });
    }
  }

  /** The origin writes no more: send what it stored, then answer what it left unanswered (true once complete). */
  private async originGone(): Promise<boolean> {
    for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
      await this.sendStored();
      if (this.complete) return true;
      const appended = await this.appendOriginLost();
      if (appended !== "retry") return appended === "appended";
    }
    return false;
  }

  /** One `origin_lost` error per unanswered request, appended only if nothing was stored after the last event sent. */
  private async appendOriginLost(): Promise<"appended" | "retry" | "cannot"> {
    const { state, keys, headKey, ttl } = this.src;
    const unanswered = this.completion.unanswered(this.requests ?? []);
    if (unanswered.length === 0) return "cannot";
    const head = await state.retrieve(headKey);
    const at = head?.value as { token?: unknown; seq?: unknown } | undefined;
    if (head === undefined || at?.token !== this.token) return "cannot";
    if (at.seq !== this.last) return "retry";
    const errors = unanswered.map(originLost);
    const items = errors.map((message, i) => ({
      key: keys.event(this.token, this.last + 1 + i),
      value: { message },
      ttl,
    }));
    const moved = { token: this.token, seq: this.last + errors.length };
    try {
      await state.batchStore([{ key: headKey, value: moved, ttl, expectedRevision: head.modRevision }, ...items]);
    } catch (e) {
      if (e instanceof RevisionMismatchError || e instanceof NotFoundError) return "retry";
      throw e;
    }
    const first = this.last + 1;
    for (const [i, message] of errors.entries()) await this.deliver(first + i, message);
    return "appended";
  }
}
