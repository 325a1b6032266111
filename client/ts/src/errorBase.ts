/**
 * The base of every error the client throws, and the errors the client
 * finds itself (no node said them). The classes of the node's reasons are
 * generated from the error table into gen/reasons.ts; errors.ts maps a gRPC
 * status onto them.
 */
import type { status as Code } from "@grpc/grpc-js";
import type { ErrorDetail } from "./gen/handlestore/v1/common.js";
import type { Reason } from "./gen/reasonTable.js";

export interface ErrorInit {
  /** The reason of the error table (the node's, or the class's own). */
  reason?: Reason | undefined;
  /** The gRPC status code the node answered with. */
  code?: Code | undefined;
  /** What the node said besides its message (leader, revisions). */
  detail?: ErrorDetail | undefined;
  cause?: unknown;
}

/** Base class of every error the client throws. `message` is the node's own. */
export class HandlestoreError extends Error {
  /** The reason of the error table; undefined for errors no node gave. */
  readonly reason: Reason | undefined;
  /** The gRPC status code, when a node (or the transport) answered. */
  readonly code: Code | undefined;
  /** The node's ErrorDetail, when it sent one. */
  readonly detail: ErrorDetail | undefined;

  constructor(message: string, init: ErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.reason = init.reason;
    this.code = init.code;
    this.detail = init.detail;
  }
}

/** The node does not know the method: it is older than this client. */
export class UnimplementedError extends HandlestoreError {}

/** A value could not be encoded or decoded as JSON. */
export class CodecError extends HandlestoreError {}

/** The store or client was closed. */
export class ClosedError extends HandlestoreError {}
