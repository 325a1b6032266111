/**
 * Where the shared request-state vectors are: proto/vectors/, the
 * contract every client passes. The one place tests name the path.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The shared request-state vectors file. */
export const VECTORS_PATH: string = join(REPO, "proto", "vectors", "request_state_vectors.json");

export interface Vector {
  readonly name: string;
  readonly mode: "signed" | "encrypted";
  readonly blob: string;
  readonly encodes?: boolean;
  readonly subject: string;
  readonly tool: string | null;
  readonly ring: string[];
  readonly now: number;
  readonly expect: unknown;
}

export interface Vectors {
  readonly keys: Record<string, string>;
  readonly primary: string;
  readonly exp: number;
  readonly nonce: string;
  readonly vectors: Vector[];
  /** Tokens and the handle id each is redeemed under (single use). */
  readonly redemptions: { readonly token: string; readonly id: string }[];
}

export function loadVectors(): Vectors {
  return JSON.parse(readFileSync(VECTORS_PATH, "utf8")) as Vectors;
}
