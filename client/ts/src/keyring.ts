/**
 * The cluster's replicated key ring (per namespace): list, create, rotate,
 * retire. Secrets are drawn by the leader from its CSPRNG inside a
 * replicated command, so every node holds the same ring.
 */
import { Consistency, readOptions } from "./consistency.js";
import { AdminService, type KeyringResponse } from "./gen/handlestore/v1/admin.js";
import type { WriteId } from "./gen/handlestore/v1/common.js";
import type { CallOptions } from "./options.js";
import type { Transport } from "./transport.js";

/** One key of the ring. */
export interface RingKey {
  readonly id: string;
  /** The primary seals new request state; every key opens. */
  readonly primary: boolean;
  readonly createdMs: number;
  /** Empty unless asked for. */
  readonly secret: Uint8Array;
}

function keys(resp: KeyringResponse): RingKey[] {
  return resp.keys.map((k) => ({
    id: k.id,
    primary: k.state === "primary",
    createdMs: Number(k.createdMs),
    secret: k.secret,
  }));
}

/** A key-ring change with a write id of its own, held until it is answered. */
async function change<T>(client: Transport, send: (writeId: WriteId) => Promise<T>): Promise<T> {
  const ticket = client.writeTicket();
  try {
    return await send(ticket.id);
  } finally {
    ticket.release();
  }
}

/** @internal The key ring of the client's namespace, oldest first; secrets only when asked for. */
export async function keyring(
  client: Transport,
  options: CallOptions & { includeSecrets?: boolean | undefined } = {},
): Promise<RingKey[]> {
  const request = {
    namespace: client.namespace,
    includeSecrets: options.includeSecrets ?? false,
    read: readOptions(Consistency.linearizable),
  };
  return keys(await client.call(AdminService.keyringList, request, options));
}

/**
 * @internal Creates the ring with its first key (`create`; AlreadyExistsError if there
 * is one), or rotates it: a new primary, the old one kept for opening.
 * The new key's id.
 */
export function keyringRotate(
  client: Transport,
  options: CallOptions & { create?: boolean | undefined } = {},
): Promise<string> {
  return change(client, async (writeId) => {
    const request = { namespace: client.namespace, create: options.create ?? false, writeId };
    return (await client.call(AdminService.keyringRotate, request, options)).keyId;
  });
}

/** @internal Retires a non-primary key: what it sealed no longer opens. */
export function keyringRetire(client: Transport, keyId: string, options: CallOptions = {}): Promise<void> {
  return change(client, async (writeId) => {
    await client.call(AdminService.keyringRetire, { namespace: client.namespace, keyId, writeId }, options);
  });
}
