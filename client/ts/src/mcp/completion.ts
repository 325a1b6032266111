/**
 * When a stream is complete (proto/vectors/mcp_events.json, "completion"):
 * once it holds the response to every request its origin recorded, or,
 * with none recorded, its first response. The origin uses it to know which
 * event ends its liveness record, a follower to know when to stop.
 */

/** A JSON-RPC request id, as the client sent it (1 and "1" differ). */
export type RequestId = string | number;

/** The id `message` answers: an object with a string or number id, exactly one of result and error, and no method. */
export function answeredId(message: unknown): RequestId | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const m = message as Record<string, unknown>;
  if ("method" in m || "result" in m === "error" in m) return undefined;
  return typeof m.id === "string" || typeof m.id === "number" ? m.id : undefined;
}

/** The request ids of a POST body (one message or a batch); notifications and responses have none. */
export function requestIdsOf(body: unknown): RequestId[] {
  const messages = Array.isArray(body) ? body : [body];
  const ids: RequestId[] = [];
  for (const m of messages) {
    if (typeof m !== "object" || m === null || typeof (m as { method?: unknown }).method !== "string") continue;
    const id = (m as { id?: unknown }).id;
    if (typeof id === "string" || typeof id === "number") ids.push(id);
  }
  return ids;
}

/** Distinct keys for 1 and "1". */
function keyOf(id: RequestId): string {
  return JSON.stringify(id);
}

/** The responses a stream has carried so far, fed in order. */
export class Completion {
  private readonly answered = new Set<string>();
  private responses = 0;

  /** Takes the next message of the stream (null for a priming event). */
  add(message: unknown): void {
    const id = answeredId(message);
    if (id === undefined) return;
    this.responses++;
    this.answered.add(keyOf(id));
  }

  /** Whether the stream would be complete with `message` added (this one unchanged). */
  completesWith(message: unknown, requests: readonly RequestId[]): boolean {
    const id = answeredId(message);
    if (id === undefined) return this.complete(requests);
    return requests.length === 0 || requests.every((r) => r === id || this.answered.has(keyOf(r)));
  }

  /** Whether the stream is complete for these recorded requests. */
  complete(requests: readonly RequestId[]): boolean {
    if (requests.length === 0) return this.responses > 0;
    return requests.every((id) => this.answered.has(keyOf(id)));
  }

  /** The recorded requests not answered yet. */
  unanswered(requests: readonly RequestId[]): RequestId[] {
    return requests.filter((id) => !this.answered.has(keyOf(id)));
  }
}
