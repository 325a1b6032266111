/**
 * Write coalescing: concurrent writes of one client share calls of
 * Writes.Submit (coalesce.ts says how), as the Rust and Python clients'.
 *
 * Nothing else changes for a write: it keeps its own write id, gets its own
 * answer or error, and is retried with the others when the call fails in a
 * way another node can fix (the node answers the writes that had already
 * succeeded from its memory of their write ids, so none applies twice).
 */
import { Coalescer, type Wait } from "./coalesce.js";
import { type Status, statusOfFailure } from "./errors.js";
import type { ReadsResponse } from "./gen/handlestore/v1/reads.js";
import { type SubmitResponse, type Write, type WriteResult, WritesService } from "./gen/handlestore/v1/writes.js";
import { MAX_SUBMIT_WRITE_BYTES, MAX_SUBMIT_WRITES } from "./gen/wire.js";
import { decide, giveUp } from "./retry.js";
import type { Transport } from "./transport.js";
import type { WriteTicket } from "./writeIds.js";

/** A write and its id, kept until the write is answered. */
export interface Queued {
  readonly write: Write;
  readonly ticket: WriteTicket;
}

/** The first failure among a Submit's results (of writes, or of reads) that another node could fix. */
export function retryableFailure(resp: SubmitResponse | ReadsResponse): Status | undefined {
  for (const r of resp.results) {
    if (r.result?.$case === "failure") {
      const s = statusOfFailure(r.result.value);
      if (decide(s).retry) return s;
    }
  }
  return undefined;
}

/**
 * One call of the Writes service, with failover and retries: a write that
 * failed for a reason another node can fix fails the whole attempt, so the
 * call goes again where that error points, every write with its own id.
 */
async function submit(client: Transport, items: Queued[], wait?: Wait): Promise<(WriteResult | Error)[]> {
  try {
    const request = { writes: items.map((q) => q.write) };
    const resp = await client.call(WritesService.submit, request, { ...wait, check: retryableFailure });
    return resp.results.map((r) => (r.result?.$case === "failure" ? giveUp(statusOfFailure(r.result.value)) : r));
  } finally {
    for (const q of items) q.ticket.release();
  }
}

/** @internal A client's queue of writes and the calls carrying them. */
export function writeCoalescer(client: Transport, maxCalls: number): Coalescer<Queued, WriteResult> {
  return new Coalescer<Queued, WriteResult>(
    (items, wait) => submit(client, items, wait),
    "write",
    { maxCalls, maxItems: MAX_SUBMIT_WRITES, maxBytes: MAX_SUBMIT_WRITE_BYTES },
    (q) => q.ticket.release(),
  );
}
