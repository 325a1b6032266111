/**
 * `RequestStateCodec`: seals MCP request state (MRTR `requestState`) so
 * that any replica, in any of the client languages, opens what another
 * sealed, with keys from the cluster's replicated key ring. The format is
 * the Rust crate's (client/rust/src/request_state.rs), checked by the shared test
 * vectors:
 *
 * - signed: `v1.` b64(payload) `.` b64(HMAC-SHA256(macKey, payload))
 * - encrypted: `v1e.` b64(nonce[12] + ciphertext + tag[16]), AES-256-GCM
 *   with the bind tag as associated data
 *
 * (b64 = base64url without padding.) The payload is
 * `{"s": <state>, "exp": <unix seconds>, "b": <bind tag hex>}`, as serde_json
 * writes it (compact, keys sorted); the bind tag is HMAC-SHA256(macKey,
 * subject) or HMAC-SHA256(macKey, subject + 0x00 + tool). macKey and aesKey
 * come from each ring key by HKDF-SHA256 (no salt; info
 * `handlestore/request-state/v1/mac` and `.../aes`).
 *
 * Opening is fail-closed: a bad MAC or tag, an expired blob, another subject
 * or tool, or any malformed input gives undefined, never an error. Every
 * key of the ring is tried (blobs carry no key id), so a blob stays valid
 * across rotations until its key is retired. A JSON `null` state cannot be
 * told from a refusal: seal objects. With `withSingleUse`, a blob opens once
 * in the whole cluster (SEP-2322's one-time redemption).
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import type { Client } from "./cluster.js";
import { b64, b64Decode, canonicalJson } from "./encoding.js";
import { CodecError, HandlestoreError } from "./errorBase.js";
import { InvalidArgumentError, NotFoundError } from "./gen/reasons.js";
import type { RingKey } from "./keyring.js";
import type { SingleUse } from "./singleUse.js";

export const SIGNED_PREFIX = "v1.";
export const ENCRYPTED_PREFIX = "v1e.";
const NONCE_LEN = 12;
const TAG_LEN = 16;
/** The longest blob opening looks at. */
export const MAX_BLOB_LEN = 64 * 1024;

/** Signed (readable by the client, tamper-proof) or encrypted (also confidential). */
export type Mode = "signed" | "encrypted";

/** A ring key's derived sub-keys. */
interface Derived {
  readonly primary: boolean;
  readonly mac: Buffer;
  readonly aes: Buffer;
}

function hkdf(secret: Uint8Array, info: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), info, 32));
}

function derive(key: RingKey): Derived {
  if (key.secret.length < 32) throw new InvalidArgumentError(`key ${key.id} has no 32-byte secret`);
  return {
    primary: key.primary,
    mac: hkdf(key.secret, "handlestore/request-state/v1/mac"),
    aes: hkdf(key.secret, "handlestore/request-state/v1/aes"),
  };
}

function hmac(key: Buffer, ...parts: Uint8Array[]): Buffer {
  const h = createHmac("sha256", key);
  for (const p of parts) h.update(p);
  return h.digest();
}

