/**
 * `Transport`: what the modules under the client need of it. `Client` holds
 * one (its core, core.ts) and hands it to the stores (`HandleStore`,
 * `StateTool`), watches, the key ring and the write and read coalescers,
 * which know it only as this interface, so imports go one way: from
 * cluster.ts down, never back (test/layering.test.ts holds the package to
 * it, as the Python client's `Transport` protocol does there).
 *
 * Everything here is internal: `stripInternal` keeps it out of the
 * published declarations, so users see none of the plumbing.
 */
import type { Connections, UnaryMethod } from "./connections.js";
import type { Status } from "./errors.js";
import type { WriteId } from "./gen/handlestore/v1/common.js";
import type { GetResponse } from "./gen/handlestore/v1/handles.js";
import type { Read } from "./gen/handlestore/v1/reads.js";
import type { RetrieveResponse } from "./gen/handlestore/v1/state.js";
import type { Write, WriteResult } from "./gen/handlestore/v1/writes.js";
import type { CallOptions } from "./options.js";
import type { WriteTicket } from "./writeIds.js";

/** @internal One kind of write (a field of `Write`'s oneof), its request and its response. */
export type WriteOp = NonNullable<Write["op"]>;
/** @internal */
export type WriteKind = WriteOp["$case"];
/** @internal */
export type WriteRequest<K extends WriteKind> = Extract<WriteOp, { $case: K }>["value"];
/** @internal */
export type WriteResponse<K extends WriteKind> = Extract<NonNullable<WriteResult["result"]>, { $case: K }>["value"];

/** @internal A read's answer: its method's response, or undefined if the handle or key is absent or expired. */
export type ReadAnswer = GetResponse | RetrieveResponse | undefined;

/** @internal Options of a raw call. */
export interface RawCallOptions extends CallOptions {
  /** A failure inside a successful answer that another node could fix (a write of a Submit). */
  readonly check?: ((response: never) => Status | undefined) | undefined;
}

/** @internal A connection to a cluster, in one namespace, as the stores use it. */
export interface Transport {
  readonly namespace: string;
  /** Overall deadline of one call across its retries, in ms. */
  readonly deadline: number;
  /** The endpoints, as "host:port". */
  readonly endpoints: readonly string[];
  /** The connections, for streams opened on one node (watch). */
  readonly connections: Connections;

  /** Calls a unary method with failover, retries and the deadline; the response, or a HandlestoreError. */
  call<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, options?: RawCallOptions): Promise<Res>;
  /** Sends one write (built with the write id it is given), alone or with other callers' writes. */
  write<K extends WriteKind>(
    kind: K,
    build: (writeId: WriteId) => WriteRequest<K>,
    options?: CallOptions,
  ): Promise<WriteResponse<K>>;
  /** Reads one handle or state key, alone or with other callers' reads. */
  read(read: Read, options?: CallOptions): Promise<ReadAnswer>;
  /** A write id for a call made with `call` (key ring changes); release it once answered. */
  writeTicket(): WriteTicket;
  /** The endpoint a new watch opens on. */
  watchNode(): number;
  /** Milliseconds before the next try after `tries` failed ones. */
  backoff(tries: number): number;
}
