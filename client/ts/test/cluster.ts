/**
 * Real clusters for the tests: the built `handlestore` binary on free
 * loopback ports, each node with its own temporary data directory, started
 * with the flags the Python and Rust tests use (client/python/tests/cluster.py).
 * One cluster runs at a time (the test files run one after another).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { credentials, Metadata } from "@grpc/grpc-js";
import { AdminClient, type StatusResponse } from "../src/gen/handlestore/v1/admin.js";
import { Client, type ClientOptions, tlsFromFiles } from "../src/index.js";
import { REPO } from "./vectors.js";

/** $HANDLESTORE_BIN, else a release build in $CARGO_TARGET_DIR, target/ or the CI's cache. */
export function handlestoreBin(): string {
  if (process.env.HANDLESTORE_BIN) return process.env.HANDLESTORE_BIN;
  const targets = [process.env.CARGO_TARGET_DIR, join(REPO, "target"), join(homedir(), ".cache/handlestore/target")];
  const found = targets.filter((t) => t !== undefined).map((t) => join(t, "release", "handlestore"));
  return found.find((p) => existsSync(p)) ?? join(homedir(), ".cache/handlestore/target/release/handlestore");
}

/** The test command built the binary just before the tests ($HANDLESTORE_REQUIRE_BIN=1, as tests/run.sh sets it): a missing one is a failure, not a skip. */
export const binaryRequired = process.env.HANDLESTORE_REQUIRE_BIN === "1";

/** Why the cluster tests cannot run here (undefined if they can); printed as they skip. */
export const skipReason: string | undefined = existsSync(handlestoreBin())
  ? undefined
  : `no handlestore binary at ${handlestoreBin()}: run \`cargo build --release\` or set HANDLESTORE_BIN`;
if (skipReason && binaryRequired) {
  throw new Error(`the cluster tests: ${skipReason} (HANDLESTORE_REQUIRE_BIN=1: the test command built it)`);
}
if (skipReason) console.log(`SKIPPED: the cluster tests: ${skipReason}`);

/** Notes a started cluster as a line "ts" in $HANDLESTORE_CLUSTER_RUNS (if set): tests/run.sh counts them, so a tier whose cluster tests all skipped cannot pass unseen. */
function counted(): void {
  const runs = process.env.HANDLESTORE_CLUSTER_RUNS;
  if (runs) appendFileSync(runs, "ts\n");
}

const usedPorts = new Set<number>();

/** A free loopback port, never the same one twice in a run. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
      });
    });
    if (port > 0 && !usedPorts.has(port)) {
      usedPorts.add(port);
      return port;
    }
  }
}

interface Node {
  readonly id: number;
  readonly addr: string;
  readonly data: string;
  readonly log: string;
  peerAddr: string;
  proc: ChildProcess | undefined;
}

export interface ClusterOptions {
  readonly size?: number;
  readonly tls?: boolean;
  /** With tls: client certificates for root and these names, and nodes that require one (`--tls-client-ca`). */
  readonly clientCerts?: readonly string[];
  readonly extraArgs?: readonly string[];
}

export class Cluster {
  readonly bin = handlestoreBin();
  readonly root = mkdtempSync(join(tmpdir(), "handlestore-ts-"));
  readonly nodes: Node[] = [];
  readonly certs: string | undefined;
  private readonly extraArgs: readonly string[];
  private readonly clientCerts: readonly string[];

  private constructor(options: ClusterOptions) {
    this.extraArgs = options.extraArgs ?? [];
    this.certs = options.tls ? join(this.root, "certs") : undefined;
    this.clientCerts = options.clientCerts ?? [];
  }

  /** A started cluster with a leader. */
  static async start(options: ClusterOptions = {}): Promise<Cluster> {
    const c = new Cluster(options);
    counted();
    for (let id = 1; id <= (options.size ?? 3); id++) {
      c.nodes.push({
        id,
        addr: `127.0.0.1:${await freePort()}`,
        data: join(c.root, `node-${id}`),
        log: join(c.root, `node-${id}.log`),
        peerAddr: c.certs ? `127.0.0.1:${await freePort()}` : "",
        proc: undefined,
      });
    }
    if (c.certs) c.makeCerts();
    for (const n of c.nodes) c.spawn(n.id);
    try {
      await c.waitLeader();
    } catch (e) {
      await c.stop();
      throw e;
    }
    return c;
  }

  private makeCerts(): void {
    const args = ["certs", "--dir", this.certs as string, "--client", "root"];
    for (const name of this.clientCerts) args.push("--client", name);
    for (const n of this.nodes) args.push("--node", `${n.id}=localhost,127.0.0.1`);
    execFileSync(this.bin, args, { stdio: "ignore" });
  }

  get endpoints(): string[] {
    return this.nodes.map((n) => n.addr);
  }

