/** The shared format vectors (proto/vectors/formats.json): this client's checks decide every case as the node does. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { checkHandleId, checkKey, checkPrefix, isName } from "../src/index.js";
import { REPO } from "./vectors.js";

/** A string, or parts (strings or `{ repeat, times }`) concatenated. */
type Input = string | { repeat: string; times: number } | Input[];
interface Case {
  readonly input: Input;
  readonly valid: boolean;
  readonly why: string;
}

const FORMATS_PATH = join(REPO, "proto", "vectors", "formats.json");
const formats = JSON.parse(readFileSync(FORMATS_PATH, "utf8")) as Record<string, Case[]>;

function expand(input: Input): string {
  if (typeof input === "string") return input;
  if (Array.isArray(input)) return input.map(expand).join("");
  return input.repeat.repeat(input.times);
}

const checks: Record<string, (s: string) => boolean> = {
  handle_ids: (s) => checkHandleId(s) === undefined,
  names: (s) => isName(s),
  keys: (s) => checkKey(s) === undefined,
  prefixes: (s) => checkPrefix(s) === undefined,
};

for (const [kind, check] of Object.entries(checks)) {
  test(`format vectors: ${kind}`, () => {
    const cases = formats[kind] ?? [];
    assert.ok(cases.length > 0, `no ${kind} cases`);
    for (const c of cases) assert.equal(check(expand(c.input)), c.valid, `${JSON.stringify(c.input)}: ${c.why}`);
  });
}
