/**
 * The official Python MCP SDK's client (`mcp.Client`), run as a process
 * (test/fixtures/mcp_client.py) and called from the tests: the client whose
 * default mode negotiates protocol 2026-07-28 with a server that speaks it
 * (the TypeScript SDK's clients default to the 2025 handshake), so a test
 * sees what a default client sees.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { CallToolResult } from "@modelcontextprotocol/server";

const DRIVER = fileURLToPath(new URL("fixtures/mcp_client.py", import.meta.url));

/** `default`: `mcp.Client(url)` as it comes; `legacy`: `mode="legacy"`, the 2025-11-25 handshake. */
export type PythonClientMode = "default" | "legacy";

interface Pending {
  resolve(result: CallToolResult): void;
  reject(error: Error): void;
}

interface Answer {
  protocol?: string;
  id?: number;
  result?: CallToolResult;
  error?: string;
}

export class PythonMcpClient {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private stderr = "";
  private exited: Promise<void>;
  private connected: (protocol: string) => void = () => {};

  private constructor(private readonly proc: ChildProcess) {
    proc.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-8_000);
    });
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on("line", (line) => this.read(line));
    this.exited = new Promise((resolve) => {
      proc.once("exit", () => {
        for (const p of this.pending.values()) p.reject(new Error(`the Python client exited:\n${this.stderr}`));
        this.pending.clear();
        resolve();
      });
    });
  }

  /** Starts the client on `url` and waits until it has connected; `protocol` is what it negotiated. */
  static async start(
    python: string,
    url: string,
    mode: PythonClientMode,
  ): Promise<{ client: PythonMcpClient; protocol: string }> {
    const client = new PythonMcpClient(spawn(python, [DRIVER, url, mode], { stdio: ["pipe", "pipe", "pipe"] }));
    const protocol = await Promise.race([
      new Promise<string>((resolve) => {
        client.connected = resolve;
      }),
      client.exited.then(() => {
        throw new Error(`the Python client did not connect to ${url}:\n${client.stderr}`);
      }),
    ]);
    return { client, protocol };
  }

  private read(line: string): void {
    let answer: Answer;
    try {
      answer = JSON.parse(line) as Answer;
    } catch {
      this.stderr += `${line}\n`; // not the driver's: kept for the error message
      return;
    }
    if (answer.protocol !== undefined) {
      this.connected(answer.protocol);
      return;
    }
    const pending = this.pending.get(answer.id ?? -1);
    if (!pending) return;
    this.pending.delete(answer.id ?? -1);
    if (answer.result) pending.resolve(answer.result);
    else pending.reject(new Error(answer.error ?? `no result in ${line}`));
  }

  /** The SDK's `call_tool`; rejects with the client's error (a transport failure, an HTTP error). */
  callTool(tool: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.proc.stdin?.write(`${JSON.stringify({ id, tool, args })}\n`);
    });
  }

  /** Closes stdin (the client disconnects and exits); kills it if it has not within 10 s. */
  async close(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.stdin?.end();
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
