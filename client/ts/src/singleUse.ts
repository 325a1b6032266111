/**
 * Single use across replicas: SEP-2322 says the one-time redemption of MRTR
 * `requestState` MUST be enforced by the server, and with several replicas
 * "this replica has seen it" is not enough. A redemption is a create-only
 * mint of a handle whose id is derived from the token (SHA-256, 128 bits,
 * base32), in the store the Rust and Python clients use, so replicas in
 * any of the languages refuse each other's redeemed tokens (the shared
 * vectors' `redemptions` hold the ids). It is replicated like every write:
 * a failover never forgets it, and a retry applies it once.
 */
import { createHash } from "node:crypto";
import type { Client } from "./cluster.js";
import { AlreadyExistsError } from "./gen/reasons.js";
import type { HandleStore } from "./handles.js";
import { base32 } from "./ids.js";
import type { CallOptions } from "./options.js";

/** The handle store redemptions go to, in the client's namespace. */
export const REDEEMED_STORE = "mcp-redeemed";

/** The handle id a token is redeemed under. */
export function redeemedId(token: string): string {
  return base32(createHash("sha256").update(token, "utf8").digest().subarray(0, 16));
}

/** Redeems tokens once across every replica. */
export class SingleUse {
  private readonly store: HandleStore<boolean>;

  constructor(client: Client) {
    this.store = client.handleStore<boolean>(REDEEMED_STORE);
  }

  /**
   * True if this was the token's first redemption anywhere, false if it was
   * redeemed before. The record is kept `ttlMs` (at least a second): give
   * the token's remaining lifetime, after which it is refused anyway. A
   * rejection leaves the outcome unknown: treat the token as not redeemed
   * (fail closed).
   */
  async redeem(token: string, ttlMs: number, options: CallOptions = {}): Promise<boolean> {
    try {
      await this.store.mintWithId(redeemedId(token), true, { ...options, ttl: Math.max(1_000, ttlMs) });
      return true;
    } catch (e) {
      if (e instanceof AlreadyExistsError) return false;
      throw e;
    }
  }
}
