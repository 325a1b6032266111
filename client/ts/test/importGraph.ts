/**
 * The import graph of a TypeScript project, as the compiler resolves it,
 * and the cycles in it (the rule client/python/tests/test_layering.py holds
 * the Python package to).
 *
 * The graph is read from `tsc --explainFiles`, which says for every file of
 * the program each file that imports it: `import` and `import type`,
 * `export ... from`, side-effect imports, `import()` calls and
 * `typeof import()` types alike, and nothing written in comments or
 * strings. A hand-written parser would have to know every one of those
 * forms; the compiler cannot miss one it resolves.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const TSC = fileURLToPath(new URL("../node_modules/.bin/tsc", import.meta.url));

/** One import of a module of the project: the specifier written, in `from`. */
export interface Import {
  readonly from: string;
  readonly specifier: string;
}

/** Module (path relative to the project) -> the modules it imports -> the imports saying so. */
export type Graph = Map<string, Map<string, Import[]>>;

/** `tsc --explainFiles` of the project `tsconfig` (relative to `dir`), without emitting. */
export function explain(dir: string, tsconfig = "tsconfig.json"): string {
  const args = ["-p", tsconfig, "--noEmit", "--explainFiles", "--locale", "en"];
  return execFileSync(TSC, args, { cwd: dir, encoding: "utf8", maxBuffer: 64 << 20 });
}

const IMPORTED = /^\s+Imported via (["'])(.+?)\1 from file '(.+)'/;

/** The imports among the files under `under` (a folder, relative to the project) that `explained` lists. */
export function graph(explained: string, under: string): Graph {
  const inside = (path: string) => path.startsWith(`${under}/`);
  const edges: Graph = new Map();
  let file = "";
  for (const line of explained.split("\n")) {
    if (line !== "" && !/^\s/.test(line)) {
      file = line.trim();
      if (inside(file) && !edges.has(file)) edges.set(file, new Map());
      continue;
    }
    const m = IMPORTED.exec(line);
    const [specifier, from] = [m?.[2], m?.[3]];
    if (!specifier || !from || !inside(file) || !inside(from)) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    const to = edges.get(from)?.get(file) ?? [];
    edges.get(from)?.set(file, [...to, { from, specifier }]);
  }
  return edges;
}

/** The modules from `start` to `here`, following `cameFrom` back. */
function pathTo(cameFrom: ReadonlyMap<string, string>, start: string, here: string): string[] {
  const path = [here];
  for (let at = here; at !== start; ) {
    at = cameFrom.get(at) ?? start;
    path.push(at);
  }
  return path.reverse();
}

/** The shortest chain of imports from `start` back to it, if any. */
function shortestCycle(edges: Graph, start: string): string[] | undefined {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let here = queue.shift(); here !== undefined; here = queue.shift()) {
    for (const there of [...(edges.get(here)?.keys() ?? [])].sort()) {
      if (there === start) return [...pathTo(cameFrom, start, here), start];
      if (!cameFrom.has(there)) {
        cameFrom.set(there, here);
        queue.push(there);
      }
    }
  }
  return undefined;
}

/** Shortest cycles: one through each module on a cycle, unless one found before passes through it. */
export function cycles(edges: Graph): string[][] {
  const found: string[][] = [];
  const onOne = new Set<string>();
  for (const start of [...edges.keys()].sort()) {
    const cycle = onOne.has(start) ? undefined : shortestCycle(edges, start);
    if (!cycle) continue;
    found.push(cycle);
    for (const m of cycle) onOne.add(m);
  }
  return found;
}

/** The line of `imp.from` (under `dir`) that names its specifier, 1-based (0 if none does). */
function lineOf(dir: string, imp: Import): number {
  const lines = readFileSync(join(dir, imp.from), "utf8").split("\n");
  const quoted = [`"${imp.specifier}"`, `'${imp.specifier}'`];
  return lines.findIndex((l) => quoted.some((q) => l.includes(q))) + 1;
}

/** The cycle, and the imports that make it (file:line and specifier). */
export function describe(edges: Graph, cycle: readonly string[], dir: string): string {
  const lines = [cycle.join(" -> ")];
  for (let i = 0; i + 1 < cycle.length; i++) {
    for (const imp of edges.get(cycle[i] ?? "")?.get(cycle[i + 1] ?? "") ?? []) {
      lines.push(`    ${imp.from}:${lineOf(dir, imp)}: imports "${imp.specifier}"`);
    }
  }
  return lines.join("\n");
}
