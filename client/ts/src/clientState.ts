/**
 * `ClientStateStore`: what an MCP client must remember to survive its own
 * restart (session id, access token, negotiated protocol version, server
 * capabilities), kept in the state tool under `mcp-clients/<client key>/...`,
 * the same keys as the Rust and Python clients' ClientStateStore. The access
 * token is stored encrypted with the replicated key ring (AES-256-GCM, bound
 * to the client key and the field), so only holders of the ring read it.
 */
import type { Client } from "./cluster.js";
import { InvalidArgumentError } from "./gen/reasons.js";
import { isName } from "./ids.js";
import { RequestStateCodec } from "./requestState.js";
import type { StateTool } from "./state.js";

export const ROOT = "mcp-clients";
const SESSION_ID = "session-id";
const ACCESS_TOKEN = "access-token";
const PROTOCOL_VERSION = "protocol-version";
const SERVER_CAPABILITIES = "server-capabilities";
/** The sealed token carries an expiry (s); the store's own TTL (none) governs. */
const TOKEN_SEAL_TTL = 10 * 365 * 24 * 3600;
const CONTROL = /\p{Cc}/u;

function checkClientKey(key: string): void {
  const ok =
    typeof key === "string" && key !== "" && Buffer.byteLength(key) <= 128 && !key.includes("/") && !CONTROL.test(key);
  if (!ok) {
    throw new InvalidArgumentError(
      `client key ${JSON.stringify(key)} must be 1-128 bytes without '/' or control characters`,
    );
  }
}

/** Persisted state of one MCP client, under a client key of your choice (e.g. the server URL's host plus a user id). */
export class ClientStateStore {
  constructor(
    private readonly tool: StateTool,
    private readonly codec: RequestStateCodec,
    readonly clientKey: string,
  ) {
    if (codec.mode !== "encrypted")
      throw new InvalidArgumentError('the access token needs an encrypting codec ("encrypted")');
    checkClientKey(clientKey);
  }

  /** A store in the client's namespace, encrypting with its key ring (which must exist: `handlestore keyring create`). */
  static async fromCluster(client: Client, clientKey: string): Promise<ClientStateStore> {
    const codec = await RequestStateCodec.fromCluster(client, "encrypted");
    return new ClientStateStore(client.stateTool(), codec, clientKey);
  }

  private key(field: string): string {
    if (!isName(field, 128))
      throw new InvalidArgumentError(`field ${JSON.stringify(field)} may only contain A-Z a-z 0-9 _ - .`);
    return `${ROOT}/${this.clientKey}/${field}`;
  }

  private async string(field: string): Promise<string | undefined> {
    const value = await this.tool.get(this.key(field));
    return typeof value === "string" ? value : undefined;
  }

  /** Forgets `field`. */
  async clearField(field: string): Promise<void> {
    await this.tool.delete(this.key(field));
  }

  /** Stores any JSON `value` under `field`, in the clear (for what is not secret). */
  async setField(field: string, value: unknown): Promise<void> {
    await this.tool.store(this.key(field), value);
  }

  /** What `setField` stored under `field`, or undefined. */
  field(field: string): Promise<unknown> {
    return this.tool.get(this.key(field));
  }

  async setSessionId(sessionId: string): Promise<void> {
    await this.tool.store(this.key(SESSION_ID), sessionId);
  }

  sessionId(): Promise<string | undefined> {
    return this.string(SESSION_ID);
  }

  clearSessionId(): Promise<void> {
    return this.clearField(SESSION_ID);
  }

  /** Stores any JSON `value` under `field`, encrypted and bound to this client key and the field. */
  async setSealed(field: string, value: unknown): Promise<void> {
    const sealed = await this.codec.encode(value, this.clientKey, { tool: field, ttl: TOKEN_SEAL_TTL });
    await this.tool.store(this.key(field), sealed);
  }

  /** What `setSealed` stored under `field`; undefined if nothing is there, or it no longer decrypts (its key was retired). */
  async sealed(field: string): Promise<unknown> {
    const blob = await this.string(field);
    return blob === undefined ? undefined : this.codec.decode(blob, this.clientKey, { tool: field });
  }

  /** Stores the token encrypted. */
  setAccessToken(token: string): Promise<void> {
    return this.setSealed(ACCESS_TOKEN, token);
  }

  /** The token; undefined if there is none or it no longer decrypts: then the client signs in again. */
  async accessToken(): Promise<string | undefined> {
    const token = await this.sealed(ACCESS_TOKEN);
    return typeof token === "string" ? token : undefined;
  }

  clearAccessToken(): Promise<void> {
    return this.clearField(ACCESS_TOKEN);
  }

  async setProtocolVersion(version: string): Promise<void> {
    await this.tool.store(this.key(PROTOCOL_VERSION), version);
  }

  protocolVersion(): Promise<string | undefined> {
    return this.string(PROTOCOL_VERSION);
  }

  clearProtocolVersion(): Promise<void> {
    return this.clearField(PROTOCOL_VERSION);
  }

  async setServerCapabilities(capabilities: unknown): Promise<void> {
    await this.tool.store(this.key(SERVER_CAPABILITIES), capabilities);
  }

  serverCapabilities(): Promise<unknown> {
    return this.tool.get(this.key(SERVER_CAPABILITIES));
  }

  clearServerCapabilities(): Promise<void> {
    return this.clearField(SERVER_CAPABILITIES);
  }

  /** Forgets everything stored for this client. */
  async clear(): Promise<void> {
    await this.tool.deletePrefix(`${ROOT}/${this.clientKey}/`, { limit: 100 });
  }
}
