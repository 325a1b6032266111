/**
 * `StateTool`: hierarchical keys ("checkpoints/agent-7/latest") with JSON
 * or byte values, listed by prefix in key order, written in atomic batches,
 * replicated like handles (the Rust crate's ClusterStateTool, the Python
 * client's StateTool). A value is stored as bytes when it is a Uint8Array
 * (a Buffer), else as JSON; reading it back gives the same kind.
 */
import { Consistency, readOptions } from "./consistency.js";
import { jsonText, jsonValue } from "./encoding.js";
import type { Ttl as WireTtl } from "./gen/handlestore/v1/handles.js";
import {
  type RetrieveResponse,
  StateService,
  type StateValue,
  type StateEntry as WireEntry,
} from "./gen/handlestore/v1/state.js";
import { InvalidArgumentError } from "./gen/reasons.js";
import { checkKey, checkPrefix } from "./ids.js";
import type { CallOptions } from "./options.js";
import type { Transport } from "./transport.js";
import { defaultTtlMillis, ttlMillis } from "./ttl.js";

export interface StateEntry {
  readonly key: string;
  /** undefined in a list without values. */
  readonly value: unknown;
  readonly createRevision: number;
  readonly modRevision: number;
  /** Unix milliseconds; undefined = never expires. */
  readonly expiresAtMs: number | undefined;
}

/** One write of a `batchStore`. */
export interface StoreItem {
  readonly key: string;
  readonly value: unknown;
  /** ms: > 0 expires after it, 0 (or none) the tool's default, < 0 never. */
  readonly ttl?: number | undefined;
  /** Compare-and-set: only if the key is at this revision (0 = absent). */
  readonly expectedRevision?: number | undefined;
  /** Keep the expiry a live key has (`ttl` applies only if it is absent). */
  readonly keepTtl?: boolean | undefined;
}

export interface Deleted {
  /** How many live keys were deleted. */
  readonly count: number;
  /** Prefix deletes: more keys remain under the prefix. */
  readonly more: boolean;
  readonly revision: number;
}

export interface ListPage {
  readonly entries: StateEntry[];
  /** undefined when there are no more keys. */
  readonly nextPageToken: string | undefined;
  readonly readRevision: number;
}

export interface StateToolOptions {
  /** The TTL (ms) of writes with the default TTL; none (or 0) = never expires. */
  readonly defaultTtl?: number | undefined;
  /** The consistency of reads (default linearizable). */
  readonly consistency?: Consistency | undefined;
}

export interface StoreOptions extends CallOptions {
  readonly ttl?: number | undefined;
  readonly expectedRevision?: number | undefined;
  /** Keep the expiry a live key has (`ttl` applies only if it is absent). */
  readonly keepTtl?: boolean | undefined;
}

export interface ReadOptions extends CallOptions {
  readonly consistency?: Consistency | undefined;
}

export interface ListOptions extends ReadOptions {
  /** Keys per page (0 or none = 100, at most 1000). */
  readonly limit?: number | undefined;
  readonly pageToken?: string | undefined;
  readonly withValues?: boolean | undefined;
}

export function valueToWire(value: unknown): StateValue {
  if (value instanceof Uint8Array) return { kind: { $case: "bytes", value: Buffer.from(value) } };
  return { kind: { $case: "json", value: jsonText(value) } };
}

export function valueFromWire(value: StateValue | undefined): unknown {
  switch (value?.kind?.$case) {
    case "bytes":
      return value.kind.value;
    case "json":
      return jsonValue(value.kind.value);
    default:
      return undefined;
  }
}

function entryFromWire(e: WireEntry): StateEntry {
  return {
    key: e.key,
    value: valueFromWire(e.value),
    createRevision: Number(e.createRevision),
    modRevision: Number(e.modRevision),
    expiresAtMs: e.expiresAtMs === 0n ? undefined : Number(e.expiresAtMs),
  };
}

function checked(why: string | undefined): void {
  if (why) throw new InvalidArgumentError(why);
}

function revision(r: number | undefined): bigint | undefined {
  return r === undefined ? undefined : BigInt(r);
}

/** The state tool in the client's namespace: `client.stateTool()`. */
export class StateTool {
  readonly consistency: Consistency;
  private readonly client: Transport;
  private readonly defaultMs: bigint;

  private constructor(client: Transport, options: StateToolOptions) {
    this.client = client;
    this.consistency = options.consistency ?? Consistency.linearizable;
    this.defaultMs = defaultTtlMillis(options.defaultTtl);
  }

  /** @internal The state tool on a client's transport (what `Client.stateTool` makes). */
  static on(client: Transport, options: StateToolOptions = {}): StateTool {
    return new StateTool(client, options);
  }

  private ttl(ttl: number | undefined, keep = false): WireTtl {
    return { ttlMs: ttlMillis(ttl), defaultTtlMs: this.defaultMs, keep };
  }

  private read(options: ReadOptions) {
    return readOptions(options.consistency ?? this.consistency);
  }

  private get namespace(): string {
    return this.client.namespace;
  }

