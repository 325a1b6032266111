/**
 * Client options from the environment, with the names the `handlestore`
 * CLI and the other clients read: HANDLESTORE_ENDPOINTS (comma-separated),
 * HANDLESTORE_NAMESPACE, HANDLESTORE_CACERT (+ HANDLESTORE_CERT and
 * HANDLESTORE_KEY), HANDLESTORE_TOKEN or HANDLESTORE_TOKEN_FILE.
 */
import { readFileSync } from "node:fs";
import type { TlsOptions } from "./connections.js";
import { InvalidArgumentError } from "./gen/reasons.js";
import type { ClientOptions } from "./options.js";

/** A token kept in a file (a container secret): its first line, trimmed. */
export function readTokenFile(path: string): string {
  const first = readFileSync(path, "utf8").trim().split(/\r?\n/)[0]?.trim() ?? "";
  if (first === "") throw new InvalidArgumentError(`${path}: the token file is empty`);
  return first;
}

/** TLS from PEM files: the CA, and a client certificate and its key (both or neither). */
export function tlsFromFiles(ca: string, cert?: string, key?: string): TlsOptions {
  if ((cert === undefined) !== (key === undefined)) {
    throw new InvalidArgumentError("a client certificate needs its key, and a key its certificate");
  }
  const read = (path: string | undefined) => (path === undefined ? undefined : readFileSync(path));
  return { ca: readFileSync(ca), cert: read(cert), key: read(key) };
}

function set(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === "" ? undefined : value;
}

/** The options the environment gives (the token from HANDLESTORE_TOKEN before HANDLESTORE_TOKEN_FILE). */
export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): ClientOptions {
  const ca = set(env, "HANDLESTORE_CACERT");
  const tokenFile = set(env, "HANDLESTORE_TOKEN_FILE");
  return {
    endpoints: set(env, "HANDLESTORE_ENDPOINTS") ?? "",
    namespace: set(env, "HANDLESTORE_NAMESPACE") ?? "default",
    tls: ca === undefined ? undefined : tlsFromFiles(ca, set(env, "HANDLESTORE_CERT"), set(env, "HANDLESTORE_KEY")),
    token: set(env, "HANDLESTORE_TOKEN") ?? (tokenFile === undefined ? undefined : readTokenFile(tokenFile)),
  };
}
