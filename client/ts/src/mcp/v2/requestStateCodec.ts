/**
 * The v2 MCP SDK's `RequestStateCodec` (`@modelcontextprotocol/server`: the
 * MRTR `requestState` a handler returns from `inputRequired` and the seam
 * verifies when the client echoes it) keyed by the cluster's replicated key
 * ring, so state minted by one replica verifies on every other, in the
 * SDK's own wire format (its `createRequestStateCodec`, one per ring key).
 *
 * The HMAC key of each ring key is HKDF-SHA256(ring secret, no salt, info
 * `handlestore/mcp-request-state/ts-sdk-v2/hmac`): a key of its own, apart
 * from the keys the ring's other users derive. The primary mints; every key
 * of the ring verifies, so a rotation never breaks state in flight and a
 * retired key's state stops verifying once the ring is re-read (every
 * `refreshEvery` ms, and at once, at most once a second, when nothing
 * verifies).
 */
import { hkdfSync } from "node:crypto";
import {
  createRequestStateCodec,
  type RequestStateCodec,
  type RequestStateCodecOptions,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { Client } from "../../cluster.js";
import { NotFoundError } from "../../gen/reasons.js";
import type { RingKey } from "../../keyring.js";

export const HMAC_INFO = "handlestore/mcp-request-state/ts-sdk-v2/hmac";

/** The SDK codec's 32-byte key for one ring key. */
export function requestStateKey(key: RingKey): Uint8Array {
  return new Uint8Array(hkdfSync("sha256", key.secret, new Uint8Array(0), HMAC_INFO, 32));
}

export interface KeyRingCodecOptions extends Omit<RequestStateCodecOptions, "key"> {
  /** How often the ring is re-read, in ms (default 10 s): the longest a retired key may still verify. */
  readonly refreshEvery?: number | undefined;
}

interface Keyed<T> {
  readonly primary: boolean;
  readonly codec: RequestStateCodec<T>;
}

/** The codec: pass `codec.verify` as `ServerOptions.requestState.verify`, mint with `codec.mint`. */
export class KeyRingRequestStateCodec<T = unknown> implements RequestStateCodec<T> {
  private codecs: Keyed<T>[] = [];
  private fetched = 0;

  private constructor(
    private readonly client: Client,
    private readonly options: KeyRingCodecOptions,
  ) {}

  /** The codec over the ring of the client's namespace; NotFoundError if it has none (`handlestore keyring create`). */
  static async fromCluster<T = unknown>(
    client: Client,
    options: KeyRingCodecOptions = {},
  ): Promise<KeyRingRequestStateCodec<T>> {
    const codec = new KeyRingRequestStateCodec<T>(client, options);
    await codec.refresh();
    return codec;
  }

  /** Re-reads the ring now. */
  async refresh(): Promise<void> {
    const keys = await this.client.keyring({ includeSecrets: true });
    if (!keys.some((k) => k.primary && k.secret.length >= 32)) {
      throw new NotFoundError(`namespace ${this.client.namespace} has no key ring: run \`handlestore keyring create\``);
    }
    const { refreshEvery: _, ...sdk } = this.options;
    this.codecs = keys
      .filter((k) => k.secret.length >= 32)
      .map((k) => ({ primary: k.primary, codec: createRequestStateCodec<T>({ ...sdk, key: requestStateKey(k) }) }));
    this.fetched = performance.now();
  }

  private async current(): Promise<Keyed<T>[]> {
    if (performance.now() - this.fetched >= (this.options.refreshEvery ?? 10_000)) {
      // The cached ring serves until the cluster answers again.
      await this.refresh().catch(() => {});
    }
    return this.codecs;
  }

  async mint(payload: T, ctx?: ServerContext): Promise<string> {
    const primary = (await this.current()).find((k) => k.primary);
    if (!primary) throw new NotFoundError("the key ring has no primary key");
    return primary.codec.mint(payload, ctx);
  }

  /** The payload; throws the SDK's reason ('malformed', 'mac', 'expired', 'bind') when no key of the ring verifies it. */
  async verify(state: string, ctx: ServerContext): Promise<T> {
    try {
      return await verifyWith(await this.current(), state, ctx);
    } catch (e) {
      if (performance.now() - this.fetched < 1_000 || (e as Error).message !== "mac") throw e;
      await this.refresh();
      return verifyWith(this.codecs, state, ctx);
    }
  }
}

/** The first key that verifies `state`; else the verdict of the key that made it (any reason but 'mac'), else 'mac'. */
async function verifyWith<T>(codecs: readonly Keyed<T>[], state: string, ctx: ServerContext): Promise<T> {
  let verdict: unknown = new Error("mac");
  for (const { codec } of codecs) {
    try {
      return await codec.verify(state, ctx);
    } catch (e) {
      if ((e as Error).message !== "mac") verdict = e;
    }
  }
  throw verdict;
}
