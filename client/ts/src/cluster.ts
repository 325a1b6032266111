/**
 * The connection to a handlestore cluster: its endpoints, the node believed
 * to lead, and the retry loop every call goes through (as the Rust client's
 * cluster.rs and the Python client's client.py).
 *
 * A call is tried on the leader (or the last node that answered). On
 * UNAVAILABLE, a transport error or a per-attempt timeout it moves on: to the
 * leader the error names if there is one, else to the next node, after an
 * exponential backoff with full jitter (and at least what a node that refused
 * the call for load asked for, `grpc-retry-pushback-ms`), until the call's
 * overall deadline or its AbortSignal. Writes carry a `(clientId, seq)`
 * write id that every retry reuses, so a write retried after a leader crash
 * is applied exactly once.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Coalescer } from "./coalesce.js";
import { type Answer, Connections, parseEndpoint, type TlsOptions, type UnaryMethod, unary } from "./connections.js";
import { DeadlineError } from "./deadline.js";
import { optionsFromEnv } from "./env.js";
import { HandlestoreError } from "./errorBase.js";
import { errorOf, isServiceError, type Status, statusOf } from "./errors.js";
import type { WriteId } from "./gen/handlestore/v1/common.js";
import { Read } from "./gen/handlestore/v1/reads.js";
import { Write, type WriteResult } from "./gen/handlestore/v1/writes.js";
import { HandleStore, type HandleStoreOptions } from "./handles.js";
import { isName } from "./ids.js";
import { keyring, keyringRetire, keyringRotate, type RingKey } from "./keyring.js";
import { type ReadAnswer, readCoalescer } from "./reads.js";
import { InvalidArgumentError, UnauthenticatedError } from "./reasons.js";
import { type Backoff, backoff, leaderOf, pushback, retryable, tlsRefused } from "./retry.js";
import { StateTool, type StateToolOptions } from "./state.js";
import { type Watch, type WatchOptions, type WatchTarget, watch } from "./watch.js";
import { WriteIds } from "./writeIds.js";
import { type Queued, type WriteKind, type WriteRequest, type WriteResponse, writeCoalescer } from "./writes.js";

export interface ClientOptions {
  /** The nodes' client addresses: "host:port" or "http(s)://host:port" (an array, or comma-separated). */
  readonly endpoints: readonly string[] | string;
  /** The namespace (tenant) every call uses. Default "default". */
  readonly namespace?: string | undefined;
  /** A user's bearer token, for clusters with auth enabled. */
  readonly token?: string | undefined;
  /** TLS to the nodes (endpoints without a scheme then use https). */
  readonly tls?: TlsOptions | undefined;
  /** Overall deadline of one call across its retries, in ms (default 15000). */
  readonly deadline?: number | undefined;
  /** The longest one attempt on one node may take, in ms (default 3000). */
  readonly attemptTimeout?: number | undefined;
  /** Backoff between retries, in ms: full jitter over `base * 2^tries`, capped at `max` (default 25 and 1000). */
  readonly backoff?: Backoff | undefined;
  /** Calls carrying writes in flight at once (default 8): writes issued while all are busy share the next one. */
  readonly maxWriteCalls?: number | undefined;
  /** Calls carrying point reads in flight at once (default 8). */
  readonly maxReadCalls?: number | undefined;
}

/** Per call: an AbortSignal, and a deadline (ms) other than the client's. */
export interface CallOptions {
  readonly signal?: AbortSignal | undefined;
  readonly deadline?: number | undefined;
}

interface RawCallOptions extends CallOptions {
  /** A failure inside a successful answer that another node could fix (a write of a Submit). */
  readonly check?: ((response: never) => Status | undefined) | undefined;
}

/** What a client's clones share: connections and the calls that carry concurrent writes and reads. */
interface Shared {
  readonly conns: Connections;
  writes: Coalescer<Queued, WriteResult>;
  reads: Coalescer<Read, ReadAnswer>;
}

/** How a clone is given the connections it shares (not part of the options a caller can pass). */
const SHARED = Symbol("shared");

function checkNamespace(ns: string): void {
  if (!isName(ns)) {
    throw new InvalidArgumentError(`namespace ${JSON.stringify(ns)} may only contain A-Z a-z 0-9 _ - . (1-64 bytes)`);
  }
}

