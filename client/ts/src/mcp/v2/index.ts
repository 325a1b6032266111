/**
 * @handlestore/client/mcp-v2: the v2 MCP TypeScript SDK's seams
 * (`@modelcontextprotocol/server` 2.x, a peer dependency) on the cluster:
 *
 * - `ClusterServerEventBus`: the `ServerEventBus` of `createMcpHandler`
 *   (`subscriptions/listen` hears events published through any replica);
 * - `KeyRingRequestStateCodec`: the MRTR `RequestStateCodec`, keyed by the
 *   replicated key ring (minted on one replica, verified on any);
 * - `handleResumable`: serves 2025-era clients through the SDK's
 *   `WebStandardStreamableHTTPServerTransport` with a `ClusterEventStore`
 *   (from `@handlestore/client/mcp`), so their streams resume on any replica.
 */
export { HMAC_INFO, type KeyRingCodecOptions, KeyRingRequestStateCodec, requestStateKey } from "./requestStateCodec.js";
export { handleResumable } from "./resumable.js";
export { ClusterServerEventBus } from "./serverEventBus.js";
