/**
 * The package's modules import each other one way: no module of src/
 * imports, directly or through others, a module that imports it. Every
 * import counts, `import type` too (test/importGraph.ts says how the graph
 * is read). The stores know the client only as the `Transport` interface
 * (src/transport.ts), as the Python client's do. No cluster needed.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { cycles, describe as describeCycle, explain, graph } from "./importGraph.js";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));

test("the package's modules import one way", () => {
  const edges = graph(explain(PACKAGE, "tsconfig.build.json"), "src");
  // The graph holds the package, its subfolders, and type-only imports.
  assert.ok(edges.get("src/cluster.ts")?.has("src/handles.ts"), "cluster.ts imports handles.ts");
  assert.ok(edges.get("src/mcp/v2/serverEventBus.ts")?.has("src/cluster.ts"), "an import from a subfolder");
  assert.ok(edges.get("src/handles.ts")?.has("src/transport.ts"), "an `import type` of the transport");
  const found = cycles(edges);
  const said = found.map((c) => describeCycle(edges, c, PACKAGE)).join("\n");
  assert.deepEqual(found, [], `import cycles in src/:\n${said}`);
});

/** Ways b<n>.ts imports a<n>.ts back, a<n>.ts importing b<n>.ts. */
const BACK: Readonly<Record<string, string>> = {
  import: 'import { a } from "./a1.js";\nexport const b = a;\n',
  "import type": 'import type { A } from "./a2.js";\nexport type B = A;\n',
  "inline type": 'import { type A } from "./a3.js";\nexport type B = A;\n',
  "export from": 'export { a } from "./a4.js";\n',
  "export type from": 'export type { A } from "./a5.js";\n',
  "export star": 'export * from "./a6.js";\n',
  "side effect": 'import "./a7.js";\n',
  "import() type": 'export type B = typeof import("./a8.js");\n',
  "import() call": 'export async function b() {\n  return (await import("./a9.js")).a;\n}\n',
};

/** A project of the pairs of BACK, and a one-way chain c -> d -> e that mentions c only in a comment. */
function fixture(dir: string): void {
  const files: Record<string, string> = {
    "package.json": '{ "type": "module" }\n',
    "tsconfig.json": JSON.stringify({
      compilerOptions: { module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, types: [] },
      include: ["src"],
    }),
    "src/c.ts": 'import { d } from "./d.js";\nexport const c = d;\n',
    "src/d.ts": 'import type { E } from "./e.js";\nexport const d: E = 1;\n',
    "src/e.ts": '// import("./c.js") is only said here\nexport type E = number; // "./c.js"\n',
  };
  Object.values(BACK).forEach((back, i) => {
    files[`src/a${i + 1}.ts`] = `import "./b${i + 1}.js";\nexport const a = 1;\nexport type A = number;\n`;
    files[`src/b${i + 1}.ts`] = back;
  });
  mkdirSync(join(dir, "src"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
}

describe("the cycle finder", () => {
  test("every kind of import closes a cycle, and a one-way chain is none", () => {
    const dir = mkdtempSync(join(tmpdir(), "handlestore-ts-layering-"));
    try {
      fixture(dir);
      const edges = graph(explain(dir), "src");
      const want = Object.keys(BACK).map((_, i) => [`src/a${i + 1}.ts`, `src/b${i + 1}.ts`, `src/a${i + 1}.ts`]);
      const byName = (x: string[], y: string[]) => (x[0] ?? "").localeCompare(y[0] ?? "");
      assert.deepEqual(cycles(edges).sort(byName), want.sort(byName));
      assert.deepEqual([...(edges.get("src/e.ts")?.keys() ?? [])], [], "a comment or a string is no import");
      assert.equal(
        describeCycle(edges, ["src/a2.ts", "src/b2.ts", "src/a2.ts"], dir),
        'src/a2.ts -> src/b2.ts -> src/a2.ts\n    src/a2.ts:1: imports "./b2.js"\n    src/b2.ts:1: imports "./a2.js"',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