function positive(what: string, ms: number): number {
  if (!(ms > 0) || !Number.isFinite(ms)) throw new InvalidArgumentError(`${what} must be a positive number of ms`);
  return ms;
}

function endpointList(endpoints: readonly string[] | string): string[] {
  const list = typeof endpoints === "string" ? endpoints.split(",") : [...endpoints];
  return list.map((e) => e.trim()).filter((e) => e !== "");
}

/**
 * A connection to a cluster, cheap to share; `withNamespace` and
 * `withDeadline` give clients that share its connections. Nodes are dialed
 * lazily, so creating a client succeeds while nodes are down; it fails only
 * on malformed options.
 */
export class Client {
  readonly namespace: string;
  /** Overall deadline of one call, in ms. */
  readonly deadline: number;
  readonly attemptTimeout: number;
  private readonly backoffMs: Backoff;
  private ids = new WriteIds();
  private readonly shared: Shared;

  constructor(options: ClientOptions & { readonly [SHARED]?: Shared }) {
    this.namespace = options.namespace ?? "default";
    checkNamespace(this.namespace);
    if (options.token !== undefined && (options.token === "" || /[\r\n]/.test(options.token))) {
      throw new InvalidArgumentError("the token is empty or holds characters a header cannot carry");
    }
    this.deadline = positive("deadline", options.deadline ?? 15_000);
    this.attemptTimeout = positive("attemptTimeout", options.attemptTimeout ?? 3_000);
    this.backoffMs = options.backoff ?? { base: 25, max: 1_000 };
    this.shared = options[SHARED] ?? this.share(options);
  }

  /**
   * A client as the environment says (HANDLESTORE_ENDPOINTS, _NAMESPACE,
   * _CACERT, _CERT, _KEY, _TOKEN, _TOKEN_FILE), with `overrides` on top.
   */
  static fromEnv(overrides: Partial<ClientOptions> = {}, env: NodeJS.ProcessEnv = process.env): Client {
    return new Client({ ...optionsFromEnv(env), ...overrides });
  }

  private share(options: ClientOptions): Shared {
    const endpoints = endpointList(options.endpoints);
    if (endpoints.length === 0) throw new InvalidArgumentError("no endpoints given");
    const targets = endpoints.map((e) => parseEndpoint(e, options.tls !== undefined));
    const shared = { conns: new Connections(targets, options.tls, options.token) } as Shared;
    shared.writes = writeCoalescer(this, options.maxWriteCalls ?? 8);
    shared.reads = readCoalescer(this, options.maxReadCalls ?? 8);
    return shared;
  }

  /** The endpoints, as "host:port". */
  get endpoints(): readonly string[] {
    return this.shared.conns.targets;
  }

  /** The random id this client's writes are deduplicated under. */
  get clientId(): bigint {
    return this.ids.clientId;
  }

  /** The endpoint calls go to first (the leader, when known). */
  get preferred(): number {
    return this.shared.conns.preferred % this.endpoints.length;
  }

  /** Writes sent so far and the calls that carried them (of this client and its clones). */
  get writeStats(): { writes: number; calls: number } {
    const s = this.shared.writes.stats;
    return { writes: s.sent, calls: s.calls };
  }

  /** Point reads sent so far and the calls that carried them. */
  get readStats(): { reads: number; calls: number } {
    const s = this.shared.reads.stats;
    return { reads: s.sent, calls: s.calls };
  }

  /** The same connections in another namespace (with its own write ids). */
  withNamespace(namespace: string): Client {
    return new Client(this.options({ namespace }));
  }

  /** The same client with another deadline per call (and per attempt); shares its write ids. */
  withDeadline(deadline: number, attemptTimeout?: number): Client {
    const other = new Client(
      this.options({ deadline, attemptTimeout: attemptTimeout ?? Math.min(this.attemptTimeout, deadline) }),
    );
    other.ids = this.ids;
    return other;
  }

  /** This client's options with `over` on top, sharing its connections. */
  private options(over: Partial<ClientOptions>): ClientOptions & { readonly [SHARED]: Shared } {
    const base = { endpoints: this.endpoints, namespace: this.namespace, deadline: this.deadline };
    return { ...base, attemptTimeout: this.attemptTimeout, backoff: this.backoffMs, ...over, [SHARED]: this.shared };
  }

