/**
 * An HTTP load balancer for the tests, in front of MCP replicas: it deals
 * the tool calls to the replicas in turn (call k to replica k mod n), and
 * every other request (the handshake, `server/discover`, listings, GETs) in
 * turn too, on a count of its own, so that which replica serves a call does
 * not depend on how many other requests the client sends. It keeps what it
 * saw of each request: the replica, the JSON-RPC method and tool, the
 * `MCP-Protocol-Version` header, and the replica's HTTP status.
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";

export interface Replica {
  readonly name: string;
  readonly port: number;
}

/** One request the balancer forwarded. */
export interface Hit {
  readonly replica: string;
  readonly httpMethod: string;
  /** The JSON-RPC method (undefined for a batch, a posted response, or no body). */
  readonly rpc: string | undefined;
  /** The tool of a `tools/call`. */
  readonly tool: string | undefined;
  readonly protocol: string | undefined;
  /** The replica's HTTP status (0 until it answers). */
  status: number;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The method and tool name of a single JSON-RPC message, if the body is one. */
function rpcOf(body: Buffer): { method?: string; tool?: string } {
  try {
    const msg = JSON.parse(body.toString("utf8")) as { method?: unknown; params?: { name?: unknown } };
    const method = typeof msg.method === "string" ? msg.method : undefined;
    const tool = method === "tools/call" && typeof msg.params?.name === "string" ? msg.params.name : undefined;
    return { ...(method ? { method } : {}), ...(tool ? { tool } : {}) };
  } catch {
    return {};
  }
}

export class RoundRobin {
  readonly hits: Hit[] = [];
  private server: Server | undefined;
  private readonly turns = { call: 0, other: 0 };
  port = 0;

  constructor(readonly replicas: readonly Replica[]) {
    if (replicas.length === 0) throw new Error("a round-robin needs at least one replica");
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.forward(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  private next(kind: "call" | "other"): Replica {
    return this.replicas[this.turns[kind]++ % this.replicas.length] as Replica;
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const { method, tool } = rpcOf(body);
    const replica = this.next(method === "tools/call" ? "call" : "other");
    const protocol = req.headers["mcp-protocol-version"];
    const hit: Hit = {
      replica: replica.name,
      httpMethod: req.method ?? "GET",
      rpc: method,
      tool,
      protocol: Array.isArray(protocol) ? protocol.join(",") : protocol,
      status: 0,
    };
    this.hits.push(hit);
    const headers = { ...req.headers, host: `127.0.0.1:${replica.port}`, "content-length": String(body.length) };
    delete headers["transfer-encoding"];
    const upstream = httpRequest(
      { host: "127.0.0.1", port: replica.port, path: req.url, method: req.method, headers },
      (answer) => {
        hit.status = answer.statusCode ?? 0;
        res.writeHead(hit.status, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    upstream.end(body);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