  /** Stores `value`; the write's revision. With `expectedRevision`, only if the key is at it (0 = absent). */
  async store(key: string, value: unknown, options: StoreOptions = {}): Promise<number> {
    checked(checkKey(key));
    const wire = valueToWire(value);
    const expectedRevision = revision(options.expectedRevision);
    const ttl = this.ttl(options.ttl, options.keepTtl);
    const resp = await this.client.write(
      "store",
      (writeId) => ({ namespace: this.namespace, key, value: wire, ttl, expectedRevision, writeId }),
      options,
    );
    return Number(resp.revision);
  }

  /** The entry, or undefined if the key is absent or expired. */
  async retrieve(key: string, options: ReadOptions = {}): Promise<StateEntry | undefined> {
    checked(checkKey(key));
    const request = { namespace: this.namespace, key, read: this.read(options) };
    const resp = (await this.client.read({ op: { $case: "retrieve", value: request } }, options)) as
      | RetrieveResponse
      | undefined;
    return resp?.entry ? entryFromWire(resp.entry) : undefined;
  }

  /** Just the value, or undefined. */
  async get(key: string, options: ReadOptions = {}): Promise<unknown> {
    return (await this.retrieve(key, options))?.value;
  }

  /** Deletes one key; with `expectedRevision`, only if unchanged. */
  async delete(key: string, options: CallOptions & { expectedRevision?: number | undefined } = {}): Promise<Deleted> {
    checked(checkKey(key));
    return this.deleteRaw(key, false, 0, revision(options.expectedRevision), options);
  }

  /** Deletes up to `limit` keys (0 or none = 1000, at most 10000) under `prefix`, atomically. */
  async deletePrefix(prefix: string, options: CallOptions & { limit?: number | undefined } = {}): Promise<Deleted> {
    checked(checkPrefix(prefix));
    if (prefix === "") throw new InvalidArgumentError("a prefix delete needs a non-empty prefix");
    return this.deleteRaw(prefix, true, options.limit ?? 0, undefined, options);
  }

  private async deleteRaw(
    key: string,
    prefix: boolean,
    limit: number,
    expectedRevision: bigint | undefined,
    options: CallOptions,
  ): Promise<Deleted> {
    const resp = await this.client.write(
      "stateDelete",
      (writeId) => ({ namespace: this.namespace, key, prefix, limit, expectedRevision, writeId }),
      options,
    );
    return { count: Number(resp.deleted), more: resp.more, revision: Number(resp.revision) };
  }

  /** One page of the keys under `prefix`, in key order. */
  async list(prefix = "", options: ListOptions = {}): Promise<ListPage> {
    checked(checkPrefix(prefix));
    const request = {
      namespace: this.namespace,
      prefix,
      limit: options.limit ?? 0,
      pageToken: options.pageToken ?? "",
      withValues: options.withValues ?? false,
      read: this.read(options),
    };
    const resp = await this.client.call(StateService.list, request, options);
    return {
      entries: resp.entries.map(entryFromWire),
      nextPageToken: resp.nextPageToken || undefined,
      readRevision: Number(resp.readRevision),
    };
  }

  /** Every entry under `prefix`, page after page; later pages are read at least at the first page's revision. */
  async *scan(prefix = "", options: ListOptions = {}): AsyncGenerator<StateEntry> {
    let page = await this.list(prefix, options);
    for (;;) {
      yield* page.entries;
      if (page.nextPageToken === undefined) return;
      const at = Consistency.atLeast(page.readRevision);
      page = await this.list(prefix, { ...options, pageToken: page.nextPageToken, consistency: at });
    }
  }

  async exists(key: string, options: ReadOptions = {}): Promise<boolean> {
    checked(checkKey(key));
    const request = { namespace: this.namespace, key, read: this.read(options) };
    return (await this.client.call(StateService.exists, request, options)).exists;
  }

  /** All or nothing, in one Raft entry: if any compare-and-set fails, nothing is written. The revision. */
  async batchStore(items: readonly StoreItem[], options: CallOptions = {}): Promise<number> {
    for (const item of items) checked(checkKey(item.key));
    const wire = items.map((i) => ({
      key: i.key,
      value: valueToWire(i.value),
      ttl: this.ttl(i.ttl, i.keepTtl),
      expectedRevision: revision(i.expectedRevision),
    }));
    const resp = await this.client.write(
      "batchStore",
      (writeId) => ({ namespace: this.namespace, items: wire, writeId }),
      options,
    );
    return Number(resp.revision);
  }

  /** One consistent view of several keys, in the order asked (undefined for an absent key). */
  async batchRetrieve(keys: readonly string[], options: ReadOptions = {}): Promise<(StateEntry | undefined)[]> {
    for (const key of keys) checked(checkKey(key));
    const request = { namespace: this.namespace, keys: [...keys], read: this.read(options) };
    const resp = await this.client.call(StateService.batchRetrieve, request, options);
    return resp.entries.map((m) => (m.entry ? entryFromWire(m.entry) : undefined));
  }
}
