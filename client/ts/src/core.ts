/**
 * The client's core: the `Transport` a `Client` holds and hands to its
 * stores, and the retry loop every call goes through (as the Rust client's
 * cluster.rs and the Python client's client.py). Not exported from the
 * package: `Client` is its public face.
 *
 * A call is tried on the leader (or the last node that answered). On
 * UNAVAILABLE, a transport error or a per-attempt timeout it moves on: to the
 * leader the error names if there is one, else to the next node, after an
 * exponential backoff with full jitter (and at least what a node that refused
 * the call for load asked for in gRPC's retry pushback trailer), until the
 * call's overall deadline or its AbortSignal. Which failures are tried again
 * is retry.ts's one rule. Writes carry a `(clientId, seq)` write id that
 * every retry reuses, so a write retried after a leader crash is applied
 * exactly once.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Coalescer } from "./coalesce.js";
import { type Answer, Connections, type TlsOptions, type UnaryMethod, unary } from "./connections.js";
import { DeadlineError } from "./deadline.js";
import { HandlestoreError } from "./errorBase.js";
import { isServiceError, type Status, statusOf } from "./errors.js";
import type { WriteId } from "./gen/handlestore/v1/common.js";
import { Read } from "./gen/handlestore/v1/reads.js";
import { Write, type WriteResult } from "./gen/handlestore/v1/writes.js";
import type { CallOptions } from "./options.js";
import { readCoalescer } from "./reads.js";
import { type Backoff, backoff, decide, giveUp, leaderOf, pushback } from "./retry.js";
import type { RawCallOptions, ReadAnswer, Transport, WriteKind, WriteRequest, WriteResponse } from "./transport.js";
import { WriteIds } from "./writeIds.js";
import { type Queued, writeCoalescer } from "./writes.js";

/** @internal What one client (of a client and its clones) calls with: checked by the client. */
export interface Settings {
  readonly namespace: string;
  readonly deadline: number;
  readonly attemptTimeout: number;
  readonly backoff: Backoff;
}

/** @internal The cluster's nodes and how many calls carry writes and reads at once. */
export interface Dial {
  readonly targets: readonly string[];
  readonly tls?: TlsOptions | undefined;
  readonly token?: string | undefined;
  readonly maxWriteCalls: number;
  readonly maxReadCalls: number;
}

/** What a client's clones share: connections and the calls that carry concurrent writes and reads. */
interface Shared {
  readonly conns: Connections;
  writes: Coalescer<Queued, WriteResult>;
  reads: Coalescer<Read, ReadAnswer>;
}

type Attempt<Res> = { response: Res; leader: number | undefined } | { failure: Status; leader: number | undefined };

/** @internal A client's transport: its settings, write ids, and the connections its clones share. */
export class ClientCore implements Transport {
  private constructor(
    readonly settings: Settings,
    readonly ids: WriteIds,
    private readonly shared: Shared,
  ) {}

  /** A core on new connections (dialed lazily); its coalescers call through it. */
  static dial(settings: Settings, dial: Dial): ClientCore {
    const shared = { conns: new Connections([...dial.targets], dial.tls, dial.token) } as Shared;
    const core = new ClientCore(settings, new WriteIds(), shared);
    shared.writes = writeCoalescer(core, dial.maxWriteCalls);
    shared.reads = readCoalescer(core, dial.maxReadCalls);
    return core;
  }

  /** A core on the same connections with other settings: with its own write ids unless given these. */
  with(settings: Settings, ids: WriteIds = new WriteIds()): ClientCore {
    return new ClientCore(settings, ids, this.shared);
  }

  get namespace(): string {
    return this.settings.namespace;
  }

  get deadline(): number {
    return this.settings.deadline;
  }

  get endpoints(): readonly string[] {
    return this.shared.conns.targets;
  }

  get connections(): Connections {
    return this.shared.conns;
  }

  /** The endpoint calls go to first (the leader, when known). */
  get preferred(): number {
    return this.shared.conns.preferred % this.endpoints.length;
  }

