/**
 * An HTTP load balancer of the resume tests' own: it forwards every
 * request to the replica it points at, and cuts the SSE stream of the next
 * `tools/call` after the priming event and `k` more events, on an event
 * boundary, as a lost connection would; from then on it points at the other
 * replica, so the SDK client's reconnection (a GET with `Last-Event-ID`)
 * lands there.
 */
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";

export interface Cut {
  /** Message events to let through after the priming event. */
  readonly k: number;
  /** Where requests go after the cut. */
  readonly after: number;
  /** Called at the cut, before anything else reaches a replica. */
  readonly onCut?: () => void;
}

/** What the proxy saw: the ids of the events the cut stream carried, and the resumptions by replica port. */
export interface Seen {
  readonly cutStreamIds: string[];
  readonly resumes: { readonly port: number; readonly lastEventId: string }[];
}

export class CuttingProxy {
  private server: Server | undefined;
  private armed: Cut | undefined;
  port = 0;
  readonly seen: Seen = { cutStreamIds: [], resumes: [] };

  constructor(public target: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  /** Cuts the next tool call's stream as `cut` says. */
  arm(cut: Cut): void {
    this.armed = cut;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.forward(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const port = this.target;
    const lastEventId = req.headers["last-event-id"];
    if (typeof lastEventId === "string") this.seen.resumes.push({ port, lastEventId });
    const cut = req.method === "POST" && body.includes('"tools/call"') ? this.armed : undefined;
    if (cut) this.armed = undefined;
    const upstream = request({ host: "127.0.0.1", port, path: req.url, method: req.method, headers: req.headers });
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    upstream.on("response", (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (cut && String(answer.headers["content-type"]).startsWith("text/event-stream")) this.cutting(answer, res, cut);
      else answer.pipe(res);
    });
    upstream.end(body);
  }

  /** Passes whole SSE events through until the cut, which comes once the last of them is flushed. */
  private cutting(answer: IncomingMessage, res: ServerResponse, cut: Cut): void {
    let buffered = "";
    let primed = false;
    let messages = 0;
    answer.setEncoding("utf8");
    answer.on("data", (text: string) => {
      buffered += text;
      for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
        const event = buffered.slice(0, end + 2);
        buffered = buffered.slice(end + 2);
        const id = /^id: (.*)$/m.exec(event)?.[1];
        if (id !== undefined) this.seen.cutStreamIds.push(id);
        if (/^data: \S/m.test(event)) messages++;
        else if (id !== undefined) primed = true;
        if (!primed || messages < cut.k) {
          res.write(event);
          continue;
        }
        answer.destroy();
        this.target = cut.after;
        cut.onCut?.();
        res.write(event, () => res.socket?.destroy());
        return;
      }
    });
    answer.on("end", () => res.end());
  }
}
