/**
 * `HandleStore<T>`: opaque, server-stored handles (a cart, a job, a draft)
 * over the cluster, values as JSON, with the HandleStore semantics of the
 * Rust crate's ClusterHandleStore and the Python client's HandleStore: mint,
 * put, get, delete, len, and update as a compare-and-set loop; TTLs as
 * ttl.ts says (> 0 that TTL, 0 the store's default, < 0 never).
 */
import { Consistency, readOptions } from "./consistency.js";
import { jsonText, jsonValue } from "./encoding.js";
import { ClosedError } from "./errorBase.js";
import { type GetResponse, HandlesService, type Ttl as WireTtl } from "./gen/handlestore/v1/handles.js";
import { InvalidArgumentError, NotFoundError, RevisionMismatchError } from "./gen/reasons.js";
import { checkHandleId, newHandleId } from "./ids.js";
import type { CallOptions } from "./options.js";
import type { Transport } from "./transport.js";
import { defaultTtlMillis, ttlMillis } from "./ttl.js";

export interface HandleStoreOptions {
  /** The TTL (ms) of writes with the default TTL; none (or 0) = never expires. */
  readonly defaultTtl?: number | undefined;
  /** Minted ids look like `<prefix>-<26 chars>`. */
  readonly prefix?: string | undefined;
  /** The consistency of get and len (default linearizable). */
  readonly consistency?: Consistency | undefined;
}

/** A value with its revisions, for compare-and-set. */
export interface Versioned<T> {
  readonly value: T;
  readonly createRevision: number;
  readonly modRevision: number;
  /** Unix milliseconds; undefined = never expires. */
  readonly expiresAtMs: number | undefined;
}

export interface WriteOutcome {
  /** Whether a live handle existed before. */
  readonly existed: boolean;
  /** The revision of the write (usable with `Consistency.atLeast`). */
  readonly revision: number;
}

export interface WriteOptions extends CallOptions {
  /** ms: > 0 expires after it, 0 (or none) the store's default, < 0 never. */
  readonly ttl?: number | undefined;
}

export interface PutOptions extends WriteOptions {
  /** Compare-and-set: only if the handle is at this revision (0 = only if absent). */
  readonly expectedRevision?: number | undefined;
}

export interface ReadOptions extends CallOptions {
  readonly consistency?: Consistency | undefined;
}

export interface DeleteOptions extends CallOptions {
  /** Only if the handle is at this revision. */
  readonly expectedRevision?: number | undefined;
}

function revision(r: number | undefined): bigint | undefined {
  return r === undefined ? undefined : BigInt(r);
}

/** A replicated store of JSON values named `store` in the client's namespace: `client.handleStore(store)`. */
export class HandleStore<T> {
  readonly prefix: string;
  readonly consistency: Consistency;
  private readonly client: Transport;
  private readonly defaultMs: bigint;
  private closed = false;

  private constructor(
    client: Transport,
    readonly store: string,
    options: HandleStoreOptions,
  ) {
    this.client = client;
    this.prefix = options.prefix ?? "";
    this.consistency = options.consistency ?? Consistency.linearizable;
    this.defaultMs = defaultTtlMillis(options.defaultTtl);
  }

  /** @internal The store `store` on a client's transport (what `Client.handleStore` makes). */
  static on<T>(client: Transport, store: string, options: HandleStoreOptions = {}): HandleStore<T> {
    return new HandleStore<T>(client, store, options);
  }

  private ttl(ttl: number | undefined, keep = false): WireTtl {
    return { ttlMs: ttlMillis(ttl), defaultTtlMs: this.defaultMs, keep };
  }

  private check(id: string): void {
    this.checkOpen();
    const why = checkHandleId(id);
    if (why) throw new InvalidArgumentError(why);
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError("store is closed");
  }

  private encode(value: T): Buffer {
    return Buffer.from(jsonText(value));
  }

  /** Stores `value` under a fresh id and returns the id. */
  async mint(value: T, options: WriteOptions = {}): Promise<string> {
    const id = newHandleId(this.prefix);
    await this.mintWithId(id, value, options);
    return id;
  }

  /** Mints under a caller-chosen id (AlreadyExistsError if it is live). */
  async mintWithId(id: string, value: T, options: WriteOptions = {}): Promise<WriteOutcome> {
    this.check(id);
    const bytes = this.encode(value);
    const resp = await this.client.write(
      "mint",
      (writeId) => ({
        namespace: this.client.namespace,
        store: this.store,
        id,
        value: bytes,
        ttl: this.ttl(options.ttl),
        writeId,
      }),
      options,
    );
    return { existed: false, revision: Number(resp.revision) };
  }

