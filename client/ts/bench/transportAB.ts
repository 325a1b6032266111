/**
 * The A/B of TypeScript transports (docs/dev/mcp-path.md): one unary call,
 * `Handles.Get` of a preloaded handle (a linearizable read), made bare
 * through each transport against the same cluster, with N calls in flight,
 * alternated over rounds; what each costs this process in CPU per call is
 * the figure (the node's cost is the same for all of them).
 *
 *   - `grpc-js`: @grpc/grpc-js with the ts-proto stubs the client uses;
 *   - `connect-es`: @connectrpc/connect-node's gRPC transport over HTTP/2,
 *     with protobuf-es messages from descriptors `buf build` makes of
 *     proto/ at start (no second generated copy of the contract);
 *   - `ts-client`: this package's `HandleStore.get` (grpc-js, plus the
 *     client's retries, coalescing and codecs), for scale.
 *
 *     node --import tsx bench/transportAB.ts --endpoint 127.0.0.1:7401 \
 *         --tasks 1,64 --seconds 5 --rounds 3
 *
 * (from client/ts). One JSON object per cell on stdout, then the medians.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { credentials } from "@grpc/grpc-js";
import { GetRequest, HandlesClient } from "../src/gen/handlestore/v1/handles.js";
import { Client } from "../src/index.js";
import { type Cell, cell, inBatches, type Op, pick } from "./cells.js";

const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "..");
const NAMESPACE = "bench";
const STORE = "transport";
const VALUE = "v".repeat(256);
const PRELOAD = 1000;

type Transport = [name: string, open: (endpoint: string, ids: string[]) => [Op, () => void]];

function grpcJs(endpoint: string, ids: string[]): [Op, () => void] {
  const stub = new HandlesClient(endpoint, credentials.createInsecure());
  const op: Op = () =>
    new Promise((resolve, reject) => {
      const request = GetRequest.fromPartial({ namespace: NAMESPACE, store: STORE, id: pick(ids) });
      stub.get(request, (e, r) => (e ? reject(e) : resolve(r)));
    });
  return [op, () => stub.close()];
}

/** The Handles service's descriptor, from the .proto files as `buf build` reads them. */
function handlesService() {
  const dir = mkdtempSync(join(tmpdir(), "hs-ab-"));
  try {
    const image = join(dir, "image.binpb");
    const buf = join(PACKAGE, "node_modules", ".bin", "buf");
    const proto = join(PACKAGE, "..", "..", "proto");
    execFileSync(buf, [
      "build",
      proto,
      "--path",
      join(proto, "handlestore", "v1"),
      "--as-file-descriptor-set",
      "-o",
      image,
    ]);
    const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(image)));
    const service = registry.getService("handlestore.v1.Handles");
    if (!service) throw new Error("no handlestore.v1.Handles in the descriptors");
    return service;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function connectEs(endpoint: string, ids: string[]): [Op, () => void] {
  const transport = createGrpcTransport({ baseUrl: `http://${endpoint}` });
  const client = createClient(handlesService(), transport) as unknown as Record<
    string,
    (r: object) => Promise<unknown>
  >;
  const get = client.get;
  if (!get) throw new Error("no get method");
  return [() => get({ namespace: NAMESPACE, store: STORE, id: pick(ids) }), () => {}];
}

function tsClient(endpoint: string, ids: string[]): [Op, () => void] {
  const client = new Client({ endpoints: endpoint, namespace: NAMESPACE });
  const store = client.handleStore<string>(STORE);
  return [() => store.get(pick(ids)), () => void client.close()];
}

const TRANSPORTS: Transport[] = [
  ["grpc-js", grpcJs],
  ["connect-es", connectEs],
  ["ts-client", tsClient],
];

async function preload(endpoint: string): Promise<string[]> {
  const client = new Client({ endpoints: endpoint, namespace: NAMESPACE });
  const store = client.handleStore<string>(STORE, { defaultTtl: 3_600_000 });
  const ids: string[] = [];
  await inBatches(Array.from({ length: PRELOAD }), 100, async () => ids.push(await store.mint(VALUE)));
  client.close();
  return ids;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      endpoint: { type: "string", default: "127.0.0.1:7401" },
      tasks: { type: "string", default: "1,64" },
      seconds: { type: "string", default: "5" },
      rounds: { type: "string", default: "3" },
    },
  });
  const ids = await preload(values.endpoint);
  const cells: Cell[] = [];
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [name, open] of TRANSPORTS) {
      const [op, close] = open(values.endpoint, ids);
      await cell(name, "get", op, 8, 1); // warm-up: connections, JIT
      for (const tasks of values.tasks.split(",").map(Number)) {
        const c = await cell(name, "get", op, tasks, Number(values.seconds));
        cells.push(c);
        console.log(JSON.stringify({ round, ...c }));
      }
      close();
    }
  }
  for (const [name] of TRANSPORTS) {
    for (const tasks of values.tasks.split(",").map(Number)) {
      const mine = cells.filter((c) => c.system === name && c.concurrency === tasks);
      const cpu = mine.map((c) => c.client_cpu_us);
      const rate = median(mine.map((c) => c.throughput));
      console.log(
        `${name} x${tasks}: CPU/call median ${median(cpu).toFixed(0)} µs (${Math.min(...cpu).toFixed(0)}-${Math.max(...cpu).toFixed(0)}), ${rate.toFixed(0)} calls/s, errors ${mine.reduce((n, c) => n + c.errors, 0)}`,
      );
    }
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
