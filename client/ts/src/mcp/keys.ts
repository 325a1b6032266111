/**
 * Key naming shared by the MCP adapters and their Rust and Python twins:
 * a digest names a key after any string (a stream id, a URI, a session id)
 * so the key is valid whatever the string and reveals nothing of it, and a
 * page token continues a listing after a key (proto/src/key.rs).
 */
import { createHash } from "node:crypto";
import { b64 } from "../encoding.js";
import { base32 } from "../ids.js";

/** The first 128 bits of SHA-256 of `s`, base32 without padding (26 characters). */
export function digestName(s: string): string {
  return base32(createHash("sha256").update(s, "utf8").digest().subarray(0, 16));
}

/** The list page token that continues after `key`. */
export function pageTokenAfter(key: string): string {
  return b64(Buffer.from(key, "utf8"));
}

/** A fixed-width decimal, so keys sort in number order. */
export function padded(n: number, width: number): string {
  return String(n).padStart(width, "0");
}
