/**
 * A stateless MCP cart server (the official TypeScript SDK v2,
 * `@modelcontextprotocol/server`, Streamable HTTP at /mcp, no sessions)
 * whose carts live in handlestore, so any number of replicas behind a load
 * balancer share them: the TypeScript twin of client/rust/examples/cart_server
 * (Rust), client/python/examples/fastmcp_cart.py and
 * client/go/gosdk/examples/cartserver, with the same tools, the same stores
 * (`cart`, prefix `cart`, and `order`) and the same cart JSON, so replicas
 * in the four languages serve one another's carts.
 *
 * It serves protocol 2026-07-28 (each request carries its own envelope) and,
 * through the SDK's stateless legacy fallback, 2025-11-25 and older
 * (`initialize`, then each request answered by a fresh server; GET and
 * DELETE answer 405): one tool definition backs both, as for its twins.
 *
 *     node --import tsx examples/cartServer.ts --listen 127.0.0.1:8082 \
 *         --endpoints 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403
 *
 * (or HANDLESTORE_ENDPOINTS, HANDLESTORE_CACERT, HANDLESTORE_TOKEN... as
 * `Client.fromEnv` reads them). Tools: `create_cart`, `add_item(cart_id,
 * sku, quantity, request_id?)`, `get_cart(cart_id)`, `checkout(cart_id)`;
 * resource `cart://<cart_id>`. `add_item` is a compare-and-set update, so
 * replicas adding to one cart at once never lose an item; a `request_id`
 * makes a retried add_item a no-op; `checkout` records one order per cart
 * however often, and on whichever replica, it is called.
 *
 * The same server over other backends, for the bench (tests/bench, systems
 * `ts-cart-redis-fsync` and `ts-cart-memory`), with the same tools and
 * answers: `--kv redis --redis redis://host:port/` keeps the carts in Redis
 * as a careful author would (one key per cart with its TTL, WATCH/MULTI
 * adds, a SET NX checkout), `--kv memory` in a Map of this process (lost on
 * restart, invisible to a second replica).
 *
 * Prints `listening <port>` once it serves.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  type CallToolResult,
  createMcpHandler,
  type McpHttpHandler,
  McpServer,
  ResourceTemplate,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { Client, InvalidArgumentError, newHandleId } from "../src/index.js";
import {
  CART_URI,
  type Cart,
  type CartBackend,
  handlestoreCarts,
  type Line,
  memoryCarts,
  stores,
} from "./cartBackends.js";
import { serveFetch } from "./nodeFetch.js";

export type { Cart, CartBackend, Line, Order } from "./cartBackends.js";

function structured(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

function toolError(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

/** What the caller sees of a store failure: a bad id is an unknown cart; anything else may be retried. */
function storeError(cartId: string, e: unknown): CallToolResult {
  if (e instanceof InvalidArgumentError) return toolError(`unknown cart_id: ${cartId}`);
  return toolError(`cart store unavailable, retry: ${e instanceof Error ? e.message : String(e)}`);
}

/** Runs a store call, mapping an absent cart and failures to the tool errors the twins answer. */
async function withCart(cartId: string, read: () => Promise<Cart | undefined>): Promise<Cart | CallToolResult> {
  try {
    return (await read()) ?? toolError(`unknown cart_id: ${cartId}`);
  } catch (e) {
    return storeError(cartId, e);
  }
}

function isResult(v: Cart | CallToolResult): v is CallToolResult {
  return "content" in v;
}

async function createCart(b: CartBackend): Promise<CallToolResult> {
  try {
    return structured({ cart_id: await b.create() });
  } catch (e) {
    return toolError(`cart store unavailable, retry: ${e instanceof Error ? e.message : String(e)}`);
  }
}

interface AddItem {
  cart_id: string;
  sku: string;
  quantity: number;
  request_id?: string | undefined;
}

async function addItem(b: CartBackend, args: AddItem): Promise<CallToolResult> {
  const line: Line = { sku: args.sku, quantity: args.quantity };
  if (args.request_id !== undefined) line.request_id = args.request_id;
  const cart = await withCart(args.cart_id, () => b.add(args.cart_id, line));
  if (isResult(cart)) return cart;
  if (cart.order_id) return toolError(`cart ${args.cart_id} is already checked out (order ${cart.order_id})`);
  return structured({ cart_id: args.cart_id, cart });
}

async function getCart(b: CartBackend, cartId: string): Promise<CallToolResult> {
  const cart = await withCart(cartId, () => b.get(cartId));
  return isResult(cart) ? cart : structured({ cart_id: cartId, cart });
}

