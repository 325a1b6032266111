/**
 * ClusterOAuthClientProvider: a client process leaves its OAuth state in the
 * cluster; a new process with a new provider connects the SDK's client to a
 * server that demands the token, with no new OAuth flow. The stored values
 * are sealed: the raw value shows no token and opens only for its own
 * client key and field.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { type Client, ClientStateStore, InvalidArgumentError, NotFoundError, RequestStateCodec } from "../src/index.js";
import { ClusterOAuthClientProvider, TOKENS } from "../src/mcp/index.js";
import { skipReason, useCluster } from "./cluster.js";
import { ServerProcess } from "./mcpHttp.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/oauthClient.ts", import.meta.url));
const options = {
  redirectUrl: "http://127.0.0.1:1/callback",
  clientMetadata: { redirect_uris: ["http://127.0.0.1:1/callback"] },
  redirectToAuthorization: () => {
    throw new Error("no flow expected");
  },
};

/** An MCP server that answers only `Authorization: Bearer at-SECRET-123`. */
async function protectedServer(): Promise<{ http: Server; url: string; seen: string[] }> {
  const seen: string[] = [];
  const http = createServer((req, res) => {
    seen.push(req.headers.authorization ?? "");
    if (req.headers.authorization !== "Bearer at-SECRET-123") {
      res.writeHead(401, { "www-authenticate": 'Bearer error="invalid_token"' }).end();
      return;
    }
    const server = new McpServer({ name: "protected", version: "0.1.0" });
    server.registerTool("whoami", {}, async () => ({ content: [{ type: "text", text: "client-7" }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => void server.close());
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const address = http.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { http, url: `http://127.0.0.1:${port}/mcp`, seen };
}

async function run(args: string[]): Promise<ServerProcess> {
  const p = await ServerProcess.start(FIXTURE, args);
  await new Promise((resolve) => p.proc.once("exit", resolve));
  return p;
}

describe("the OAuth provider's bad input", () => {
  test("a client key that cannot be a key segment is refused before any call", async () => {
    const codec = RequestStateCodec.withKeys(
      [{ id: "k", primary: true, createdMs: 0, secret: new Uint8Array(32).fill(7) }],
      "encrypted",
    );
    const tool = { client: undefined } as never;
    for (const key of ["a/b", "", "x\n", "k".repeat(129)]) {
      assert.throws(() => new ClientStateStore(tool, codec, key), InvalidArgumentError, JSON.stringify(key));
    }
  });
});

describe("ClusterOAuthClientProvider on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();
  let client: Client;

  before(async () => {
    client = fx.client({ namespace: "ts-oauth" });
    await client.keyringRotate({ create: true });
  });

  test("a restarted client process resumes with its saved tokens, without a new flow", async () => {
    const common = [fx.cluster.endpoints.join(","), "ts-oauth", "app-alice"];
    assert.ok((await run([...common, "save"])).lines.includes("saved"));
    const server = await protectedServer();
    try {
      const used = await run([...common, "call", server.url]);
      assert.ok(used.lines.includes("result client-7"), used.log);
      assert.ok(!used.lines.includes("REDIRECT"), used.log);
      assert.ok(server.seen.length > 0 && server.seen.every((h) => h === "Bearer at-SECRET-123"), String(server.seen));
    } finally {
      server.http.close();
    }
  });

  test("the raw stored values show no secret and open only for their own client and field", async () => {
    const provider = await ClusterOAuthClientProvider.fromCluster(client, "app-bob", options);
    await provider.saveTokens({ access_token: "at-BOB-secret", token_type: "Bearer", refresh_token: "rt-BOB-secret" });
    await provider.saveClientInformation({ client_id: "bob", client_secret: "cs-BOB-secret" });
    const state = client.stateTool();
    for (const field of [TOKENS, "oauth-client-info"]) {
      const raw = await state.get(`mcp-clients/app-bob/${field}`);
      assert.equal(typeof raw, "string");
      assert.match(raw as string, /^v1e\./);
      const decoded = Buffer.from((raw as string).slice(4), "base64url").toString("latin1");
      for (const secret of ["BOB-secret", "at-BOB", "cs-BOB"]) {
        assert.ok(!(raw as string).includes(secret) && !decoded.includes(secret), `${field} shows ${secret}`);
      }
    }
    // An attacker copies Bob's sealed tokens under his own client key, or into another field: they open for neither.
    const sealed = await state.get(`mcp-clients/app-bob/${TOKENS}`);
    await state.store(`mcp-clients/app-eve/${TOKENS}`, sealed);
    await state.store("mcp-clients/app-bob/oauth-client-info", sealed);
    const eve = await ClusterOAuthClientProvider.fromCluster(client, "app-eve", options);
    assert.equal(await eve.tokens(), undefined);
    assert.equal(await provider.clientInformation(), undefined);
    assert.equal((await provider.tokens())?.access_token, "at-BOB-secret");
  });

  test("invalidateCredentials forgets exactly the scope the server names", async () => {
    const provider = await ClusterOAuthClientProvider.fromCluster(client, "app-carol", options);
    await provider.saveTokens({ access_token: "t", token_type: "Bearer" });
    await provider.saveClientInformation({ client_id: "carol" });
    await provider.saveCodeVerifier("v");
    await provider.saveDiscoveryState({ authorizationServerUrl: "https://auth.example" });
    await provider.invalidateCredentials("tokens");
    assert.equal(await provider.tokens(), undefined);
    assert.equal((await provider.clientInformation())?.client_id, "carol");
    assert.equal(await provider.codeVerifier(), "v");
    assert.equal((await provider.discoveryState())?.authorizationServerUrl, "https://auth.example");
    await provider.invalidateCredentials("all");
    assert.equal(await provider.clientInformation(), undefined);
    assert.equal(await provider.discoveryState(), undefined);
    await assert.rejects(provider.codeVerifier(), NotFoundError);
  });

  test("without a key ring there is no provider: the reason says so", async () => {
    const other = fx.cluster.client({ namespace: "ts-oauth-no-ring" });
    try {
      await assert.rejects(ClusterOAuthClientProvider.fromCluster(other, "app", options), (e: unknown) => {
        assert.ok(e instanceof NotFoundError);
        assert.match(e.message, /no key ring/);
        return true;
      });
    } finally {
      other.close();
    }
  });
});