  get writeStats(): { writes: number; calls: number } {
    const s = this.shared.writes.stats;
    return { writes: s.sent, calls: s.calls };
  }

  get readStats(): { reads: number; calls: number } {
    const s = this.shared.reads.stats;
    return { reads: s.sent, calls: s.calls };
  }

  async write<K extends WriteKind>(
    kind: K,
    build: (writeId: WriteId) => WriteRequest<K>,
    options: CallOptions = {},
  ): Promise<WriteResponse<K>> {
    const ticket = this.ids.ticket();
    const write = { op: { $case: kind, value: build(ticket.id) } } as Write;
    const size = Write.encode(write).finish().length;
    const result = await this.shared.writes.run({ write, ticket }, size, this.wait(options));
    if (result.result?.$case !== kind) {
      throw new HandlestoreError(`the node answered a ${kind} with ${result.result?.$case ?? "nothing"}`);
    }
    return result.result.value as WriteResponse<K>;
  }

  read(read: Read, options: CallOptions = {}): Promise<ReadAnswer> {
    return this.shared.reads.run(read, Read.encode(read).finish().length, this.wait(options));
  }

  private wait(options: CallOptions) {
    return { signal: options.signal, deadline: options.deadline ?? this.deadline };
  }

  writeTicket() {
    return this.ids.ticket();
  }

  async call<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, options: RawCallOptions = {}): Promise<Res> {
    const conns = this.shared.conns;
    const deadline = options.deadline ?? this.deadline;
    const end = performance.now() + deadline;
    let index = this.preferred;
    for (let tries = 0; ; tries++) {
      options.signal?.throwIfAborted();
      const timeout = Math.max(1, Math.min(end - performance.now(), this.settings.attemptTimeout));
      const attempt = await this.attempt(index, method, request, timeout, options);
      if ("response" in attempt) {
        conns.preferred = attempt.leader ?? index;
        return attempt.response;
      }
      const { failure, leader } = attempt;
      const last = `${conns.targets[index]}: ${failure.message}`;
      index = leader ?? conns.indexOf(failure.detail.leaderAddr) ?? (index + 1) % conns.targets.length;
      conns.preferred = index;
      const wait = Math.max(this.backoff(tries), pushback(failure.metadata));
      if (performance.now() + wait >= end) throw new DeadlineError(deadline, last);
      await sleep(wait, undefined, { signal: options.signal }).catch(() => options.signal?.throwIfAborted());
    }
  }

  /** One attempt on node `index`: the response, or a failure worth another try (others are thrown). */
  private async attempt<Req, Res>(
    index: number,
    method: UnaryMethod<Req, Res>,
    request: Req,
    timeout: number,
    options: RawCallOptions,
  ): Promise<Attempt<Res>> {
    const conns = this.shared.conns;
    let answer: Answer<Res>;
    try {
      answer = await unary(conns.channel(index), method, request, conns.metadata(), timeout, options.signal);
    } catch (e) {
      options.signal?.throwIfAborted();
      if (!isServiceError(e)) throw e instanceof HandlestoreError ? e : new HandlestoreError(String(e), { cause: e });
      const s = statusOf(e);
      if (!decide(s).retry) throw giveUp(s, `${conns.targets[index]}: `);
      return { failure: s, leader: conns.indexOf(leaderOf(s.metadata)) };
    }
    const leader = conns.indexOf(leaderOf(answer.headers));
    const failure = options.check?.(answer.response as never);
    return failure ? { failure, leader } : { response: answer.response, leader };
  }

  /** The endpoint a new watch opens on: the ones other than the preferred (the leader, once known) in turn. */
  watchNode(): number {
    const n = this.endpoints.length;
    if (n < 2) return 0;
    const k = this.shared.conns.watches++ % (n - 1);
    return (this.preferred + 1 + k) % n;
  }

  backoff(tries: number): number {
    return backoff(this.settings.backoff, tries);
  }

  close(): void {
    this.shared.conns.close();
  }
}
