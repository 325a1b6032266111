/**
 * The TypeScript client's mint, get, put and state get against a cluster,
 * beside ioredis' SET EX and GET against a Redis, each with N calls in
 * flight at once for a while: what `target/release/tsclient` runs
 * (tests/bench/src/bin/tsclient.rs), one JSON object per cell on stdout, as
 * tests/python/client_bench.py prints them for the Python client.
 *
 *     node --import tsx bench/clientBench.ts --endpoints 127.0.0.1:7401,... \
 *         --redis redis://127.0.0.1:6379/ --tasks 1,64 --seconds 10
 *
 * (from client/ts, so that its node_modules resolve).
 */
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { Client, type StoreItem } from "../src/index.js";
import { cell, inBatches, type Op, pick } from "./cells.js";

/** A JSON string of 256 characters, as client_bench.py's. */
const VALUE = "v".repeat(256);
/** Keys written before a read workload, read at random. */
const PRELOAD = 1000;
/** The minted handles' and SET EX keys' TTL: one hour. */
const TTL_MS = 3_600_000;

async function handlestoreOps(endpoints: string): Promise<[Record<string, Op>, () => Promise<void>]> {
  const client = new Client({ endpoints, namespace: "bench" });
  const store = client.handleStore<string>("bench", { defaultTtl: TTL_MS });
  const keys: string[] = [];
  await inBatches(Array.from({ length: PRELOAD }), 100, async () => keys.push(await store.mint(VALUE)));
  const tool = client.stateTool();
  const names = Array.from({ length: PRELOAD }, (_, i) => `bench/read/${i}`);
  await inBatches(names, 100, (key) => tool.batchStore([{ key, value: VALUE } satisfies StoreItem]));
  const ops: Record<string, Op> = {
    mint: () => store.mint(VALUE),
    get: async () => {
      if ((await store.get(pick(keys))) === undefined) throw new Error("a preloaded handle is missing");
    },
    put: () => store.put(pick(keys), VALUE),
    state_get: async () => {
      if ((await tool.get(pick(names))) === undefined) throw new Error("a preloaded state key is missing");
    },
  };
  return [ops, async () => client.close()];
}

async function redisOps(url: string): Promise<[Record<string, Op>, () => Promise<void>]> {
  const redis = new Redis(url);
  const keys = Array.from({ length: PRELOAD }, (_, i) => `bench:read:${i}`);
  await inBatches(keys, 100, (k) => redis.set(k, VALUE));
  const ops: Record<string, Op> = {
    set_ex: (i) => redis.set(`bench:w:${i}`, VALUE, "EX", TTL_MS / 1000),
    get: async () => {
      if ((await redis.get(pick(keys))) === null) throw new Error("a preloaded key is missing");
    },
  };
  return [ops, async () => void (await redis.quit())];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      endpoints: { type: "string" },
      redis: { type: "string" },
      tasks: { type: "string", default: "1,64" },
      seconds: { type: "string", default: "10" },
    },
  });
  const levels = values.tasks.split(",").map(Number);
  const seconds = Number(values.seconds);
  const systems: [string, () => Promise<[Record<string, Op>, () => Promise<void>]>][] = [];
  if (values.endpoints) systems.push(["ts-client", () => handlestoreOps(values.endpoints as string)]);
  if (values.redis) systems.push(["ioredis", () => redisOps(values.redis as string)]);
  for (const [system, open] of systems) {
    const [ops, close] = await open();
    for (const [name, op] of Object.entries(ops)) {
      for (const tasks of levels) console.log(JSON.stringify(await cell(system, name, op, tasks, seconds)));
    }
    await close();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
