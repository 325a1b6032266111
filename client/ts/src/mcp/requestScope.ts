/**
 * What the SDK's `EventStore` interface does not say: which HTTP exchange
 * an event or a replay belongs to. `storeEvent(streamId, message)` and
 * `replayEventsAfter(lastEventId, { send })` run inside the transport's
 * `handleRequest`, so a scope set around that call (an AsyncLocalStorage)
 * reaches them: the origin learns the JSON-RPC ids of the requests a
 * stream answers (its liveness record names them, so a follower can answer
 * them if the origin dies) and when its transport closes (no more events
 * will come); a follower learns when its client goes and how to end the
 * resumed response once the stream is complete.
 *
 * Without a scope everything still works, with less: see docs/typescript.md.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { setMaxListeners } from "node:events";
import { type RequestId, requestIdsOf } from "./completion.js";

/** The transport of an exchange, as far as the store uses it (the SDK 1.x and 2.x server transports). */
export interface ScopedTransport {
  sessionId?: string | undefined;
  onclose?: (() => void) | undefined;
  close(): Promise<void>;
}

export interface RequestScope {
  /** The ids of the requests in the exchange's body (a POST's), as sent. */
  readonly requests: readonly RequestId[];
  /** Who serves the exchange: a resumption served by the origin's own transport is the SDK's to forward. */
  readonly owner: object;
  /** Aborted when the HTTP exchange ends (the client went away). */
  readonly gone: AbortSignal;
  /** Aborted when the transport closes: streams it runs get no more events. */
  readonly closed: AbortSignal;
  /** Ends a resumed response (undefined where ending it would end more). */
  readonly end: (() => void) | undefined;
  /** Whether the transport ends a resumed response when `replayEventsAfter` returns (2.x, a stream it does not run). */
  readonly endsOnReturn: boolean;
}

const storage = new AsyncLocalStorage<RequestScope>();

/** The scope of the exchange this code runs in, if the author set one. */
export function currentScope(): RequestScope | undefined {
  return storage.getStore();
}

export function runInScope<T>(scope: RequestScope, fn: () => T): T {
  return storage.run(scope, fn);
}

const closedSignals = new WeakMap<ScopedTransport, AbortSignal>();

/** Aborts when `transport` closes (its `onclose` is chained, once per transport). */
export function closedSignal(transport: ScopedTransport): AbortSignal {
  const known = closedSignals.get(transport);
  if (known) return known;
  const closed = new AbortController();
  // One listener per stream the transport runs: a session's may run many at once.
  setMaxListeners(0, closed.signal);
  const before = transport.onclose;
  transport.onclose = () => {
    closed.abort();
    before?.();
  };
  closedSignals.set(transport, closed.signal);
  return closed.signal;
}

/**
 * The scope of one exchange on `transport`: `gone` is the exchange's own
 * signal. A stateless transport (no session id) serves one exchange, so
 * closing it ends a resumed response; a session's transport serves more,
 * so the response is left for the client to end.
 */
export function scopeOf(
  transport: ScopedTransport,
  parsedBody: unknown,
  gone: AbortSignal,
  endsOnReturn: boolean,
): RequestScope {
  const end = transport.sessionId === undefined ? () => void transport.close().catch(() => undefined) : undefined;
  return {
    requests: requestIdsOf(parsedBody),
    owner: transport,
    gone,
    closed: closedSignal(transport),
    end,
    endsOnReturn,
  };
}
