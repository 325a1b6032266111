/**
 * What the TypeScript benches share: a cell (N workers calling one
 * operation for a while, timed, with this process's CPU per call) and the
 * helpers around it.
 */

export type Op = (i: number) => Promise<unknown>;

export interface Cell {
  system: string;
  op: string;
  concurrency: number;
  ops: number;
  errors: number;
  seconds: number;
  throughput: number;
  p50_us: number;
  p99_us: number;
  /** CPU (user and system) of this process per call that succeeded, in µs: the client's own cost. */
  client_cpu_us: number;
  first_error: string | null;
}

export function pick<T>(keys: readonly T[]): T {
  return keys[Math.floor(Math.random() * keys.length)] as T;
}

/** The `q` quantile of sorted latencies in ms, in whole µs (0 if none). */
function quantileUs(sorted: readonly number[], q: number): number {
  const at = Math.min(sorted.length - 1, Math.floor(q * sorted.length));
  return sorted.length ? Math.floor((sorted[at] ?? 0) * 1000) : 0;
}

/** `tasks` workers loop on `op` for `seconds`: latencies of the calls that succeeded, errors counted (the first one kept). */
export async function cell(system: string, name: string, op: Op, tasks: number, seconds: number): Promise<Cell> {
  const took: number[] = [];
  let errors = 0;
  let firstError: string | null = null;
  const start = performance.now();
  const cpu = process.cpuUsage();
  const end = start + seconds * 1000;
  const worker = async (w: number) => {
    for (let i = 0; performance.now() < end; i++) {
      const t = performance.now();
      try {
        await op(w * 1_000_000 + i);
        took.push(performance.now() - t);
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      }
    }
  };
  await Promise.all(Array.from({ length: tasks }, (_, w) => worker(w)));
  const wall = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  took.sort((a, b) => a - b);
  return {
    system,
    op: name,
    concurrency: tasks,
    ops: took.length,
    errors,
    seconds: wall,
    throughput: took.length / wall,
    p50_us: quantileUs(took, 0.5),
    p99_us: quantileUs(took, 0.99),
    client_cpu_us: took.length ? (used.user + used.system) / took.length : 0,
    first_error: firstError,
  };
}

/** Runs `f` on each of `items`, `width` at a time. */
export async function inBatches<T>(
  items: readonly T[],
  width: number,
  f: (item: T) => Promise<unknown>,
): Promise<void> {
  for (let start = 0; start < items.length; start += width) {
    await Promise.all(items.slice(start, start + width).map(f));
  }
}