function bindRaw(key: Derived, subject: string, tool: string | undefined): Buffer {
  const parts = [Buffer.from(subject)];
  if (tool !== undefined) parts.push(Buffer.from([0]), Buffer.from(tool));
  return hmac(key.mac, ...parts);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function payload(state: unknown, exp: number, bind: string): Buffer {
  let s: string;
  try {
    s = canonicalJson(state);
  } catch (e) {
    throw new CodecError(`the state is not JSON: ${(e as Error).message}`);
  }
  return Buffer.from(`{"s":${s},"exp":${exp},"b":${JSON.stringify(bind)}}`);
}

function seal(
  keys: readonly Derived[],
  mode: Mode,
  state: unknown,
  subject: string,
  tool: string | undefined,
  exp: number,
  nonce?: Uint8Array,
): string {
  const key = keys.find((k) => k.primary);
  if (!key) throw new NotFoundError("the key ring has no primary key");
  const bind = bindRaw(key, subject, tool).toString("hex");
  const body = payload(state, exp, bind);
  if (mode === "signed") return `${SIGNED_PREFIX}${b64(body)}.${b64(hmac(key.mac, body))}`;
  const iv = nonce ?? randomBytes(NONCE_LEN);
  const cipher = createCipheriv("aes-256-gcm", key.aes, iv);
  cipher.setAAD(Buffer.from(bind));
  const ct = Buffer.concat([cipher.update(body), cipher.final(), cipher.getAuthTag()]);
  return ENCRYPTED_PREFIX + b64(Buffer.concat([iv, ct]));
}

interface Opened {
  readonly state: unknown;
  readonly exp: number;
}

/** The opened payload checked against the expected binding and the clock. */
function accept(
  key: Derived,
  body: Buffer,
  subject: string,
  tool: string | undefined,
  now: number,
): Opened | undefined {
  let p: unknown;
  try {
    p = JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
  if (p === null || typeof p !== "object" || Array.isArray(p)) return undefined;
  const { s, exp, b } = p as Record<string, unknown>;
  if (!("s" in p) || typeof b !== "string" || !/^([0-9a-f]{2})*$/.test(b)) return undefined;
  if (typeof exp !== "number" || !Number.isSafeInteger(exp) || exp < 0) return undefined;
  if (!sameBytes(bindRaw(key, subject, tool), Buffer.from(b, "hex"))) return undefined;
  return now < exp ? { state: s, exp } : undefined;
}

function decrypt(key: Derived, nonce: Buffer, sealed: Buffer, aad: string): Buffer | undefined {
  try {
    const decipher = createDecipheriv("aes-256-gcm", key.aes, nonce);
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_LEN));
    return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_LEN)), decipher.final()]);
  } catch {
    return undefined;
  }
}

function openEncrypted(
  keys: readonly Derived[],
  rest: string,
  subject: string,
  tool: string | undefined,
  now: number,
): Opened | undefined {
  const raw = b64Decode(rest);
  if (!raw || raw.length < NONCE_LEN + TAG_LEN) return undefined;
  const nonce = raw.subarray(0, NONCE_LEN);
  for (const k of keys) {
    const body = decrypt(k, nonce, raw.subarray(NONCE_LEN), bindRaw(k, subject, tool).toString("hex"));
    const got = body && accept(k, body, subject, tool, now);
    if (got) return got;
  }
  return undefined;
}

function openSigned(
  keys: readonly Derived[],
  rest: string,
  subject: string,
  tool: string | undefined,
  now: number,
): Opened | undefined {
  const dot = rest.indexOf(".");
  if (dot < 0) return undefined;
  const body = b64Decode(rest.slice(0, dot));
  const tag = b64Decode(rest.slice(dot + 1));
  if (!body || !tag) return undefined;
  for (const k of keys) {
    const got = sameBytes(hmac(k.mac, body), tag) ? accept(k, body, subject, tool, now) : undefined;
    if (got) return got;
  }
  return undefined;
}