async function checkout(b: CartBackend, cartId: string): Promise<CallToolResult> {
  const cart = await withCart(cartId, () => b.checkout(cartId, newHandleId("order")));
  if (isResult(cart)) return cart;
  if (!cart.order_id && cart.lines.length === 0) return toolError(`cart ${cartId} is empty`);
  if (!cart.order_id) return toolError("checkout did not record an order; retry");
  // Whichever call recorded the order writes it; a repeat writes the same content again.
  try {
    await b.recordOrder(cart.order_id, { cart_id: cartId, lines: cart.lines });
  } catch (e) {
    return storeError(cartId, e);
  }
  return structured({ cart_id: cartId, order_id: cart.order_id, lines: cart.lines.length });
}

const cartId = z.string().describe("The id create_cart returned.");
const addInput = z.object({
  cart_id: cartId,
  sku: z.string().min(1).max(128).describe("Product SKU."),
  quantity: z
    .number()
    .int()
    .min(1)
    .max(2 ** 32 - 1)
    .describe("How many (at least 1)."),
  request_id: z
    .string()
    .optional()
    .describe("Idempotency key: a retried add_item with the same request_id is not added twice."),
});
const cartInput = z.object({ cart_id: cartId });
const addDescription = "Add quantity units of a SKU to a cart. Returns the cart.";
const getDescription = "Show a cart's lines and, once checked out, its order_id.";
const checkoutDescription = "Check a cart out and return its order_id. Calling it again returns the same order_id.";

/** The MCP server for one request, over the shared carts. */
export function cartServer(b: CartBackend): McpServer {
  const server = new McpServer({ name: "handlestore-cart-server", version: "0.1.0" });
  const tool = server.registerTool.bind(server);
  tool("create_cart", { description: "Create an empty shopping cart and return its cart_id." }, () => createCart(b));
  tool("add_item", { description: addDescription, inputSchema: addInput }, (args) => addItem(b, args));
  tool("get_cart", { description: getDescription, inputSchema: cartInput }, (a) => getCart(b, a.cart_id));
  tool("checkout", { description: checkoutDescription, inputSchema: cartInput }, (a) => checkout(b, a.cart_id));
  const template = new ResourceTemplate(`${CART_URI}{cart_id}`, { list: undefined });
  server.registerResource("cart", template, { description: "A cart, as get_cart shows it." }, async (uri, vars) => {
    const id = String(vars.cart_id);
    const cart = await b.get(id).catch(() => undefined);
    if (!cart) throw new Error(`unknown resource ${uri.href}`);
    return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(cart) }] };
  });
  return server;
}

/**
 * The HTTP handler: a fresh server per request, for 2026-07-28 and (the
 * SDK's default `legacy: "stateless"`) for 2025-era clients alike.
 */
export function cartHandler(b: CartBackend): McpHttpHandler {
  return createMcpHandler(() => cartServer(b), { onerror: (e) => console.error(e) });
}

/** Serves /mcp with `handler`; any other path is 404. */
async function serve(handler: McpHttpHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  await serveFetch(handler.fetch, req, res);
}

/** "1h", "30m", "90s", "500ms", or plain seconds, in ms. */
export function duration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new InvalidArgumentError(`not a duration: ${JSON.stringify(text)}`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"] ?? 1_000;
  return Number(m[1]) * unit;
}

interface Flags {
  kv: string;
  redis?: string | undefined;
  endpoints?: string | undefined;
  namespace?: string | undefined;
  "cart-ttl": string;
}

/** The backend `--kv` names. */
async function backend(values: Flags): Promise<CartBackend> {
  const ttl = duration(values["cart-ttl"]);
  switch (values.kv) {
    case "handlestore": {
      const overrides = {
        ...(values.endpoints ? { endpoints: values.endpoints } : {}),
        ...(values.namespace ? { namespace: values.namespace } : {}),
      };
      return handlestoreCarts(stores(Client.fromEnv(overrides), ttl));
    }
    case "redis":
      if (!values.redis) throw new InvalidArgumentError("--kv redis needs --redis URL");
      return (await import("./cartRedis.js")).redisCarts(values.redis, ttl);
    case "memory":
      return memoryCarts(ttl);
    default:
      throw new InvalidArgumentError(`--kv is handlestore, redis or memory, not ${JSON.stringify(values.kv)}`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      listen: { type: "string", default: "127.0.0.1:8082" },
      kv: { type: "string", default: "handlestore" },
      redis: { type: "string" },
      endpoints: { type: "string" },
      namespace: { type: "string" },
      "cart-ttl": { type: "string", default: "1h" },
    },
  });
  const handler = cartHandler(await backend(values));
  const [host, port] = [values.listen.slice(0, values.listen.lastIndexOf(":")), values.listen.split(":").pop()];
  const http = createServer((req, res) => {
    serve(handler, req, res).catch((e: unknown) => {
      console.error(e);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  http.listen(Number(port), host || "127.0.0.1", () => {
    const address = http.address();
    console.log(`listening ${typeof address === "object" && address ? address.port : port}`);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(2);
  });
}