  /** Upsert; whether a live handle existed before. */
  async put(id: string, value: T, options: WriteOptions = {}): Promise<boolean> {
    return (await this.putWith(id, value, options)).existed;
  }

  /**
   * Upsert, or compare-and-set with `expectedRevision` (RevisionMismatchError
   * if the handle changed, NotFoundError if it is gone; 0 = create only).
   */
  putWith(id: string, value: T, options: PutOptions = {}): Promise<WriteOutcome> {
    return this.putRaw(id, value, this.ttl(options.ttl), options);
  }

  private async putRaw(id: string, value: T, ttl: WireTtl, options: PutOptions): Promise<WriteOutcome> {
    this.check(id);
    const bytes = this.encode(value);
    const expectedRevision = revision(options.expectedRevision);
    const resp = await this.client.write(
      "put",
      (writeId) => ({
        namespace: this.client.namespace,
        store: this.store,
        id,
        value: bytes,
        ttl,
        writeId,
        expectedRevision,
      }),
      options,
    );
    return { existed: resp.existed, revision: Number(resp.revision) };
  }

  /** The value, or undefined if the handle is absent or expired. */
  async get(id: string, options: ReadOptions = {}): Promise<T | undefined> {
    return (await this.getVersioned(id, options))?.value;
  }

  /** The value with its revisions, or undefined. */
  async getVersioned(id: string, options: ReadOptions = {}): Promise<Versioned<T> | undefined> {
    this.check(id);
    const read = readOptions(options.consistency ?? this.consistency);
    const request = { namespace: this.client.namespace, store: this.store, id, read };
    const resp = (await this.client.read({ op: { $case: "get", value: request } }, options)) as GetResponse | undefined;
    if (resp === undefined) return undefined;
    return {
      value: jsonValue(resp.value) as T,
      createRevision: Number(resp.createRevision),
      modRevision: Number(resp.modRevision),
      expiresAtMs: resp.expiresAtMs === 0n ? undefined : Number(resp.expiresAtMs),
    };
  }

  /** Deletes; whether a live handle existed. */
  async delete(id: string, options: CallOptions = {}): Promise<boolean> {
    return (await this.deleteWith(id, options)).existed;
  }

  /** Deletes; with `expectedRevision`, only if unchanged. */
  async deleteWith(id: string, options: DeleteOptions = {}): Promise<WriteOutcome> {
    this.check(id);
    const expectedRevision = revision(options.expectedRevision);
    const resp = await this.client.write(
      "delete",
      (writeId) => ({ namespace: this.client.namespace, store: this.store, id, writeId, expectedRevision }),
      options,
    );
    return { existed: resp.existed, revision: Number(resp.revision) };
  }

  /** The number of live (unexpired) handles in the store. */
  async len(options: ReadOptions = {}): Promise<number> {
    this.checkOpen();
    const read = readOptions(options.consistency ?? this.consistency);
    const request = { namespace: this.client.namespace, store: this.store, read };
    return Number((await this.client.call(HandlesService.len, request, options)).len);
  }

  /**
   * Read-modify-write without lost updates: reads the value, calls `fn`
   * (which returns the new value, or undefined after changing the value in
   * place), and writes it back only if nobody wrote in between, else tries
   * again. Keeps the handle's expiry. The value written, or undefined if the
   * handle is absent. `fn` may run several times.
   */
  async update(id: string, fn: (value: T) => T | undefined, options: CallOptions = {}): Promise<T | undefined> {
    // The first read may be stale: the leader checks the compare-and-set
    // against the revision read, so an old value is refused, never written
    // over. After a conflict, or if the handle seems absent (a node behind
    // the write that made it), reads are linearizable.
    let consistency = Consistency.stale;
    for (;;) {
      const current = await this.getVersioned(id, { ...options, consistency });
      if (current === undefined) {
        if (consistency === Consistency.linearizable) return undefined;
        consistency = Consistency.linearizable;
        continue;
      }
      consistency = Consistency.linearizable;
      const value = fn(current.value) ?? current.value;
      try {
        await this.putRaw(id, value, this.ttl(0, true), { ...options, expectedRevision: current.modRevision });
        return value;
      } catch (e) {
        if (e instanceof RevisionMismatchError) continue;
        if (e instanceof NotFoundError) return undefined;
        throw e;
      }
    }
  }

  /** Refuses further calls on this store (the client stays open). */
  close(): void {
    this.closed = true;
  }
}
