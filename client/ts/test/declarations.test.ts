/**
 * The published type declarations, as `npm run build` emits them: `Client`
 * shows its stated face and none of its plumbing (the retry loop, the
 * coalescers, write ids live in its private core), the stores and watches
 * are made by the client only, nothing marked `@internal` is left, and the
 * declarations type-check alone, as a consumer's strict project reads them.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const TSC = join(PACKAGE, "node_modules", ".bin", "tsc");

/** What a user sees on a `Client`. */
const CLIENT_FACE = [
  "attemptTimeout",
  "clientId",
  "close",
  "deadline",
  "endpoints",
  "fromEnv",
  "handleStore",
  "keyring",
  "keyringRetire",
  "keyringRotate",
  "namespace",
  "preferred",
  "readStats",
  "stateTool",
  "watch",
  "withDeadline",
  "withNamespace",
  "writeStats",
];

/** Names of the plumbing, which no declaration may carry. */
const INTERNAL = /\b(transportOf|ClientCore|Transport|RawCallOptions|writeTicket|watchNode)\b/;

let dir = "";

before(() => {
  dir = mkdtempSync(join(tmpdir(), "handlestore-ts-dts-"));
  const args = ["-p", "tsconfig.build.json", "--emitDeclarationOnly", "--outDir", join(dir, "dist")];
  execFileSync(TSC, args, { cwd: PACKAGE, stdio: "pipe" });
});
after(() => rmSync(dir, { recursive: true, force: true }));

function declarations(): string[] {
  return readdirSync(join(dir, "dist"), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".d.ts"));
}

/** The members a class declares in `file` that code outside it can use: its block's lines at member depth, by name. */
function members(file: string, cls: string): string[] {
  const text = readFileSync(join(dir, "dist", file), "utf8");
  const block = new RegExp(`export declare class ${cls}\\b[^{]*\\{\\n([\\s\\S]*?)\\n\\}`).exec(text)?.[1];
  assert.ok(block, `${file} declares ${cls}`);
  const names = block
    .split("\n")
    .filter((l) => !/^ {4}(private|protected) /.test(l))
    .map((l) => /^ {4}(?:static |readonly |get )*(\w+)/.exec(l)?.[1]);
  return [...new Set(names.filter((n): n is string => n !== undefined && n !== "constructor"))].sort();
}

test("Client declares its public face, nothing else", () => {
  assert.deepEqual(members("cluster.d.ts", "Client"), [...CLIENT_FACE].sort());
});

test("the stores and watches are made by the client: private constructors, no transport on them", () => {
  for (const [file, cls] of [
    ["handles.d.ts", "HandleStore"],
    ["state.d.ts", "StateTool"],
    ["watch.d.ts", "Watch"],
  ] as const) {
    const text = readFileSync(join(dir, "dist", file), "utf8");
    assert.match(text, new RegExp(`class ${cls}\\b[^]*?private constructor\\(\\);`), `${cls}'s constructor`);
    const shown = members(file, cls);
    for (const name of ["client", "on", "start"]) assert.ok(!shown.includes(name), `${cls} shows ${name}`);
  }
});

test("no declaration carries the plumbing or anything marked @internal", () => {
  const found = declarations().filter((f) => INTERNAL.test(readFileSync(join(dir, "dist", f), "utf8")));
  assert.deepEqual(found, []);
});

test("the declarations type-check alone (nothing stripped is still referred to)", () => {
  symlinkSync(join(PACKAGE, "node_modules"), join(dir, "node_modules"), "dir");
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  const compilerOptions = { module: "nodenext", strict: true, noEmit: true, skipLibCheck: false, types: ["node"] };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["dist/**/*.d.ts"] }));
  execFileSync(TSC, ["-p", "."], { cwd: dir, stdio: "pipe" });
});
