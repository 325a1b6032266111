/**
 * The client's connections: one grpc-js channel per endpoint, dialed on
 * first use, with the credentials every call carries; which endpoint is
 * believed to lead; and one attempt of a call on one node.
 */
import * as grpc from "@grpc/grpc-js";
import { InvalidArgumentError } from "./gen/reasons.js";

/** The largest gRPC message sent or accepted (values are limited by the node). */
export const MAX_MESSAGE = 64 << 20;

/** TLS to the nodes: the cluster's CA (PEM), and a client certificate and key where the nodes require one. */
export interface TlsOptions {
  readonly ca: string | Uint8Array;
  readonly cert?: string | Uint8Array | undefined;
  readonly key?: string | Uint8Array | undefined;
}

/** A unary method of a generated service definition. */
export interface UnaryMethod<Req, Res> {
  readonly path: string;
  readonly requestStream: false;
  readonly responseStream: false;
  readonly requestSerialize: (value: Req) => Buffer;
  readonly responseDeserialize: (value: Buffer) => Res;
}

/** A server-streaming method of a generated service definition. */
export interface StreamMethod<Req, Res> {
  readonly path: string;
  readonly requestStream: false;
  readonly responseStream: true;
  readonly requestSerialize: (value: Req) => Buffer;
  readonly responseDeserialize: (value: Buffer) => Res;
}

// No connect timeout (wire.txt's connect_timeout): grpc-js takes none, so
// each attempt's timeout bounds its connecting too.
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_send_message_length": MAX_MESSAGE,
  "grpc.max_receive_message_length": MAX_MESSAGE,
  // A node that stops answering is noticed without calls in flight.
  "grpc.keepalive_time_ms": 10_000,
  "grpc.keepalive_timeout_ms": 5_000,
  // A restarted node is dialed again soon (the default waits up to two minutes).
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1_000,
  // Each client keeps its own connections.
  "grpc.use_local_subchannel_pool": 1,
};

/** "host:port" of an endpoint given as "host:port" or "http(s)://host:port". */
export function parseEndpoint(raw: string, tls: boolean): string {
  const at = raw.indexOf("://");
  const scheme = at < 0 ? (tls ? "https" : "http") : raw.slice(0, at);
  const rest = at < 0 ? raw : raw.slice(at + 3);
  if (scheme !== "http" && scheme !== "https") {
    throw new InvalidArgumentError(
      `endpoint ${JSON.stringify(raw)}: scheme ${scheme} is not supported (http or https)`,
    );
  }
  if (scheme === "https" && !tls) {
    throw new InvalidArgumentError(`endpoint ${JSON.stringify(raw)}: an https endpoint needs the cluster's CA (tls)`);
  }
  if (scheme === "http" && tls) {
    throw new InvalidArgumentError(
      `endpoint ${JSON.stringify(raw)}: tls is given, so endpoints are https:// (or host:port)`,
    );
  }
  const host = rest.replace(/\/+$/, "");
  if (!host || host.includes("/") || !host.includes(":")) {
    throw new InvalidArgumentError(`endpoint ${JSON.stringify(raw)}: expected host:port`);
  }
  return host;
}

function pem(value: string | Uint8Array | undefined): Buffer | null {
  if (value === undefined) return null;
  return typeof value === "string" ? Buffer.from(value) : Buffer.from(value);
}

function credentials(tls: TlsOptions | undefined): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new InvalidArgumentError("a client certificate needs its key, and a key its certificate");
  }
  return grpc.credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}

/** What the clones of a client share: the endpoints and their channels, the leader guess, the credentials. */
export class Connections {
  readonly targets: readonly string[];
  /** The endpoint calls go to first (the leader, when known). */
  preferred = 0;
  /** Watches opened, to spread them over the followers. */
  watches = 0;
  private readonly channels: (grpc.Client | undefined)[];
  private readonly creds: grpc.ChannelCredentials;
  private readonly base = new grpc.Metadata();

  constructor(targets: readonly string[], tls: TlsOptions | undefined, token: string | undefined) {
    this.targets = targets;
    this.channels = targets.map(() => undefined);
    this.creds = credentials(tls);
    if (token !== undefined) this.base.set("authorization", `Bearer ${token}`);
  }

  /** The channel to endpoint `index`, dialed now if it is not yet. */
  channel(index: number): grpc.Client {
    const open = this.channels[index];
    if (open) return open;
    const target = this.targets[index];
    if (target === undefined) throw new InvalidArgumentError(`no endpoint ${index}`);
    const made = new grpc.Client(target, this.creds, CHANNEL_OPTIONS);
    this.channels[index] = made;
    return made;
  }

  /** The metadata of one call (its credentials). */
  metadata(): grpc.Metadata {
    return this.base.clone();
  }

  /** The endpoint with this "host:port", if it is one of ours. */
  indexOf(addr: string | undefined): number | undefined {
    if (!addr) return undefined;
    const i = this.targets.indexOf(addr);
    return i < 0 ? undefined : i;
  }

  close(): void {
    this.channels.forEach((c, i) => {
      c?.close();
      this.channels[i] = undefined;
    });
  }
}

/** One attempt's answer: the response, and the headers it came with. */
export interface Answer<Res> {
  readonly response: Res;
  readonly headers: grpc.Metadata | undefined;
}

/** One attempt of a unary call on one node; rejects with grpc-js's ServiceError. */
export function unary<Req, Res>(
  channel: grpc.Client,
  method: UnaryMethod<Req, Res>,
  request: Req,
  metadata: grpc.Metadata,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Answer<Res>> {
  return new Promise((resolve, reject) => {
    let headers: grpc.Metadata | undefined;
    const onAbort = () => call.cancel();
    const options = { deadline: Date.now() + timeoutMs };
    const call = channel.makeUnaryRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      metadata,
      options,
      (err, response) => {
        signal?.removeEventListener("abort", onAbort);
        if (err || response === undefined) reject(err ?? new Error("no response"));
        else resolve({ response, headers });
      },
    );
    call.on("metadata", (m: grpc.Metadata) => {
      headers = m;
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
