/**
 * The options a caller gives a `Client` and each call, apart from the
 * client (cluster.ts) so that the modules under it (env.ts, the stores)
 * take them without importing the client back.
 */
import type { TlsOptions } from "./connections.js";
import type { Backoff } from "./retry.js";

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
