/**
 * @handlestore/client: the TypeScript client of handlestore, the
 * Raft-replicated store for the state that stateless MCP servers still need.
 *
 * ```ts
 * const client = new Client({ endpoints: ["127.0.0.1:7401", "127.0.0.1:7402", "127.0.0.1:7403"] });
 * const carts = client.handleStore<Cart>("cart", { prefix: "cart", defaultTtl: 3_600_000 });
 * const id = await carts.mint({ items: [] });
 * await carts.update(id, (c) => { c.items.push("sku-1"); });   // compare-and-set loop
 * const cart = await carts.get(id);                             // from any node
 * ```
 */
export { ClientStateStore } from "./clientState.js";
export { Client } from "./cluster.js";
export type { StreamMethod, TlsOptions, UnaryMethod } from "./connections.js";
export { Consistency } from "./consistency.js";
export { DeadlineError } from "./deadline.js";
export { optionsFromEnv, readTokenFile, tlsFromFiles } from "./env.js";
export {
  ClosedError,
  CodecError,
  type ErrorInit,
  HandlestoreError,
  UnimplementedError,
} from "./errorBase.js";
export type { Status } from "./errors.js";
export * from "./gen/reasons.js";
export {
  type DeleteOptions,
  HandleStore,
  type HandleStoreOptions,
  type PutOptions,
  type ReadOptions,
  type Versioned,
  type WriteOptions,
  type WriteOutcome,
} from "./handles.js";
export { checkHandleId, checkKey, checkPrefix, isName, newHandleId } from "./ids.js";
export type { RingKey } from "./keyring.js";
export type { CallOptions, ClientOptions } from "./options.js";
/** The generated wire types, for tools that talk to the services directly. */
export * as proto from "./proto.js";
export { type Mode, RequestStateCodec, type SealOptions } from "./requestState.js";
export { REDEEMED_STORE, redeemedId, SingleUse } from "./singleUse.js";
export {
  type Deleted,
  type ListOptions,
  type ListPage,
  type StateEntry,
  StateTool,
  type StateToolOptions,
  type StoreItem,
  type StoreOptions,
} from "./state.js";
export { Ttl } from "./ttl.js";
export { type Change, type ChangeKind, Watch, type WatchBatch, type WatchOptions, type WatchTarget } from "./watch.js";
export type { WriteTicket } from "./writeIds.js";
