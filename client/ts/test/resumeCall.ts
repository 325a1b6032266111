/**
 * One tool call of the resume tests, made with the SDK 1.32 client
 * (Client + StreamableHTTPClientTransport, its default reconnection)
 * through a CuttingProxy, and what to hold its outcome to.
 */
import assert from "node:assert/strict";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "../src/index.js";
import { EVENTS_PREFIX, LIVE, ORIGIN_LOST, parseEventId } from "../src/mcp/index.js";
import type { ServerProcess } from "./mcpHttp.js";
import { CuttingProxy } from "./resumeProxy.js";

/** The fixtures' `emit(count, gapMs)`. */
export interface Tool {
  readonly name: string;
  readonly count: number;
  readonly gapMs: number;
}

export const FAST: Tool = { name: "a fast tool", count: 4, gapMs: 0 };
export const SLOW: Tool = { name: "a slow tool", count: 4, gapMs: 1_200 };
/** The cuts: after the priming event only, in the middle, after the last progress (before the result). */
export const cuts = (tool: Tool): number[] => [0, tool.count / 2, tool.count];
/**
 * The client's request timeout: three times the liveness TTL. The documented
 * bound for a dead origin is the TTL plus the node's sweep interval (and the
 * client's reconnection delay), so a call that times out has hung.
 */
export const TIMEOUT = 3 * LIVE.ttlMs;

export interface Outcome {
  /** The progress values the client heard, in order. */
  readonly progress: number[];
  readonly result?: unknown;
  readonly error?: { code?: number; message?: string; data?: unknown };
  /** Errors the client reported on the side (a duplicate response shows here). */
  readonly sideErrors: string[];
  /** The ids of the events the cut stream carried (the first names the stream). */
  readonly cutStreamIds: string[];
}

/** Calls `emit(tool)` with the SDK's client through `proxy`. */
async function call(proxy: CuttingProxy, tool: Tool): Promise<Omit<Outcome, "cutStreamIds">> {
  const mcp = new McpClient({ name: "resume-test", version: "0.1.0" });
  const sideErrors: string[] = [];
  mcp.onerror = (e) => sideErrors.push(e.message);
  const progress: number[] = [];
  try {
    await mcp.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    const args = { count: tool.count, gapMs: tool.gapMs };
    const onprogress = (p: { progress: number }) => progress.push(p.progress);
    try {
      const result = await mcp.callTool({ name: "emit", arguments: args }, undefined, { onprogress, timeout: TIMEOUT });
      return { progress, result: result.content, sideErrors };
    } catch (e) {
      const error = e as { code?: number; message?: string; data?: unknown };
      return { progress, error: { code: error.code, message: error.message, data: error.data }, sideErrors };
    }
  } finally {
    await mcp.close();
  }
}

/**
 * A call through a proxy that cuts its stream after `k` events on replica
 * `a` (killing `a` at the cut if asked) and sends everything after the cut
 * to `b`; every resumption must reach `b`.
 */
export async function cutCall(
  tool: Tool,
  k: number,
  kill: boolean,
  a: ServerProcess,
  b: ServerProcess,
): Promise<Outcome> {
  const proxy = await new CuttingProxy(a.port).start();
  try {
    proxy.arm({ k, after: b.port, onCut: kill ? () => a.proc.kill("SIGKILL") : undefined });
    const got = await call(proxy, tool);
    assert.ok(proxy.seen.resumes.length > 0, `the client never resumed: ${JSON.stringify({ ...got, ...proxy.seen })}`);
    assert.ok(
      proxy.seen.resumes.every((r) => r.port === b.port),
      "a resumption reached the origin",
    );
    return { ...got, cutStreamIds: proxy.seen.cutStreamIds };
  } finally {
    await proxy.stop();
  }
}

export function assertResult(got: Outcome, tool: Tool): void {
  assert.equal(got.error, undefined, `the call failed: ${JSON.stringify(got.error)}`);
  assert.deepEqual(got.result, [{ type: "text", text: `emitted ${tool.count}` }]);
}

/** Every event once, in order, and the result once. */
export function assertWhole(got: Outcome, tool: Tool): void {
  assert.deepEqual(
    got.progress,
    Array.from({ length: tool.count }, (_, i) => i + 1),
  );
  assertResult(got, tool);
  assertNoDuplicate(got);
}

export function assertOriginLost(got: Outcome): void {
  assert.equal(got.result, undefined, "the call has a result");
  assert.equal(got.error?.code, ORIGIN_LOST.code, JSON.stringify(got.error));
  assert.ok(got.error?.message?.endsWith(ORIGIN_LOST.message), got.error?.message);
  assert.deepEqual(got.error?.data, { reason: ORIGIN_LOST.reason });
}

/** No response reached the client twice (the SDK reports a second one for a settled request as unknown). */
export function assertNoDuplicate(got: Outcome): void {
  assert.deepEqual(
    got.sideErrors.filter((e) => /unknown message ID/i.test(e)),
    [],
  );
}

/**
 * Every event the dead origin stored, once, in order, then its one final
 * response: the result if the origin stored it, else the origin_lost error
 * a follower appended; `lost` when the origin surely died before its result.
 */
export async function assertStoredOnce(got: Outcome, client: Client, tool: Tool, lost: boolean): Promise<void> {
  const stored = await storedMessages(client, got.cutStreamIds[0] ?? "");
  assert.deepEqual(got.progress, progressOf(stored));
  const [final, ...more] = stored.filter((m) => "id" in m && ("result" in m || "error" in m));
  assert.deepEqual(more, [], "one final response is stored");
  if (final !== undefined && "result" in final && !lost) assertResult(got, tool);
  else assertOriginLost(got);
  assertNoDuplicate(got);
}

/** The messages stored on the stream of event `anyEventId`, in order (priming events left out). */
async function storedMessages(client: Client, anyEventId: string): Promise<JSONRPCMessage[]> {
  const token = parseEventId(anyEventId)?.token;
  if (token === undefined) throw new Error(`not an event id: ${anyEventId}`);
  const messages: JSONRPCMessage[] = [];
  for await (const entry of client.stateTool().scan(`${EVENTS_PREFIX}/events/${token}/`, { withValues: true })) {
    const message = (entry.value as { message: JSONRPCMessage | null }).message;
    if (message) messages.push(message);
  }
  return messages;
}

function progressOf(messages: readonly JSONRPCMessage[]): number[] {
  return messages.flatMap((m) =>
    "method" in m && m.method === "notifications/progress" ? [Number(m.params?.progress)] : [],
  );
}
