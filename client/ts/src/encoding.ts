/**
 * The encodings shared with the other clients: compact JSON values,
 * strict unpadded base64url, and the canonical JSON serde_json writes
 * (object keys sorted by their UTF-8 bytes) for sealed request state.
 */
import { CodecError } from "./errorBase.js";

/** Compact JSON; CodecError if `value` is not JSON. */
export function jsonText(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new CodecError(`the value is not JSON: ${(e as Error).message}`);
  }
  if (text === undefined) throw new CodecError(`the value is not JSON: ${typeof value}`);
  return text;
}

/** A stored JSON value; CodecError if it is not JSON. */
export function jsonValue(raw: string | Uint8Array): unknown {
  const text = typeof raw === "string" ? raw : Buffer.from(raw).toString("utf8");
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CodecError(`the stored value is not JSON: ${(e as Error).message}`);
  }
}

function byUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return sorted(toJSON.call(value));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort(byUtf8)) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sorted(v);
  }
  return out;
}

/** JSON as serde_json writes a `Value`: compact, object keys sorted, UTF-8. */
export function canonicalJson(value: unknown): string {
  return jsonText(sorted(value));
}

/** base64url without padding. */
export function b64(raw: Uint8Array): string {
  return Buffer.from(raw).toString("base64url");
}

const B64URL = /^[A-Za-z0-9_-]*$/;

/** Strict base64url without padding; undefined if malformed. */
export function b64Decode(text: string): Buffer | undefined {
  if (text.length % 4 === 1 || !B64URL.test(text)) return undefined;
  const raw = Buffer.from(text, "base64url");
  return b64(raw) === text ? raw : undefined;
}
