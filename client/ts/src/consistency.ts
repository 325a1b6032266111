/**
 * Read consistency, chosen per store or per call: `linearizable` (the
 * default: read-index from the leader, served once the node has applied
 * it), `atLeast(revision)` (read-your-writes without a leader round trip) or
 * `stale` (whatever the serving node has applied).
 */
import { type ReadOptions, Consistency as Wire } from "./gen/handlestore/v1/common.js";

export type Consistency =
  | { readonly kind: "linearizable" }
  | { readonly kind: "stale" }
  | { readonly kind: "atLeast"; readonly revision: number };

export const Consistency = {
  linearizable: { kind: "linearizable" } as Consistency,
  stale: { kind: "stale" } as Consistency,
  /** Served by a node that has applied at least `revision`. */
  atLeast(revision: number): Consistency {
    return { kind: "atLeast", revision };
  },
} as const;

export function readOptions(c: Consistency): ReadOptions {
  switch (c.kind) {
    case "linearizable":
      return { consistency: Wire.CONSISTENCY_LINEARIZABLE, minRevision: 0n };
    case "stale":
      return { consistency: Wire.CONSISTENCY_STALE, minRevision: 0n };
    case "atLeast":
      return { consistency: Wire.CONSISTENCY_AT_LEAST, minRevision: BigInt(c.revision) };
  }
}
