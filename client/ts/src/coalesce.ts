/**
 * Calls shared by concurrent requests of one client: the seam under
 * writes.ts (writes share Writes.Submit) and reads.ts (point reads share
 * Reads.Submit), as the Rust and Python clients' `coalesce`.
 *
 * At most `maxCalls` calls are in flight. A request that finds a call free
 * is sent at once, alone: a lone caller waits for nothing. A request that
 * finds them all busy waits in a queue, and when a call ends, what queued by
 * then leaves together in the next one, up to the bounds. Each request still
 * gets its own answer or error; a call that fails as a whole fails each of
 * its requests. A request whose caller gave up while it waited is never sent.
 */
import { DeadlineError } from "./deadline.js";
import { HandlestoreError } from "./errorBase.js";

export interface Bounds {
  readonly maxCalls: number;
  readonly maxItems: number;
  readonly maxBytes: number;
}

/** Requests sent so far, and the calls that carried them. */
export interface CallStats {
  sent: number;
  calls: number;
}

/** The caller's own limits while it waits: its signal and deadline (ms). */
export interface Wait {
  readonly signal?: AbortSignal | undefined;
  readonly deadline: number;
}

/** One call for the requests given: a result (or an Error) per request. `wait` is the lone caller's. */
export type Submit<I, R> = (items: I[], wait?: Wait) => Promise<(R | Error)[]>;

interface Waiting<I, R> {
  readonly item: I;
  readonly size: number;
  settled: boolean;
  resolve(result: R | Error): void;
}

function raised<R>(result: R | Error): R {
  if (result instanceof Error) throw result;
  return result;
}

export class Coalescer<I, R> {
  readonly stats: CallStats = { sent: 0, calls: 0 };
  private readonly waiting: Waiting<I, R>[] = [];
  private inFlight = 0;

  constructor(
    private readonly submit: Submit<I, R>,
    private readonly what: string,
    private readonly bounds: Bounds,
    /** Told of a request dropped unsent (its caller gave up). */
    private readonly discard: (item: I) => void = () => {},
  ) {}

  /** Sends `item`, alone or with others; its result, or its error thrown. */
  async run(item: I, size: number, wait: Wait): Promise<R> {
    if (this.inFlight < Math.max(1, this.bounds.maxCalls) && this.waiting.length === 0) {
      this.inFlight++;
      try {
        const [result] = await this.call([item], wait);
        return raised(result as R | Error);
      } finally {
        this.release();
      }
    }
    return raised(await this.queue(item, size, wait));
  }

  /** Queues `item` for the next free call; rejects with the caller's reason if it gives up first. */
  private queue(item: I, size: number, wait: Wait): Promise<R | Error> {
    return new Promise<R | Error>((resolve, reject) => {
      const settle = () => {
        if (w.settled) return false;
        w.settled = true;
        clearTimeout(timer);
        wait.signal?.removeEventListener("abort", onAbort);
        return true;
      };
      const giveUp = (why: unknown) => {
        const at = this.waiting.indexOf(w);
        if (!settle()) return;
        if (at >= 0) {
          this.waiting.splice(at, 1);
          this.discard(item);
        }
        reject(why);
      };
      const timer = setTimeout(() => giveUp(this.late(w, wait.deadline)), wait.deadline);
      const onAbort = () => giveUp(wait.signal?.reason);
      const w: Waiting<I, R> = {
        item,
        size,
        settled: false,
        resolve: (result) => {
          if (settle()) resolve(result);
        },
      };
      wait.signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(w);
      // Requests queue only while every call is busy, and a call that ends
      // drains the queue; this covers a queue found with a call free.
      if (this.inFlight < Math.max(1, this.bounds.maxCalls)) {
        this.inFlight++;
        void this.drain();
      }
    });
  }

  /** The error of a request not answered within its deadline: still queued, or in a shared call. */
  private late(w: Waiting<I, R>, deadline: number): Error {
    const last = this.waiting.includes(w)
      ? `waiting for a free call (every ${this.what} call of this client is busy)`
      : `the shared ${this.what} call carrying it did not answer`;
    return new DeadlineError(deadline, last);
  }

  /** A call ended: its slot drains what queued meanwhile, or is freed. */
  private release(): void {
    if (this.waiting.length > 0) void this.drain();
    else this.inFlight--;
  }

  /** Sends what is queued, call after call, on the slot it was given. */
  private async drain(): Promise<void> {
    try {
      for (let batch = this.take(); batch.length > 0; batch = this.take()) await this.send(batch);
    } finally {
      this.inFlight--;
    }
  }

  /** The next call's requests, in order, up to the bounds (at least one). */
  private take(): Waiting<I, R>[] {
    const batch: Waiting<I, R>[] = [];
    let bytes = 0;
    while (this.waiting.length > 0) {
      const next = this.waiting[0] as Waiting<I, R>;
      const full = batch.length >= this.bounds.maxItems || bytes + next.size > this.bounds.maxBytes;
      if (batch.length > 0 && full) break;
      this.waiting.shift();
      bytes += next.size;
      batch.push(next);
    }
    return batch;
  }

  private async send(batch: Waiting<I, R>[]): Promise<void> {
    let results: (R | Error)[];
    try {
      results = await this.call(batch.map((w) => w.item));
    } catch (e) {
      const error = e instanceof Error ? e : new HandlestoreError(String(e), { cause: e });
      for (const w of batch) w.resolve(error);
      return;
    }
    batch.forEach((w, i) => {
      w.resolve(results[i] as R | Error);
    });
  }

  private async call(items: I[], wait?: Wait): Promise<(R | Error)[]> {
    this.stats.sent += items.length;
    this.stats.calls += 1;
    const results = await this.submit(items, wait);
    if (results.length !== items.length) {
      throw new HandlestoreError(`the node answered ${results.length} results for ${items.length} requests`);
    }
    return results;
  }
}
