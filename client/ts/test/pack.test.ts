/**
 * The package as a user gets it: `npm pack` makes the tarball, which
 * installs into an empty project (beside the versions of its dependencies
 * and peers this lockfile pins); there its three entry points resolve with
 * their type declarations under `tsc`, and the cart example, importing
 * `@handlestore/client` instead of the sources, serves a cart flow on a
 * real cluster.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { skipReason, useCluster } from "./cluster.js";
import { ServerProcess } from "./mcpHttp.js";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const EXAMPLES = join(PACKAGE, "examples");
const TSC = join(PACKAGE, "node_modules", ".bin", "tsc");
/** What the empty project installs beside the tarball, at the versions of this package's lockfile. */
const ALONGSIDE = [
  "@grpc/grpc-js",
  "@bufbuild/protobuf",
  "@modelcontextprotocol/sdk",
  "@modelcontextprotocol/server",
  "zod",
  "@types/node",
];

/** Every public entry point, used as a consumer would: compiled by tsc against the installed declarations. */
const CONSUMER = `import { Client, type HandleStore, SingleUse, NotFoundError, Ttl } from "@handlestore/client";
import { ClusterEventStore, ClusterTaskStore } from "@handlestore/client/mcp";
import { ClusterServerEventBus, KeyRingRequestStateCodec } from "@handlestore/client/mcp-v2";

export async function use(client: Client): Promise<number | undefined> {
  const carts: HandleStore<{ items: string[] }> = client.handleStore("cart", { prefix: "cart" });
  const id: string = await carts.mint({ items: [] }, { ttl: Ttl.NEVER });
  const single = new SingleUse(client);
  await single.redeem(id, 1_000);
  const stores = [new ClusterEventStore(client), new ClusterTaskStore(client)];
  const bus: Promise<ClusterServerEventBus> = ClusterServerEventBus.start(client);
  void KeyRingRequestStateCodec.fromCluster(client);
  void bus;
  return stores.length + ((await carts.get(id))?.items.length ?? 0) + (NotFoundError.name ? 0 : 1);
}
`;

function run(cmd: string, args: readonly string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function lockedVersion(name: string): string {
  const lock = JSON.parse(readFileSync(join(PACKAGE, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string }>;
  };
  const version = lock.packages[`node_modules/${name}`]?.version;
  if (!version) throw new Error(`${name} is not in package-lock.json`);
  return version;
}

/** `npm pack` into `dir`; the tarball's path. */
function pack(dir: string): string {
  run("npm", ["pack", "--pack-destination", dir, "--silent"], PACKAGE);
  const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"));
  if (!tarball) throw new Error(`npm pack left no tarball in ${dir}`);
  return join(dir, tarball);
}

/** An empty ESM project with the tarball installed; its directory. */
function emptyProjectWith(tarball: string, root: string): string {
  const app = join(root, "app");
  cpSync(EXAMPLES, join(app, "examples"), { recursive: true });
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  const pinned = ALONGSIDE.map((name) => `${name}@${lockedVersion(name)}`);
  run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball, ...pinned], app);
  return app;
}

/** The example's sources with the package's name where they import the sources of the package. */
function importThePackage(app: string): void {
  for (const file of readdirSync(join(app, "examples")).filter((f) => f.endsWith(".ts"))) {
    const path = join(app, "examples", file);
    const text = readFileSync(path, "utf8").replaceAll(/"\.\.\/src\/index\.js"/g, '"@handlestore/client"');
    assert.ok(!text.includes("../src/"), `${file} imports the sources in another way`);
    writeFileSync(path, text);
  }
}

describe("the package from its tarball", { skip: skipReason }, () => {
  const fx = useCluster();
  let root = "";
  let app = "";

  before(
    () => {
      root = mkdtempSync(join(tmpdir(), "handlestore-ts-pack-"));
      app = emptyProjectWith(pack(root), root);
      importThePackage(app);
    },
    { timeout: 600_000 },
  );
  after(() => rmSync(root, { recursive: true, force: true }));

  test("holds the built code and declarations only, and installs into an empty project", () => {
    const installed = join(app, "node_modules", "@handlestore", "client");
    const files = readdirSync(installed, { recursive: true }).map(String);
    assert.ok(files.includes(join("dist", "index.js")) && files.includes(join("dist", "index.d.ts")));
    assert.ok(files.includes(join("dist", "mcp", "v2", "index.d.ts")));
    assert.ok(!files.some((f) => f.startsWith("src") || f.startsWith("test") || f.endsWith(".test.js")), "no sources");
  });

  test("its entry points type-check in a consumer's strict project", () => {
    writeFileSync(join(app, "consumer.ts"), CONSUMER);
    const options = { module: "nodenext", moduleResolution: "nodenext", target: "es2022", strict: true, noEmit: true };
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { ...options, types: ["node"] }, files: ["consumer.ts"] }),
    );
    run(TSC, ["-p", "."], app);
  });

  test("the cart example runs from it: a cart flow on the cluster", async () => {
    const example = join(app, "examples", "cartServer.ts");
    const server = await ServerProcess.start(example, ["--listen", "127.0.0.1:0"], env());
    try {
      const mcp = new McpClient({ name: "from-the-tarball", version: "0.1.0" });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      const call = async (name: string, args: Record<string, unknown> = {}) => {
        const r = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
        assert.ok(!r.isError, `${name}: ${JSON.stringify(r.content)}`);
        return (r.structuredContent ?? JSON.parse((r.content[0] as { text: string }).text)) as Record<string, unknown>;
      };
      const { cart_id: cartId } = await call("create_cart");
      await call("add_item", { cart_id: cartId, sku: "sku-1", quantity: 2 });
      const { order_id: orderId } = await call("checkout", { cart_id: cartId });
      assert.equal((await call("checkout", { cart_id: cartId })).order_id, orderId);
      const order = await fx.client().handleStore<{ cart_id: string }>("order").get(String(orderId));
      assert.equal(order?.cart_id, cartId);
      await mcp.close();
    } finally {
      await server.stop();
    }
  });

  /** The example's environment: the cluster through `Client.fromEnv`, as an operator configures it. */
  function env(): NodeJS.ProcessEnv {
    return { HANDLESTORE_ENDPOINTS: fx.cluster.endpoints.join(",") };
  }
});
