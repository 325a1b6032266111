/**
 * Read coalescing, as the Rust and Python clients': concurrent point reads
 * of one client (handle gets, state retrieves) share calls of Reads.Submit.
 * A lone read goes at once on its own method (Handles.Get, State.Retrieve);
 * under load the reads queued meanwhile leave in one Reads.Submit. Each read
 * is served exactly as its own method would serve it. A read the node left
 * unserved because the response was full (`batch_full`) goes again in the
 * next call; a node without the Reads service gets each read on its own
 * method.
 */
import { Coalescer, type Wait } from "./coalesce.js";
import { UnimplementedError } from "./errorBase.js";
import { statusOfFailure } from "./errors.js";
import { HandlesService } from "./gen/handlestore/v1/handles.js";
import { type Read, type ReadResult, ReadsService } from "./gen/handlestore/v1/reads.js";
import { StateService } from "./gen/handlestore/v1/state.js";
import { InvalidArgumentError, NotFoundError } from "./gen/reasons.js";
import { MAX_SUBMIT_READ_BYTES, MAX_SUBMIT_READS } from "./gen/wire.js";
import { giveUp } from "./retry.js";
import type { ReadAnswer, Transport } from "./transport.js";
import { retryableFailure } from "./writes.js";

async function absentIsUndefined<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof NotFoundError) return undefined;
    throw e;
  }
}

/** A read on its own method. */
function one(client: Transport, read: Read, wait?: Wait): Promise<ReadAnswer> {
  switch (read.op?.$case) {
    case "get":
      return absentIsUndefined(client.call(HandlesService.get, read.op.value, wait));
    case "retrieve":
      return absentIsUndefined(client.call(StateService.retrieve, read.op.value, wait));
    default:
      return Promise.reject(new InvalidArgumentError("a read names no operation"));
  }
}

function settle<T>(p: Promise<T>): Promise<T | Error> {
  return p.catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
}

function answer(r: ReadResult): ReadAnswer | Error {
  switch (r.result?.$case) {
    case "failure": {
      const error = giveUp(statusOfFailure(r.result.value));
      return error instanceof NotFoundError ? undefined : error;
    }
    case "get":
    case "retrieve":
      return r.result.value;
    default:
      return new InvalidArgumentError("the node answered a read with nothing");
  }
}

function batchFull(r: ReadAnswer | Error): boolean {
  return r instanceof Error && "reason" in r && r.reason === "batch_full";
}

/** One call of the Reads service, with failover and retries. */
async function submitOnce(client: Transport, reads: Read[]): Promise<(ReadAnswer | Error)[]> {
  try {
    const resp = await client.call(ReadsService.submit, { reads }, { check: retryableFailure });
    return resp.results.map(answer);
  } catch (e) {
    if (e instanceof UnimplementedError) return Promise.all(reads.map((r) => settle(one(client, r))));
    throw e;
  }
}

/** One read alone on its own method; several in calls of Reads.Submit until each is answered. */
async function submit(client: Transport, reads: Read[], wait?: Wait): Promise<(ReadAnswer | Error)[]> {
  const [first] = reads;
  if (reads.length === 1 && first) return [await one(client, first, wait)];
  const answers: (ReadAnswer | Error)[] = new Array(reads.length).fill(undefined);
  let pending = reads.map((_, i) => i);
  while (pending.length > 0) {
    const results = await submitOnce(
      client,
      pending.map((i) => reads[i] as Read),
    );
    // A node always serves a call's first read; one that served none gets its answers as they are.
    const noneServed = results.every(batchFull);
    const unserved: number[] = [];
    pending.forEach((i, k) => {
      const r = results[k];
      if (batchFull(r) && !noneServed) unserved.push(i);
      else answers[i] = r;
    });
    pending = unserved;
  }
  return answers;
}

/** @internal A client's queue of point reads and the calls carrying them. */
export function readCoalescer(client: Transport, maxCalls: number): Coalescer<Read, ReadAnswer> {
  return new Coalescer<Read, ReadAnswer>((items, wait) => submit(client, items, wait), "read", {
    maxCalls,
    maxItems: MAX_SUBMIT_READS,
    maxBytes: MAX_SUBMIT_READ_BYTES,
  });
}