  node(id: number): Node {
    const n = this.nodes[id - 1];
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  /**
   * A client of this cluster, with its TLS if it has TLS, and where nodes
   * require client certificates, `certFor`'s (root's by default; `null`: none).
   */
  client(options: Partial<ClientOptions> & { certFor?: string | null } = {}): Client {
    const { certFor, ...rest } = options;
    const name = certFor === undefined && this.clientCerts.length > 0 ? "root" : certFor;
    const file = (f: string) => join(this.certs as string, f);
    const cert = name ? [file(`client-${name}.pem`), file(`client-${name}-key.pem`)] : [];
    const tls = this.certs ? tlsFromFiles(file("ca.pem"), ...cert) : undefined;
    return new Client({ endpoints: this.endpoints, tls, ...rest });
  }

  spawn(id: number): void {
    const n = this.node(id);
    const initial = this.nodes.map((m) => `${m.id}=${m.addr}${m.peerAddr ? `/${m.peerAddr}` : ""}`).join(",");
    const args = ["node", "--id", String(n.id), "--listen", n.addr, "--data", n.data, "--initial-cluster", initial];
    args.push("--heartbeat", "100ms", "--election-timeout", "700ms", "--sweep-interval", "100ms");
    if (this.certs) {
      const cert = join(this.certs, `node-${n.id}.pem`);
      const key = join(this.certs, `node-${n.id}-key.pem`);
      args.push("--tls-cert", cert, "--tls-key", key, "--peer-tls-cert", cert, "--peer-tls-key", key);
      args.push("--peer-tls-ca", join(this.certs, "ca.pem"), "--peer-listen", n.peerAddr);
      if (this.clientCerts.length > 0) args.push("--tls-client-ca", join(this.certs, "ca.pem"));
    }
    mkdirSync(n.data, { recursive: true });
    const log = openSync(n.log, "a");
    n.proc = spawn(this.bin, [...args, ...this.extraArgs], { stdio: ["ignore", log, log] });
  }

  /** SIGKILL: no goodbye, as a crash. */
  async kill(id: number): Promise<void> {
    const proc = this.node(id).proc;
    this.node(id).proc = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    proc.kill("SIGKILL");
    await exited;
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (n) => {
        const proc = n.proc;
        n.proc = undefined;
        if (!proc || proc.exitCode !== null) return;
        const exited = new Promise((resolve) => proc.once("exit", resolve));
        proc.kill("SIGTERM");
        const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    rmSync(this.root, { recursive: true, force: true });
  }

  logs(lines = 40): string {
    return this.nodes
      .map((n) => {
        const text = existsSync(n.log) ? readFileSync(n.log, "utf8").split("\n").slice(-lines).join("\n") : "";
        return `---- node ${n.id} ----\n${text}`;
      })
      .join("\n");
  }

  /** Node `id`'s status, asked of it alone. */
  status(id: number): Promise<StatusResponse> {
    const file = (f: string) => readFileSync(join(this.certs as string, f));
    const mtls = this.clientCerts.length > 0;
    const creds = !this.certs
      ? credentials.createInsecure()
      : mtls
        ? credentials.createSsl(file("ca.pem"), file("client-root-key.pem"), file("client-root.pem"))
        : credentials.createSsl(file("ca.pem"));
    const admin = new AdminClient(this.node(id).addr, creds);
    return new Promise<StatusResponse>((resolve, reject) => {
      admin.status({}, new Metadata(), { deadline: Date.now() + 1_000 }, (err, resp) => {
        admin.close();
        if (err) reject(err);
        else resolve(resp);
      });
    });
  }

  /** The leader's id, once every running node agrees on it. */
  async waitLeader(timeoutMs = 30_000): Promise<number> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const running = this.nodes.filter((n) => n.proc !== undefined);
      const seen = await Promise.all(running.map((n) => this.status(n.id).catch(() => undefined)));
      const leaders = new Set(seen.filter((s) => s?.state === "leader").map((s) => s?.nodeId));
      const [leader] = leaders;
      if (leaders.size === 1 && leader !== undefined && seen.every((s) => s?.leaderId === leader))
        return Number(leader);
      await sleep(100);
    }
    throw new Error(`no leader within ${timeoutMs} ms\n${this.logs()}`);
  }
}

/** Anything a test opens and must close when the cluster goes. */
export interface Closable {
  close(): void | Promise<void>;
}

/** A describe block's cluster: started before its tests, stopped after them with all it tracked. */
export interface ClusterFixture {
  /** The started cluster (only inside tests and hooks). */
  readonly cluster: Cluster;
  /** A client of the cluster, closed after the tests. */
  client(options?: Parameters<Cluster["client"]>[0]): Client;
  /** Closes `c` after the tests (before the cluster stops), and returns it. */
  track<C extends Closable>(c: C): C;
}

/**
 * Registers the `before` that starts a cluster and the `after` that closes
 * what was tracked (newest first) and stops it; call it inside a `describe`,
 * before its own hooks (a later `after` runs once the cluster has stopped).
 * A close that throws does not keep the others open or the cluster running:
 * the first such error fails the `after` once all is done.
 */
export function useCluster(options: ClusterOptions = {}): ClusterFixture {
  let started: Cluster | undefined;
  const tracked: Closable[] = [];
  before(async () => {
    started = await Cluster.start(options);
  });
  after(async () => {
    const failed: unknown[] = [];
    for (const c of tracked.splice(0).reverse()) {
      try {
        await c.close();
      } catch (e) {
        failed.push(e);
      }
    }
    await started?.stop();
    if (failed.length > 0) throw failed[0];
  });
  const fixture: ClusterFixture = {
    get cluster(): Cluster {
      if (!started) throw new Error("the cluster is not started yet: use it inside a test or hook");
      return started;
    },
    client: (o = {}) => fixture.track(fixture.cluster.client(o)),
    track: (c) => {
      tracked.push(c);
      return c;
    },
  };
  return fixture;
}
