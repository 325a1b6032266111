/**
 * Generates the TypeScript code of the wire contract, committed under src/:
 *
 * - src/gen/handlestore/v1/*.ts from proto/handlestore/v1/*.proto, by
 *   ts-proto (messages and grpc-js service definitions) driven by buf's
 *   own compiler (the @bufbuild/buf npm package: no system protoc needed);
 *   the options are in buf.gen.yaml;
 * - src/gen/google/rpc/status.ts and src/gen/google/protobuf/any.ts, the
 *   same way, from client/ts/proto/google/rpc/status.proto (vendored: a
 *   node's error details are a google.rpc.Status);
 * - src/gen/reasonTable.ts and src/gen/reasons.ts from the error table,
 *   proto/reasons.txt (scripts/reasonsModule.ts);
 * - src/gen/wire.ts from the wire constants, proto/wire.txt
 *   (scripts/wireModule.ts).
 *
 *     npm run gen          # write them
 *     npm run gen:check    # fail if the committed files differ (drift)
 *
 * Why ts-proto + @grpc/grpc-js rather than connect-es + protobuf-es: a node
 * of 0.1.0 puts a bare `ErrorDetail` in `grpc-status-details-bin`, not a
 * `google.rpc.Status` (this release's nodes send one). connect-es (2.x, protocol-grpc/trailer-status)
 * prefers that trailer to grpc-status and decodes it as a
 * `google.rpc.Status`; that fails, and the call rejects with a DATA_LOSS
 * ConnectError instead of the node's code and message, so reasons and
 * codes would be lost. grpc-js hands the trailers over as they came. ts-proto
 * is maintained, emits plain interfaces with bigint 64-bit fields and
 * discriminated unions for oneofs, and grpc-js service definitions.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { reasonModules } from "./reasonsModule.js";
import { wireModule } from "./wireModule.js";

const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "..");
const REPO = join(PACKAGE, "..", "..");
const GEN = join(PACKAGE, "src", "gen");
const REASONS_TABLE = join(REPO, "proto", "reasons.txt");
const WIRE_TABLE = join(REPO, "proto", "wire.txt");

/** Every file under `dir`, as paths relative to it, sorted. */
function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(relative(dir, join(entry.parentPath, entry.name)));
  }
  return out.sort();
}

/** Generates the code into `out` (its src/gen/...): the protobuf code, and the tables' modules beside it. */
function generate(out: string): string {
  const buf = join(PACKAGE, "node_modules", ".bin", "buf");
  execFileSync(buf, ["generate", "--template", "buf.gen.yaml", "-o", out], { cwd: PACKAGE, stdio: "inherit" });
  const gen = join(out, "src", "gen");
  for (const [name, text] of Object.entries(reasonModules(readFileSync(REASONS_TABLE, "utf8")))) {
    writeFileSync(join(gen, name), text);
  }
  writeFileSync(join(gen, "wire.ts"), wireModule(readFileSync(WIRE_TABLE, "utf8")));
  return gen;
}

/** The generated files that differ between `fresh` and `committed`. */
function drift(fresh: string, committed: string): string[] {
  const want = files(fresh);
  const have = files(committed);
  const changed = want.filter(
    (f) => !have.includes(f) || !readFileSync(join(fresh, f)).equals(readFileSync(join(committed, f))),
  );
  const stale = have.filter((f) => !want.includes(f)).map((f) => `${f} (stale)`);
  return [...changed, ...stale].map((f) => `src/gen/${f}`);
}

function write(fresh: string): void {
  rmSync(GEN, { recursive: true, force: true });
  for (const f of files(fresh)) {
    mkdirSync(dirname(join(GEN, f)), { recursive: true });
    writeFileSync(join(GEN, f), readFileSync(join(fresh, f)));
  }
}

function main(): void {
  const check = process.argv.includes("--check");
  const tmp = mkdtempSync(join(tmpdir(), "handlestore-ts-gen-"));
  try {
    const fresh = generate(tmp);
    if (!check) {
      write(fresh);
      console.log(`wrote ${files(GEN).length} files to src/gen`);
      return;
    }
    const differ = drift(fresh, GEN);
    if (differ.length > 0) {
      console.error(`the generated code differs from proto/ (run \`npm run gen\`): ${differ.join(", ")}`);
      process.exit(1);
    }
    console.log(`the generated code matches proto/ (${files(GEN).length} files)`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

main();
