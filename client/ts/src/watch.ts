/**
 * Watch: the changes to state keys or handles, in revision order with no
 * gaps, from a revision or from now (the Rust client's watch.rs, the Python
 * client's watch.py).
 *
 * A watch that loses its node (it stops, the network fails, nothing is heard
 * for a while) resumes on another node from the revision after the last one
 * it delivered, so a watcher sees every change once, in order; so does one a
 * node cut off because it fell behind ("slow_watcher"). It fails only for
 * what resuming cannot fix: no node takes it within the client's deadline,
 * the history moved past it (CompactedError), or the caller may no longer
 * read what it watches.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { status as Code } from "@grpc/grpc-js";
import { DeadlineError } from "./deadline.js";
import { ClosedError, HandlestoreError } from "./errorBase.js";
import { isServiceError, type Status, statusOf } from "./errors.js";
import { ErrorDetail } from "./gen/handlestore/v1/common.js";
import {
  EventKind,
  type WatchEvent,
  type WatchRequest,
  type WatchResponse,
  WatchService,
} from "./gen/handlestore/v1/watch.js";
import { InvalidArgumentError } from "./gen/reasons.js";
import { decide, giveUp } from "./retry.js";
import { valueFromWire } from "./state.js";
import { StreamReader } from "./streamReader.js";
import type { Transport } from "./transport.js";

/** The node sends progress every 2 s while idle; three missed is a lost node. */
export const SILENCE = 6_000;

/** What to watch, in the client's namespace: state keys under a prefix ("" = all), one key, a handle store, one handle. */
export type WatchTarget =
  | { readonly prefix: string }
  | { readonly key: string }
  | { readonly store: string }
  | { readonly handle: { readonly store: string; readonly id: string } };

export interface WatchOptions {
  /** The first revision to deliver (inclusive); none = the changes after now. */
  readonly startRevision?: number | undefined;
  /** Also deliver batches without changes while idle, with the revision the watch reached. */
  readonly progress?: boolean | undefined;
  /** Leave values out of puts. */
  readonly keysOnly?: boolean | undefined;
  /** Ends the watch: a pending `nextBatch` rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
}

export type ChangeKind = "put" | "delete" | "expire";

export interface Change {
  readonly kind: ChangeKind;
  /** The revision of the change (the changes of one write share it). */
  readonly revision: number;
  /** The handle store, for changes to handles (undefined for state keys). */
  readonly store: string | undefined;
  /** The state key, or the handle id. */
  readonly key: string;
  /** Puts: the new value (undefined with keysOnly); a handle's value is the bytes of its JSON. */
  readonly value: unknown;
  readonly createRevision: number;
  /** Unix ms, 0 = never. */
  readonly expiresAtMs: number;
}

export interface WatchBatch {
  /** Every change through this revision has been delivered. */
  readonly revision: number;
  /** Empty for a progress notice. */
  readonly changes: Change[];
}

const KINDS: ReadonlyMap<EventKind, ChangeKind> = new Map([
  [EventKind.EVENT_KIND_PUT, "put"],
  [EventKind.EVENT_KIND_DELETE, "delete"],
  [EventKind.EVENT_KIND_EXPIRE, "expire"],
]);

function targetOf(t: WatchTarget): WatchRequest["target"] {
  const given = ["prefix", "key", "store", "handle"].filter((k) => k in t);
  if (given.length !== 1) throw new InvalidArgumentError("watch exactly one of prefix, key, store or handle");
  if ("prefix" in t) return { $case: "prefix", value: t.prefix };
  if ("key" in t) return { $case: "key", value: t.key };
  if ("store" in t) return { $case: "store", value: t.store };
  return { $case: "handle", value: { store: t.handle.store, id: t.handle.id } };
}

function change(e: WatchEvent): Change {
  const kind = KINDS.get(e.kind);
  if (kind === undefined) throw new HandlestoreError(`unknown change kind ${e.kind}`);
  return {
    kind,
    revision: Number(e.revision),
    store: e.store || undefined,
    key: e.key,
    value: valueFromWire(e.value),
    createRevision: Number(e.createRevision),
    expiresAtMs: Number(e.expiresAtMs),
  };
}

/** The status of a failed stream (an error that is not gRPC's is thrown on). */
function failure(e: unknown): Status {
  if (isServiceError(e)) return statusOf(e);
  throw e;
}

/** A node that did not establish the watch, as a status worth another node. */
function lost(message: string): Status {
  return { code: Code.UNAVAILABLE, message, detail: ErrorDetail.create() };
}

/** A running watch: `for await (const batch of watch)`, or `await watch.nextBatch()`; `close()` ends it. */
export class Watch implements AsyncIterable<WatchBatch> {
  private positionAt: number;
  private nodeAt: number;
  private reader: StreamReader<WatchResponse> | undefined;
  private closed = false;

  private readonly client: Transport;

