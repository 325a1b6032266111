/**
 * Time to live, in milliseconds, with the HandleStore convention (mcpkit's,
 * and the Rust and Python clients'):
 *
 * - `> 0`: the entry expires that long after the write;
 * - `0` (`Ttl.DEFAULT`, or no TTL given): the store's default TTL, whose own 0 means never;
 * - `< 0` (`Ttl.NEVER`, or `Infinity`): never expires, whatever the default.
 *
 * Expiry is decided by the cluster (the leader's clock), never by the client.
 */
import { InvalidArgumentError } from "./gen/reasons.js";

export const Ttl = {
  /** The store's default TTL. */
  DEFAULT: 0,
  /** Never expires, whatever the store's default. */
  NEVER: -1,
} as const;

/** The signed milliseconds of the wire. A positive TTL below a millisecond rounds up to one: it must still expire. */
export function ttlMillis(ttl: number | undefined): bigint {
  if (ttl === undefined || ttl === 0) return 0n;
  if (typeof ttl !== "number" || Number.isNaN(ttl))
    throw new InvalidArgumentError(`a TTL is milliseconds, not ${String(ttl)}`);
  if (ttl < 0 || ttl === Number.POSITIVE_INFINITY) return -1n;
  // The node refuses TTLs over ten years; any number of ms here fits the wire's int64.
  return BigInt(Math.min(Math.max(1, Math.ceil(ttl)), Number.MAX_SAFE_INTEGER));
}

/** A store's default TTL on the wire: 0 = never. */
export function defaultTtlMillis(ttl: number | undefined): bigint {
  const ms = ttlMillis(ttl);
  return ms > 0n ? ms : 0n;
}