  /** A handle store of JSON values named `store` in this client's namespace. */
  handleStore<T>(store: string, options: HandleStoreOptions = {}): HandleStore<T> {
    return new HandleStore<T>(this, store, options);
  }

  /** The state tool in this client's namespace. */
  stateTool(options: StateToolOptions = {}): StateTool {
    return new StateTool(this, options);
  }

  /** Starts a watch; resolves once a node has established it. */
  watch(target: WatchTarget, options: WatchOptions = {}): Promise<Watch> {
    return watch(this, target, options);
  }

  /** The key ring of this client's namespace, oldest first (secrets only when asked for). */
  keyring(options: CallOptions & { includeSecrets?: boolean } = {}): Promise<RingKey[]> {
    return keyring(this, options);
  }

  /** Creates (`create`) or rotates the key ring; the new key's id. */
  keyringRotate(options: CallOptions & { create?: boolean } = {}): Promise<string> {
    return keyringRotate(this, options);
  }

  /** Retires a non-primary key: what it sealed no longer opens. */
  keyringRetire(keyId: string, options: CallOptions = {}): Promise<void> {
    return keyringRetire(this, keyId, options);
  }

  /** Closes the connections (of every clone). */
  close(): void {
    this.shared.conns.close();
  }

  /**
   * Sends one write (its kind and its request, made with the write id it is
   * given), alone or with other callers' writes; returns the response its
   * own method would, or throws its error.
   */
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

  /** Reads one handle or state key, alone or with other callers' reads: undefined if absent or expired. */
  read(read: Read, options: CallOptions = {}): Promise<ReadAnswer> {
    return this.shared.reads.run(read, Read.encode(read).finish().length, this.wait(options));
  }

  private wait(options: CallOptions) {
    return { signal: options.signal, deadline: options.deadline ?? this.deadline };
  }

  /** A write id for a call made with `call` (key ring changes); release it once answered. */
  writeTicket() {
    return this.ids.ticket();
  }

  /**
   * Calls a unary method with failover, retries and the deadline; returns
   * the response or throws a HandlestoreError (or the signal's reason).
   */
  async call<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, options: RawCallOptions = {}): Promise<Res> {
    const conns = this.shared.conns;
    const deadline = options.deadline ?? this.deadline;
    const end = performance.now() + deadline;
    let index = this.preferred;
    for (let tries = 0; ; tries++) {
      options.signal?.throwIfAborted();
      const timeout = Math.max(1, Math.min(end - performance.now(), this.attemptTimeout));
      const attempt = await this.attempt(index, method, request, timeout, options);
      if ("response" in attempt) {
        conns.preferred = attempt.leader ?? index;
        return attempt.response;
      }
      const { failure, leader } = attempt;
      const last = `${conns.targets[index]}: ${failure.message}`;
      index = leader ?? conns.indexOf(failure.detail.leaderAddr) ?? (index + 1) % conns.targets.length;
      conns.preferred = index;
      const wait = Math.max(backoff(this.backoffMs, tries), pushback(failure.metadata));
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
  ): Promise<{ response: Res; leader: number | undefined } | { failure: Status; leader: number | undefined }> {
    const conns = this.shared.conns;
    let answer: Answer<Res>;
    try {
      answer = await unary(conns.channel(index), method, request, conns.metadata(), timeout, options.signal);
    } catch (e) {
      options.signal?.throwIfAborted();
      if (!isServiceError(e)) throw e instanceof HandlestoreError ? e : new HandlestoreError(String(e), { cause: e });
      const s = statusOf(e);
      if (tlsRefused(s)) throw new UnauthenticatedError(`${conns.targets[index]}: TLS: ${s.message}`, { code: s.code });
      if (!retryable(s)) throw errorOf(s);
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

  /** The connections, for streams opened on one node (watch). @internal */
  get connections(): Connections {
    return this.shared.conns;
  }

  /** Milliseconds before the next try after `tries` failed ones. */
  backoff(tries: number): number {
    return backoff(this.backoffMs, tries);
  }
}
