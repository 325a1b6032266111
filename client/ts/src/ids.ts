/**
 * Handle ids, names and state keys, checked as the node checks them
 * (proto/src/id.rs, proto/src/key.rs), so malformed input is refused before
 * any call. A handle id is `<prefix>-<26 chars>` or the 26 chars alone: 128
 * CSPRNG bits in RFC 4648 base32 (A-Z, 2-7), no padding.
 */
import { randomFillSync } from "node:crypto";

/** Length of an id's random part. */
export const ID_LEN = 26;
/** Longest id prefix, namespace or store name, in bytes. */
export const MAX_NAME_LEN = 64;
/** Longest state key, in bytes. */
export const MAX_KEY_LEN = 1024;

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const NAME = /^[A-Za-z0-9_.-]+$/;
const RANDOM = /^[A-Z2-7]{26}$/;
// Unicode's control characters (Cc), as Rust's char::is_control.
const CONTROL = /\p{Cc}/u;

/** RFC 4648 base32, upper case, without padding. */
export function base32(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

const POOL = Buffer.alloc(4096);
let pooled = POOL.length;

/** 16 bytes from the OS CSPRNG, drawn from a pool refilled 4 KiB at a time (one call to the OS for 256 ids). */
function randomId(): Uint8Array {
  if (pooled + 16 > POOL.length) {
    randomFillSync(POOL);
    pooled = 0;
  }
  pooled += 16;
  // A copy: the pool's bytes are overwritten at the next refill.
  return Uint8Array.prototype.slice.call(POOL, pooled - 16, pooled);
}

/** A fresh id; with a prefix, `<prefix>-<id>`. */
export function newHandleId(prefix = ""): string {
  const id = base32(randomId());
  return prefix ? `${prefix}-${id}` : id;
}

/** A namespace, store name or id prefix: A-Z a-z 0-9 _ - . (1 to maxLen bytes). */
export function isName(s: string, maxLen = MAX_NAME_LEN): boolean {
  return typeof s === "string" && s.length > 0 && s.length <= maxLen && NAME.test(s);
}

function shown(s: string): string {
  return JSON.stringify([...s].slice(0, 80).join(""));
}

/** Why `id` is not a well-formed handle id, or undefined if it is one. */
export function checkHandleId(id: unknown): string | undefined {
  if (typeof id !== "string") return "a handle id is a string";
  if (id === "") return "handle id must not be empty";
  if (Buffer.byteLength(id) > MAX_NAME_LEN + 1 + ID_LEN) return `handle id ${shown(id)}... is too long`;
  let random = id;
  if (id.length > ID_LEN && id[id.length - ID_LEN - 1] === "-") {
    const prefix = id.slice(0, -ID_LEN - 1);
    random = id.slice(-ID_LEN);
    if (!isName(prefix)) return `handle id ${shown(id)} has an invalid prefix (A-Z a-z 0-9 _ - . only)`;
  }
  // 26 characters carry 130 bits: the last one's two low bits must be zero.
  const last = BASE32.indexOf(random.charAt(ID_LEN - 1));
  if (RANDOM.test(random) && (last & 3) === 0) return undefined;
  return `handle id ${shown(id)} is malformed: expected 26 base32 characters (A-Z, 2-7), optionally after "<prefix>-"`;
}

function checkCommon(what: string, s: string): string | undefined {
  const bytes = Buffer.byteLength(s);
  if (bytes > MAX_KEY_LEN) return `${what} is ${bytes} bytes; the limit is ${MAX_KEY_LEN}`;
  if (CONTROL.test(s)) return `${what} ${shown(s)} contains a control character`;
  return undefined;
}

/** Why `key` is not a well-formed state key (non-empty, no control characters, no empty segment), or undefined. */
export function checkKey(key: unknown): string | undefined {
  if (typeof key !== "string") return "a key is a string";
  if (key === "") return "key must not be empty";
  const common = checkCommon("key", key);
  if (common) return common;
  if (key.split("/").some((segment) => segment === "")) {
    return `key ${shown(key)} has an empty segment (no leading, trailing or doubled '/')`;
  }
  return undefined;
}

/** Why `prefix` is not a well-formed key prefix (empty is every key), or undefined. */
export function checkPrefix(prefix: unknown): string | undefined {
  if (typeof prefix !== "string") return "a prefix is a string";
  return checkCommon("prefix", prefix);
}
