/**
 * `Client`, the connection to a handlestore cluster as users see it: its
 * options checked, the stores, tools and watches made from it, and the
 * clones that share its connections. The plumbing (the retry loop, the
 * coalescers, write ids) is its core's (core.ts), held in a private field,
 * so none of it is on the public type.
 */
import { parseEndpoint } from "./connections.js";
import { ClientCore, type Settings } from "./core.js";
import { optionsFromEnv } from "./env.js";
import { InvalidArgumentError } from "./gen/reasons.js";
import { ATTEMPT_TIMEOUT_MS, BACKOFF_BASE_MS, BACKOFF_MAX_MS, CALL_TIMEOUT_MS, MAX_CALLS } from "./gen/wire.js";
import { HandleStore, type HandleStoreOptions } from "./handles.js";
import { isName } from "./ids.js";
import { keyring, keyringRetire, keyringRotate, type RingKey } from "./keyring.js";
import type { CallOptions, ClientOptions } from "./options.js";
import { StateTool, type StateToolOptions } from "./state.js";
import type { Transport } from "./transport.js";
import { Watch, type WatchOptions, type WatchTarget } from "./watch.js";

function checkNamespace(ns: string): string {
  if (!isName(ns)) {
    throw new InvalidArgumentError(`namespace ${JSON.stringify(ns)} may only contain A-Z a-z 0-9 _ - . (1-64 bytes)`);
  }
  return ns;
}

function positive(what: string, ms: number): number {
  if (!(ms > 0) || !Number.isFinite(ms)) throw new InvalidArgumentError(`${what} must be a positive number of ms`);
  return ms;
}

function endpointList(endpoints: readonly string[] | string): string[] {
  const list = typeof endpoints === "string" ? endpoints.split(",") : [...endpoints];
  return list.map((e) => e.trim()).filter((e) => e !== "");
}

function checkToken(token: string | undefined): void {
  if (token !== undefined && (token === "" || /[\r\n]/.test(token))) {
    throw new InvalidArgumentError("the token is empty or holds characters a header cannot carry");
  }
}

/** The settings `options` ask for, checked (an InvalidArgumentError names what is wrong). */
function settingsOf(options: Partial<ClientOptions>): Settings {
  const namespace = checkNamespace(options.namespace ?? "default");
  checkToken(options.token);
  return {
    namespace,
    deadline: positive("deadline", options.deadline ?? CALL_TIMEOUT_MS),
    attemptTimeout: positive("attemptTimeout", options.attemptTimeout ?? ATTEMPT_TIMEOUT_MS),
    backoff: options.backoff ?? { base: BACKOFF_BASE_MS, max: BACKOFF_MAX_MS },
  };
}

/** A core on new connections to the nodes `options` name. */
function dial(options: ClientOptions): ClientCore {
  const settings = settingsOf(options);
  const endpoints = endpointList(options.endpoints);
  if (endpoints.length === 0) throw new InvalidArgumentError("no endpoints given");
  const targets = endpoints.map((e) => parseEndpoint(e, options.tls !== undefined));
  const limits = { maxWriteCalls: options.maxWriteCalls ?? MAX_CALLS, maxReadCalls: options.maxReadCalls ?? MAX_CALLS };
  return ClientCore.dial(settings, { targets, tls: options.tls, token: options.token, ...limits });
}

/** The core of a client, for the package's tests. Set in `Client`'s static block. */
let coreOf: (client: Client) => ClientCore;

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
  private readonly core: ClientCore;

  static {
    coreOf = (client) => client.core;
  }

  constructor(options: ClientOptions);
  /** @internal A client on `core` (a clone's). */
  constructor(core: ClientCore);
  constructor(from: ClientOptions | ClientCore) {
    this.core = from instanceof ClientCore ? from : dial(from);
    this.namespace = this.core.settings.namespace;
    this.deadline = this.core.settings.deadline;
    this.attemptTimeout = this.core.settings.attemptTimeout;
  }

  /**
   * A client as the environment says (HANDLESTORE_ENDPOINTS, _NAMESPACE,
   * _CACERT, _CERT, _KEY, _TOKEN, _TOKEN_FILE), with `overrides` on top.
   */
  static fromEnv(overrides: Partial<ClientOptions> = {}, env: NodeJS.ProcessEnv = process.env): Client {
    return new Client({ ...optionsFromEnv(env), ...overrides });
  }

  /** The endpoints, as "host:port". */
  get endpoints(): readonly string[] {
    return this.core.endpoints;
  }

  /** The random id this client's writes are deduplicated under. */
  get clientId(): bigint {
    return this.core.ids.clientId;
  }

  /** The endpoint calls go to first (the leader, when known). */
  get preferred(): number {
    return this.core.preferred;
  }

  /** Writes sent so far and the calls that carried them (of this client and its clones). */
  get writeStats(): { writes: number; calls: number } {
    return this.core.writeStats;
  }

  /** Point reads sent so far and the calls that carried them. */
  get readStats(): { reads: number; calls: number } {
    return this.core.readStats;
  }

  /** The same connections in another namespace (with its own write ids). */
  withNamespace(namespace: string): Client {
    return new Client(this.core.with(settingsOf({ ...this.core.settings, namespace })));
  }

  /** The same client with another deadline per call (and per attempt); shares its write ids. */
  withDeadline(deadline: number, attemptTimeout?: number): Client {
    const over = { deadline, attemptTimeout: attemptTimeout ?? Math.min(this.attemptTimeout, deadline) };
    return new Client(this.core.with(settingsOf({ ...this.core.settings, ...over }), this.core.ids));
  }

  /** A handle store of JSON values named `store` in this client's namespace. */
  handleStore<T>(store: string, options: HandleStoreOptions = {}): HandleStore<T> {
    return HandleStore.on<T>(this.core, store, options);
  }

  /** The state tool in this client's namespace. */
  stateTool(options: StateToolOptions = {}): StateTool {
    return StateTool.on(this.core, options);
  }

  /** Starts a watch; resolves once a node has established it. */
  watch(target: WatchTarget, options: WatchOptions = {}): Promise<Watch> {
    return Watch.start(this.core, target, options);
  }

  /** The key ring of this client's namespace, oldest first (secrets only when asked for). */
  keyring(options: CallOptions & { includeSecrets?: boolean } = {}): Promise<RingKey[]> {
    return keyring(this.core, options);
  }

  /** Creates (`create`) or rotates the key ring; the new key's id. */
  keyringRotate(options: CallOptions & { create?: boolean } = {}): Promise<string> {
    return keyringRotate(this.core, options);
  }

  /** Retires a non-primary key: what it sealed no longer opens. */
  keyringRetire(keyId: string, options: CallOptions = {}): Promise<void> {
    return keyringRetire(this.core, keyId, options);
  }

  /** Closes the connections (of every clone). */
  close(): void {
    this.core.close();
  }
}

/**
 * @internal The transport `client` hands its stores: raw calls with its
 * retries, for the package's own tests (admin and auth calls the typed API
 * lacks). Not exported from the package.
 */
export function transportOf(client: Client): Transport {
  return coreOf(client);
}
