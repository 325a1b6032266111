/**
 * The TypeScript cart server beside its twins: one Rust replica
 * (client/rust/examples/cart_server), one Python (client/python/examples/
 * fastmcp_cart.py), one TypeScript (examples/cartServer.ts), one Go
 * (client/go/gosdk/examples/cartserver, on the official Go SDK) and one Java
 * (client/java/examples, on the MCP Java SDK) on one cluster, behind a
 * round-robin load balancer that deals the tool calls to the five in turn. Driven twice by the Python SDK's client: in its default
 * mode, which negotiates the current protocol (2026-07-28), and pinned to
 * the handshake era (2025-11-25). Each time: every item kept, concurrent
 * adds across the five included, one order, checkout exactly once, bad ids
 * refused alike, and every kind of call answered by every replica on the
 * negotiated protocol.
 *
 * The Rust replica needs the example binary beside the handlestore one
 * (`cargo build --release --examples`), the Python one the tests' virtual
 * environment ($HANDLESTORE_TEST_PYTHON, or tests/ensure-python-env.sh), the
 * Go one `go` (the test builds the example with `go build`), the Java one
 * Java 17+ and Maven (the test builds the example's executable jar with
 * `mvn package`): without them the test skips and says why.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Order } from "../examples/cartServer.js";
import type { Client } from "../src/index.js";
import { binaryRequired, handlestoreBin, skipReason, useCluster } from "./cluster.js";
import { freePort, ServerProcess } from "./mcpHttp.js";
import { type PythonClientMode, PythonMcpClient } from "./pythonMcpClient.js";
import { type Replica, RoundRobin } from "./roundRobin.js";
import { REPO } from "./vectors.js";

const TS_CART = fileURLToPath(new URL("../examples/cartServer.ts", import.meta.url));
const RUST_CART = join(dirname(handlestoreBin()), "examples", "cart_server");
const PY_CART = join(REPO, "client/python/examples/fastmcp_cart.py");
const GO_MODULE = join(REPO, "client/go/gosdk");
/** The Go toolchain as the Go client's scripts/ci.sh runs it: the one installed, never a downloaded one. */
const GO_ENV = { ...process.env, GOTOOLCHAIN: "local" };
const JAVA_PROJECT = join(REPO, "client/java");

