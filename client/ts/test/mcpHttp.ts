/**
 * Helpers for the MCP tests: server processes started from a script (so
 * replicas share nothing but the cluster), and a TCP front that plays the
 * load balancer: it forwards each new connection to the replica it points
 * at, can hold new connections, and can cut the live ones.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { fileURLToPath } from "node:url";

export const TSX = fileURLToPath(import.meta.resolve("tsx"));

/** A process serving MCP over HTTP; its stdout lines are kept for `waitLine`. */
export class ServerProcess {
  readonly lines: string[] = [];
  private waiters: Array<() => void> = [];
  port = 0;
  exited = false;
  private stderr = "";

  private constructor(readonly proc: ChildProcess) {
    let buffered = "";
    proc.stdout?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const parts = buffered.split("\n");
      buffered = parts.pop() ?? "";
      this.lines.push(...parts);
      for (const w of this.waiters.splice(0)) w();
    });
    proc.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-8_000);
    });
    proc.once("exit", () => {
      this.exited = true;
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Starts `program args` (a TypeScript file runs under node with tsx) and waits for its `listening <port>` line. */
  static async start(program: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
    const ts = program.endsWith(".ts");
    const cmd = ts ? process.execPath : program;
    const argv = ts ? ["--import", TSX, program, ...args] : [...args];
    const proc = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    const s = new ServerProcess(proc);
    const line = await s.waitLine(/^listening (\d+)$/, 60_000);
    s.port = Number(/(\d+)$/.exec(line)?.[1]);
    return s;
  }

  /** Starts `program args` that serves on a port chosen beforehand, and waits until it accepts connections. */
  static async onPort(
    program: string,
    args: readonly string[],
    port: number,
    timeoutMs = 60_000,
  ): Promise<ServerProcess> {
    const proc = spawn(program, [...args], { stdio: ["ignore", "pipe", "pipe"] });
    const s = new ServerProcess(proc);
    s.port = port;
    try {
      await waitPort(port, timeoutMs, () => !s.exited);
    } catch (e) {
      await s.stop();
      throw new Error(`${program} did not start: ${(e as Error).message}\n${s.log}`);
    }
    return s;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  get log(): string {
    return `${this.lines.join("\n")}\n${this.stderr}`;
  }

  /** The first stdout line matching `re`, waiting for it. */
  async waitLine(re: RegExp, timeoutMs = 20_000): Promise<string> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find((l) => re.test(l));
      if (found !== undefined) return found;
      if (this.exited) throw new Error(`the process exited before printing ${re}:\n${this.log}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no line ${re} within ${timeoutMs} ms:\n${this.log}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise((resolve) => this.proc.once("exit", resolve));
    this.proc.kill("SIGKILL");
    await exited;
  }
}

/** A TCP load balancer in front of replicas. */
export class Front {
  private server: Server | undefined;
  private readonly live = new Set<Socket>();
  private held: Array<() => void> = [];
  private paused = false;
  port = 0;
  /** Connections forwarded to each target port. */
  readonly hits = new Map<number, number>();

  constructor(public target: number) {}

  async start(): Promise<this> {
    this.server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  private accept(socket: Socket): void {
    socket.on("error", () => socket.destroy());
    if (this.paused) this.held.push(() => this.forward(socket));
    else this.forward(socket);
  }

  private forward(client: Socket): void {
    if (client.destroyed) return;
    const port = this.target;
    this.hits.set(port, (this.hits.get(port) ?? 0) + 1);
    const upstream = createConnection({ host: "127.0.0.1", port });
    this.live.add(client);
    this.live.add(upstream);
    client.on("close", () => this.live.delete(client));
    upstream.on("close", () => {
      this.live.delete(upstream);
      client.destroy();
    });
    upstream.on("error", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  }

  /** New connections wait until `resume`. */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const go of this.held.splice(0)) go();
  }

  /** Cuts every forwarded connection, as a network failure would (held ones stay held). */
  cut(): void {
    for (const s of this.live) s.destroy();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** A free loopback port. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address ? address.port : 0;
}

/** Waits until something accepts connections on `port`. */
export async function waitPort(port: number, timeoutMs: number, alive: () => boolean): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: "127.0.0.1", port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
    if (ok) return;
    if (!alive() || Date.now() > end) throw new Error(`nothing listens on ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
