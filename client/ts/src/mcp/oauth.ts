/**
 * The MCP TypeScript SDK client's `OAuthClientProvider`, with everything it
 * must remember in the cluster's client state store: the tokens, the
 * registered client's information (with its secret) and the PKCE code
 * verifier encrypted with the namespace's key ring (AES-256-GCM, bound to
 * the client key and the field), the discovery state (public metadata) in
 * the clear. A client that restarts, or another instance of it, finds them
 * and goes on without a new OAuth flow; a token one instance refreshes is
 * the one all use.
 *
 * Keys, beside the `ClientStateStore` fields, under
 * `mcp-clients/<client key>/`: `oauth-tokens` and `oauth-client-info` (the
 * Python package's ClusterTokenStorage writes the same, so Python and
 * TypeScript clients share a sign-in), `oauth-code-verifier`,
 * `oauth-discovery`. The provider keeps nothing in memory: every call reads
 * the cluster.
 */
import type { OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { ClientStateStore } from "../clientState.js";
import type { Client } from "../cluster.js";
import { NotFoundError } from "../gen/reasons.js";

export const TOKENS = "oauth-tokens";
export const CLIENT_INFO = "oauth-client-info";
export const CODE_VERIFIER = "oauth-code-verifier";
export const DISCOVERY = "oauth-discovery";

/** What only the application knows: where the user signs in, and who this client is. */
export interface ClusterOAuthClientProviderOptions {
  /** Where the authorization server sends the user back (undefined for non-interactive grants). */
  readonly redirectUrl: string | URL | undefined;
  readonly clientMetadata: OAuthClientMetadata;
  /** Sends the user agent to the authorization server. */
  readonly redirectToAuthorization: (authorizationUrl: URL) => void | Promise<void>;
  /** A client ID metadata document's URL, if the client has one. */
  readonly clientMetadataUrl?: string | undefined;
  /** The OAuth `state` parameter. */
  readonly state?: (() => string | Promise<string>) | undefined;
}

type Scope = "all" | "client" | "tokens" | "verifier" | "discovery";

const FIELDS: Record<Scope, readonly string[]> = {
  all: [TOKENS, CLIENT_INFO, CODE_VERIFIER, DISCOVERY],
  client: [CLIENT_INFO],
  tokens: [TOKENS],
  verifier: [CODE_VERIFIER],
  discovery: [DISCOVERY],
};

function object<T>(value: unknown): T | undefined {
  return value !== null && typeof value === "object" ? (value as T) : undefined;
}

/** Pass as `authProvider` to the SDK's client transports. */
export class ClusterOAuthClientProvider implements OAuthClientProvider {
  readonly clientMetadataUrl: string | undefined;
  readonly state: (() => string | Promise<string>) | undefined;

  constructor(
    readonly store: ClientStateStore,
    private readonly options: ClusterOAuthClientProviderOptions,
  ) {
    this.clientMetadataUrl = options.clientMetadataUrl;
    this.state = options.state;
  }

  /** A provider over the client state of `clientKey` in the client's namespace, encrypting with its key ring (which must exist). */
  static async fromCluster(
    client: Client,
    clientKey: string,
    options: ClusterOAuthClientProviderOptions,
  ): Promise<ClusterOAuthClientProvider> {
    return new ClusterOAuthClientProvider(await ClientStateStore.fromCluster(client, clientKey), options);
  }

  get redirectUrl(): string | URL | undefined {
    return this.options.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return this.options.clientMetadata;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    return object(await this.store.sealed(CLIENT_INFO));
  }

  async saveClientInformation(clientInformation: OAuthClientInformationMixed): Promise<void> {
    await this.store.setSealed(CLIENT_INFO, clientInformation);
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    return object(await this.store.sealed(TOKENS));
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    await this.store.setSealed(TOKENS, tokens);
  }

  redirectToAuthorization(authorizationUrl: URL): void | Promise<void> {
    return this.options.redirectToAuthorization(authorizationUrl);
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    await this.store.setSealed(CODE_VERIFIER, codeVerifier);
  }

  /** The verifier saved before the redirect; NotFoundError if there is none (the flow must start again). */
  async codeVerifier(): Promise<string> {
    const verifier = await this.store.sealed(CODE_VERIFIER);
    if (typeof verifier !== "string") throw new NotFoundError("no PKCE code verifier saved for this client");
    return verifier;
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    await this.store.setField(DISCOVERY, state);
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    return object(await this.store.field(DISCOVERY));
  }

  /** Forgets what the server said is no longer valid. */
  async invalidateCredentials(scope: Scope): Promise<void> {
    for (const field of FIELDS[scope] ?? []) await this.store.clearField(field);
  }
}