/** The tests' Python: $HANDLESTORE_TEST_PYTHON, else what tests/ensure-python-env.sh makes (or an empty string). */
function python(): string {
  if (process.env.HANDLESTORE_TEST_PYTHON) return process.env.HANDLESTORE_TEST_PYTHON;
  try {
    return execFileSync(join(REPO, "tests/ensure-python-env.sh"), {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return "";
  }
}

/** Why the Go replica cannot be built here (undefined if it can). */
function noGo(): string | undefined {
  try {
    execFileSync("go", ["version"], { stdio: "ignore", env: GO_ENV });
    return undefined;
  } catch {
    return "go is not installed (the Go replica is built with go build)";
  }
}

/** Why the Java replica cannot be built here (undefined if it can): Java 17+ and Maven, as client/java/scripts/ci.sh asks. */
function noJava(): string | undefined {
  // -XshowSettings writes to stderr.
  const settings = spawnSync("java", ["-XshowSettings:properties", "-version"], { encoding: "utf8" });
  if (settings.error) return "java is not installed (the Java replica is built with mvn package)";
  const version = /java\.specification\.version = (\d+)/.exec(settings.stderr)?.[1];
  if (!version || Number(version) < 17) return `java ${version ?? "(unknown)"} is older than 17 (the Java replica)`;
  if (spawnSync("mvn", ["-v"], { stdio: "ignore" }).error)
    return "mvn is not installed (the Java replica is built with mvn package)";
  return undefined;
}

/** Builds the Java cart server's executable jar (client/java/examples) and finds it. */
function buildJavaCart(): string {
  const build = ["-B", "-ntp", "-q", "-pl", "examples", "-am", "-DskipTests", "-Dspotless.check.skip=true", "package"];
  execFileSync("mvn", build, { cwd: JAVA_PROJECT, stdio: "inherit" });
  const target = join(JAVA_PROJECT, "examples/target");
  const jar = readdirSync(target).find((f) => /^handlestore-examples-.+-all\.jar$/.test(f));
  if (!jar) throw new Error(`the Java build made no executable jar in ${target}`);
  return join(target, jar);
}

function missing(): string | undefined {
  if (skipReason) return skipReason;
  // The test command builds the examples with the node: there, a missing one is a failure.
  if (binaryRequired && !existsSync(RUST_CART))
    throw new Error(`no Rust cart_server at ${RUST_CART} (HANDLESTORE_REQUIRE_BIN=1)`);
  if (!existsSync(RUST_CART)) return `no Rust cart_server at ${RUST_CART}: cargo build --release --examples`;
  return noGo() ?? noJava();
}

const why = missing();
const py = why ? "" : python();
const skip = why ?? (py ? undefined : "no Python environment for fastmcp_cart.py (tests/ensure-python-env.sh)");
if (skip) console.log(`SKIPPED: the five-language cart test: ${skip}`);

/** The two runs: the client as it comes, and pinned to the protocol before 2026-07-28. */
const RUNS: readonly { mode: PythonClientMode; protocol: string; title: string }[] = [
  { mode: "default", protocol: "2026-07-28", title: "in its default mode" },
  { mode: "legacy", protocol: "2025-11-25", title: 'pinned to 2025-11-25 (mode="legacy")' },
];
const NAMES = ["rust", "python", "typescript", "go", "java"];
const TOOLS = ["create_cart", "add_item", "get_cart", "checkout"];

describe("one MCP client across Rust, Python, TypeScript, Go and Java cart replicas", { skip }, () => {
  const fx = useCluster();
  let client: Client;
  const replicas: Replica[] = [];
  /** Starts `s` (stopped after the tests, before the client and the cluster go) as the next replica. */
  const serve = (s: ServerProcess) => {
    fx.track({ close: () => s.stop() });
    replicas.push({ name: NAMES[replicas.length] as string, port: s.port });
  };

  const goDir = mkdtempSync(join(tmpdir(), "handlestore-ts-go-cart-"));
  after(() => rmSync(goDir, { recursive: true, force: true }));

  before(async () => {
    const goCart = join(goDir, "cartserver");
    execFileSync("go", ["build", "-o", goCart, "./examples/cartserver"], {
      cwd: GO_MODULE,
      env: GO_ENV,
      stdio: "inherit",
    });
    const javaCart = buildJavaCart();
    client = fx.client();
    const plain = fx.cluster.endpoints.join(",");
    const http = fx.cluster.endpoints.map((e) => `http://${e}`).join(",");
    const [rustPort, pyPort] = [await freePort(), await freePort()];
    serve(await ServerProcess.onPort(RUST_CART, ["--listen", `127.0.0.1:${rustPort}`, "--endpoints", http], rustPort));
    serve(await ServerProcess.onPort(py, [PY_CART, "--listen", `127.0.0.1:${pyPort}`, "--endpoints", plain], pyPort));
    serve(await ServerProcess.start(TS_CART, ["--listen", "127.0.0.1:0", "--endpoints", plain]));
    serve(await ServerProcess.start(goCart, ["--listen", "127.0.0.1:0", "--endpoints", plain]));
    const jvm = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-jar", javaCart];
    serve(await ServerProcess.start("java", [...jvm, "--listen", "127.0.0.1:0", "--endpoints", plain]));
  });

  for (const run of RUNS) describe(`the Python SDK's client ${run.title}`, () => cartFlows(run));

  function cartFlows(run: (typeof RUNS)[number]): void {
    let lb: RoundRobin;
    let mcp: PythonMcpClient;
    let protocol = "";

    before(async () => {
      lb = await new RoundRobin(replicas).start();
      ({ client: mcp, protocol } = await PythonMcpClient.start(py, lb.url, run.mode));
    });
    after(async () => {
      await mcp?.close();
      await lb?.stop();
    });

    async function ok(name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
      const r = await mcp.callTool(name, args);
      assert.ok(!r.isError, `${name}: ${JSON.stringify(r.content)}`);
      return (r.structuredContent ?? JSON.parse((r.content[0] as { text: string }).text)) as Record<string, unknown>;
    }
    async function refused(name: string, args: Record<string, unknown>): Promise<string> {
      const r: CallToolResult = await mcp.callTool(name, args);
      assert.ok(r.isError, `${name} should fail: ${JSON.stringify(r.content)}`);
      return (r.content[0] as { text: string }).text;
    }

    test(`it negotiates ${run.protocol}`, () => {
      assert.equal(protocol, run.protocol);
    });

    test("every item kept, one order, checkout exactly once", async () => {
      const ordersBefore = await client.handleStore<Order>("order").len();
      const { cart_id: cartId } = (await ok("create_cart")) as { cart_id: string };
      assert.match(cartId, /^cart-[A-Z2-7]{26}$/);
      for (let i = 1; i <= 6; i++) await ok("add_item", { cart_id: cartId, sku: `sku-${i}`, quantity: i });
      // A retried add (same request_id) on the next two replicas: added once.
      for (let i = 0; i < 2; i++)
        await ok("add_item", { cart_id: cartId, sku: "gift", quantity: 1, request_id: "r-1" });
      // Concurrent adds, nine across the five replicas.
      const adds = Array.from({ length: 9 }, (_, i) => ok("add_item", { cart_id: cartId, sku: `c-${i}`, quantity: 1 }));
      await Promise.all(adds);
      const { cart } = (await ok("get_cart", { cart_id: cartId })) as { cart: { lines: { sku: string }[] } };
      const skus = cart.lines.map((l) => l.sku);
      assert.deepEqual(skus.slice(0, 7), ["sku-1", "sku-2", "sku-3", "sku-4", "sku-5", "sku-6", "gift"]);
      assert.deepEqual(skus.slice(7).sort(), Array.from({ length: 9 }, (_, i) => `c-${i}`).sort());

      // Concurrent checkouts, one on each replica.
      const orders = await Promise.all(NAMES.map(() => ok("checkout", { cart_id: cartId })));
      const orderIds = new Set(orders.map((o) => o.order_id));
      assert.equal(orderIds.size, 1, JSON.stringify(orders));
      const orderId = String([...orderIds][0]);
      assert.ok(orders.every((o) => o.lines === 16));
      for (let i = 0; i < NAMES.length; i++)
        assert.equal((await ok("checkout", { cart_id: cartId })).order_id, orderId);
      assert.match(await refused("add_item", { cart_id: cartId, sku: "late", quantity: 1 }), /already checked out/);

      const order = await client.handleStore<Order>("order").get(orderId);
      assert.equal(order?.cart_id, cartId);
      assert.equal(order?.lines.length, 16);
      assert.equal(await client.handleStore<Order>("order").len(), ordersBefore + 1, "exactly one order recorded");
    });

    test("bad ids and empty carts are refused alike by every replica", async () => {
      // A round of three calls per replica: each kind of call reaches each replica.
      for (let i = 0; i < NAMES.length; i++) {
        assert.match(await refused("get_cart", { cart_id: "../etc/passwd" }), /unknown cart_id: \.\.\/etc\/passwd/);
        assert.match(await refused("get_cart", { cart_id: "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA" }), /unknown cart_id/);
        assert.match(await refused("add_item", { cart_id: "nope", sku: "x", quantity: 1 }), /unknown cart_id: nope/);
      }
      // An empty cart per replica, then their checkouts, one on each replica.
      const empty: string[] = [];
      for (let i = 0; i < NAMES.length; i++) empty.push(((await ok("create_cart")) as { cart_id: string }).cart_id);
      for (const cartId of empty) assert.match(await refused("checkout", { cart_id: cartId }), /is empty/);
    });

    test(`every replica answered every kind of call, on ${run.protocol}`, () => {
      const calls = lb.hits.filter((h) => h.rpc === "tools/call");
      for (const tool of TOOLS) {
        const served = new Set(calls.filter((h) => h.tool === tool).map((h) => h.replica));
        assert.deepEqual([...served].sort(), [...NAMES].sort(), `${tool} was served by ${[...served]}`);
      }
      const wrong = calls.filter((h) => h.status !== 200 || h.protocol !== run.protocol);
      assert.deepEqual(wrong, [], "every call answered 200 on the negotiated protocol");
    });
  }
});