  private constructor(
    client: Transport,
    private readonly request: WatchRequest,
    private readonly progress: boolean,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.client = client;
    this.positionAt = Number(request.startRevision);
    this.nodeAt = client.watchNode();
    signal?.addEventListener("abort", () => this.close(), { once: true });
  }

  /**
   * @internal Starts watching `target` on a client's transport (what
   * `Client.watch` does); resolves once a node has established the watch,
   * so every later change (or from `startRevision`) is delivered.
   */
  static async start(client: Transport, target: WatchTarget, options: WatchOptions = {}): Promise<Watch> {
    const request: WatchRequest = {
      namespace: client.namespace,
      target: targetOf(target),
      startRevision: BigInt(options.startRevision ?? 0),
      progressNotify: true,
      keysOnly: options.keysOnly ?? false,
    };
    const w = new Watch(client, request, options.progress ?? false, options.signal);
    await w.connect();
    return w;
  }

  /** The next revision this watch delivers (resume a later watch from here). */
  get position(): number {
    return this.positionAt;
  }

  /** The endpoint serving the watch now. */
  get node(): number {
    return this.nodeAt;
  }

  close(): void {
    this.closed = true;
    this.drop();
  }

  private drop(): void {
    this.reader?.cancel();
    this.reader = undefined;
  }

  private moveOn(): void {
    this.drop();
    this.nodeAt = (this.nodeAt + 1) % this.client.endpoints.length;
  }

  private checkOpen(): void {
    this.signal?.throwIfAborted();
    if (this.closed) throw new ClosedError("the watch is closed");
  }

  /** The next batch of changes (or, with progress, of none). */
  async nextBatch(): Promise<WatchBatch> {
    for (;;) {
      this.checkOpen();
      const reader = this.reader ?? (await this.connect());
      let got: WatchResponse | "end" | "silent";
      try {
        got = await reader.read(SILENCE);
      } catch (e) {
        this.checkOpen();
        const s = failure(e);
        if (!decide(s).resume) {
          this.close();
          throw giveUp(s);
        }
        got = "end";
      }
      if (typeof got !== "string") {
        const batch = this.take(got);
        if (batch) return batch;
        continue;
      }
      // The node ended the watch, failed, or went quiet: resume on the next one.
      this.moveOn();
    }
  }

  /** The batches, until the watch is closed (quietly) or fails (the error is thrown); leaving the loop closes it. */
  async *[Symbol.asyncIterator](): AsyncGenerator<WatchBatch> {
    try {
      while (!this.closed) yield await this.nextBatch();
    } catch (e) {
      if (!(e instanceof ClosedError && this.closed)) throw e;
    } finally {
      this.close();
    }
  }

  /** Opens the watch on a node, trying them in turn with backoff until the client's deadline. */
  async connect(): Promise<StreamReader<WatchResponse>> {
    const end = performance.now() + this.client.deadline;
    for (let tries = 0; ; tries++) {
      const opened = await this.open();
      if (opened instanceof StreamReader) return opened;
      this.checkOpen();
      // A node that cut the watch off as it opened ("slow_watcher") is asked again, as mid-stream.
      if (!decide(opened).resume) throw giveUp(opened);
      const last = `${this.client.endpoints[this.nodeAt]}: ${opened.message}`;
      this.moveOn();
      const wait = this.client.backoff(tries);
      if (performance.now() + wait >= end) throw new DeadlineError(this.client.deadline, `watch: ${last}`);
      await sleep(wait, undefined, { signal: this.signal }).catch(() => this.checkOpen());
    }
  }

  /**
   * Opens the watch on the current node from the position, and reads the
   * answer that says it is established; the failure, if it was not.
   */
  private async open(): Promise<StreamReader<WatchResponse> | Status> {
    const request = { ...this.request };
    if (this.positionAt > 0) request.startRevision = BigInt(this.positionAt);
    const conns = this.client.connections;
    const m = WatchService.watch;
    const stream = conns
      .channel(this.nodeAt)
      .makeServerStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, request, conns.metadata());
    const reader = new StreamReader(stream);
    let created: WatchResponse | "end" | "silent";
    try {
      created = await reader.read(SILENCE);
    } catch (e) {
      reader.cancel();
      return failure(e);
    }
    if (typeof created === "string") {
      reader.cancel();
      return lost(created === "end" ? "the watch ended before it was established" : "no answer to the watch");
    }
    if (!created.created) {
      reader.cancel();
      throw new HandlestoreError("the node's first watch answer is not 'created'");
    }
    this.positionAt = Number(created.revision) + 1;
    this.reader = reader;
    return reader;
  }

  /** The changes of a response not delivered yet (undefined if nothing is to be returned). */
  private take(resp: WatchResponse): WatchBatch | undefined {
    const from = this.positionAt;
    const revision = Number(resp.revision);
    this.positionAt = Math.max(this.positionAt, revision + 1);
    const changes = resp.events.filter((e) => Number(e.revision) >= from).map(change);
    if (changes.length === 0 && (!this.progress || revision + 1 < from)) return undefined;
    return { revision, changes };
  }
}
