/**
 * Where the shared request-state vectors are: proto/vectors/ (their new
 * home), else client/testdata/ (where they were). The one place tests name
 * the path.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

const CANDIDATES = ["proto/vectors/request_state_vectors.json", "client/testdata/request_state_vectors.json"];

/** The vectors file, tried in order: proto/vectors, then client/testdata. */
export const VECTORS_PATH: string =
  CANDIDATES.map((p) => join(REPO, p)).find((p) => existsSync(p)) ?? join(REPO, CANDIDATES[0] as string);

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
}

export function loadVectors(): Vectors {
  return JSON.parse(readFileSync(VECTORS_PATH, "utf8")) as Vectors;
}
