/**
 * Resumable streams with the v2 SDK (`@modelcontextprotocol/server` 2.x).
 * Only its 2025-era Streamable HTTP transport resumes streams: the
 * 2026-07-28 protocol has no `Last-Event-ID` resumption, and
 * `createMcpHandler` serves 2025-era traffic statelessly without an event
 * store (a GET is answered 405). A server that keeps 2025-era clients whole
 * routes them (`isLegacyRequest`) to its own
 * `WebStandardStreamableHTTPServerTransport` with a `ClusterEventStore`,
 * through this wrapper.
 *
 * That transport ends a resumed response as soon as `replayEventsAfter`
 * returns when it does not run the stream itself (the usual case on another
 * replica), so there the store holds the resumption until at least one
 * event has gone out (or the stream is complete, or its origin is gone):
 * the client reconnects from that event for the rest, and never gets an
 * empty answer while the origin lives.
 */
import type { HandleRequestOptions, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { runInScope, scopeOf } from "../requestScope.js";

async function bodyOf(request: Request, options: HandleRequestOptions | undefined): Promise<unknown> {
  if (options?.parsedBody !== undefined || request.method !== "POST") return options?.parsedBody;
  return request
    .clone()
    .json()
    .catch(() => undefined);
}

/**
 * `transport.handleRequest(request, options)` with what a
 * `ClusterEventStore` needs to know of the exchange: the ids of the
 * requests in the body (read from a clone unless `options.parsedBody` has
 * it), when the client goes (`request.signal`), and the transport.
 */
export async function handleResumable(
  transport: WebStandardStreamableHTTPServerTransport,
  request: Request,
  options?: HandleRequestOptions,
): Promise<Response> {
  const scope = scopeOf(transport, await bodyOf(request, options), request.signal, true);
  return runInScope(scope, () => transport.handleRequest(request, options));
}
