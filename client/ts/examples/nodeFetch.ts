/**
 * Serves a web-standard handler (`(Request) => Promise<Response>`, the face
 * of the v2 SDK's `createMcpHandler`) from `node:http`. The SDK's own
 * adapter (`@modelcontextprotocol/node`) brings Hono with it; this is the
 * little of it a plain `node:http` server needs, so the example depends on
 * nothing but the SDK.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";

export type FetchHandler = (request: Request) => Promise<Response>;

/** The node request as a web `Request`: the body streams (the handler bounds its size), aborted if the client goes. */
export function toWebRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
  }
  const method = req.method ?? "GET";
  const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
  if (method === "GET" || method === "HEAD") return new Request(url, { method, headers, signal });
  const body = Readable.toWeb(req) as ReadableStream<Uint8Array>;
  return new Request(url, { method, headers, signal, body, duplex: "half" } as RequestInit);
}

/** Answers `req` with what `handler` returns; an SSE body is written as it comes, until it ends or the client goes. */
export async function serveFetch(handler: FetchHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const gone = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) gone.abort();
  });
  const response = await handler(toWebRequest(req, gone.signal));
  res.writeHead(response.status, response.statusText, [...response.headers.entries()].flat());
  if (!response.body) {
    res.end();
    return;
  }
  res.flushHeaders();
  try {
    await pipeline(Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>), res);
  } catch (e) {
    // The client went away mid-stream: nothing is left to answer.
    if (!gone.signal.aborted) throw e;
  }
}