function open(
  keys: readonly Derived[],
  blob: unknown,
  subject: string,
  tool: string | undefined,
  now: number,
): Opened | undefined {
  if (typeof blob !== "string" || blob.length > MAX_BLOB_LEN) return undefined;
  if (blob.startsWith(ENCRYPTED_PREFIX))
    return openEncrypted(keys, blob.slice(ENCRYPTED_PREFIX.length), subject, tool, now);
  if (blob.startsWith(SIGNED_PREFIX)) return openSigned(keys, blob.slice(SIGNED_PREFIX.length), subject, tool, now);
  return undefined;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export interface SealOptions {
  /** Also bind the blob to this tool. */
  readonly tool?: string | undefined;
  /** Seconds the blob stays valid (default 600, at least 1). */
  readonly ttl?: number | undefined;
}

/**
 * Seals and opens request state with a key ring: fixed keys (`withKeys`),
 * or the cluster's (`fromCluster`), re-read every `refreshEvery` ms and at
 * once (at most once a second) when a blob opens under no cached key.
 */
export class RequestStateCodec {
  private keys: Derived[];
  private fetched = performance.now();
  private singleUse: SingleUse | undefined;

  private constructor(
    keys: readonly RingKey[],
    readonly mode: Mode,
    private readonly client: Client | undefined,
    private readonly refreshEvery: number,
  ) {
    this.keys = keys.map(derive);
  }

  /** A codec over fixed keys (tests, single-process use). */
  static withKeys(keys: readonly RingKey[], mode: Mode): RequestStateCodec {
    return new RequestStateCodec(keys, mode, undefined, Number.POSITIVE_INFINITY);
  }

  /** A codec over the replicated key ring of the client's namespace; NotFoundError if it has none yet. */
  static async fromCluster(
    client: Client,
    mode: Mode,
    options: { refreshEvery?: number } = {},
  ): Promise<RequestStateCodec> {
    const keys = await client.keyring({ includeSecrets: true });
    if (!keys.some((k) => k.primary)) {
      throw new NotFoundError(`namespace ${client.namespace} has no key ring: run \`handlestore keyring create\``);
    }
    return new RequestStateCodec(keys, mode, client, options.refreshEvery ?? 10_000);
  }

  /**
   * Opens each blob once in the whole cluster: a later `decode` of it, on
   * any replica, gives undefined; so does one whose redemption could not be
   * recorded (fail closed).
   */
  withSingleUse(singleUse: SingleUse): this {
    this.singleUse = singleUse;
    return this;
  }

  /** Re-reads the ring from the cluster now (nothing for fixed keys). */
  async refresh(): Promise<void> {
    if (!this.client) return;
    this.keys = (await this.client.keyring({ includeSecrets: true })).map(derive);
    this.fetched = performance.now();
  }

  private async freshKeys(): Promise<Derived[]> {
    if (this.client && performance.now() - this.fetched >= this.refreshEvery) {
      // The cached ring serves until the cluster answers again.
      await this.refresh().catch((e: unknown) => {
        if (!(e instanceof HandlestoreError)) throw e;
      });
    }
    return this.keys;
  }

  /** Seals `state` for `subject` (and `options.tool`), valid for `options.ttl` seconds. */
  async encode(state: unknown, subject: string, options: SealOptions = {}): Promise<string> {
    const keys = await this.freshKeys();
    const exp = nowSeconds() + Math.max(1, Math.floor(options.ttl ?? 600));
    return seal(keys, this.mode, state, subject, options.tool, exp);
  }

  /**
   * The state of a blob sealed for `subject` (and `tool`); undefined if
   * forged, tampered with, expired, for someone else or malformed, and with
   * single use, if it was opened before anywhere.
   */
  async decode(blob: string, subject: string, options: { tool?: string | undefined } = {}): Promise<unknown> {
    const now = nowSeconds();
    const got = await this.openFresh(blob, subject, options.tool, now);
    if (!got || !this.singleUse) return got?.state;
    try {
      const first = await this.singleUse.redeem(blob, (got.exp - now + 1) * 1_000);
      return first ? got.state : undefined;
    } catch (e) {
      if (e instanceof HandlestoreError) return undefined; // fail closed: not recorded
      throw e;
    }
  }

  /** Opens with the ring as re-read every refresh interval, and once more at once when no cached key opens it. */
  private async openFresh(blob: string, subject: string, tool: string | undefined, now: number) {
    // A retired key stops opening within one interval, also on a replica that only opens.
    const got = open(await this.freshKeys(), blob, subject, tool, now);
    if (got || !this.client || performance.now() - this.fetched < 1_000) return got;
    try {
      await this.refresh();
    } catch {
      return undefined;
    }
    return open(this.keys, blob, subject, tool, now);
  }

  /** Deterministic sealing at an expiry (unix seconds) and nonce: for test vectors. */
  encodeAt(state: unknown, subject: string, tool: string | undefined, exp: number, nonce?: Uint8Array): string {
    return seal(this.keys, this.mode, state, subject, tool, exp, nonce);
  }

  /** Opening at a given time (unix seconds): for test vectors. */
  decodeAt(blob: string, subject: string, tool: string | undefined, now: number): unknown {
    return open(this.keys, blob, subject, tool, now)?.state;
  }
}
