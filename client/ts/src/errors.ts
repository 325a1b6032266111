/**
 * A gRPC status, as a node answers it, mapped onto the client's errors in
 * one place. A node puts its ErrorDetail (reason, leader, revisions) in the
 * `grpc-status-details-bin` trailer of every error, and in the `details` of
 * a write's failure inside a Writes.Submit answer, as gRPC's richer error
 * model has it: a `google.rpc.Status` (the call's code and message) whose
 * details hold the ErrorDetail as an `Any`. A node of the previous release
 * sent the bare ErrorDetail there: still read, for one release, when the
 * first form is not there (proto/vectors/error_details.json holds both).
 */
import { status as Code, type Metadata, type ServiceError } from "@grpc/grpc-js";
import { HandlestoreError, UnimplementedError } from "./errorBase.js";
import { Status as RpcStatus } from "./gen/google/rpc/status.js";
import { ErrorDetail } from "./gen/handlestore/v1/common.js";
import type { WriteFailure } from "./gen/handlestore/v1/writes.js";
import { CODE_ERRORS, isReason, REASON_ERRORS, REASONS, UnavailableError } from "./gen/reasons.js";

/** The trailer tonic puts a status's details in. */
export const DETAILS_KEY = "grpc-status-details-bin";

/** A status: of a call, or of one write (or read) of a Submit. */
export interface Status {
  readonly code: Code;
  readonly message: string;
  readonly detail: ErrorDetail;
  /** The trailers, for a call's status. */
  readonly metadata?: Metadata | undefined;
}

/** The type an `Any` holding an ErrorDetail names (after its URL's last "/", as every runtime's unpack reads it). */
const DETAIL_TYPE = "handlestore.v1.ErrorDetail";

/** The ErrorDetail in `raw`, in either form (empty if there is none). */
export function decodeDetail(raw: Uint8Array | undefined): ErrorDetail {
  if (!raw || raw.length === 0) return ErrorDetail.create();
  return inStatus(raw) ?? bare(raw) ?? ErrorDetail.create();
}

/** The first ErrorDetail among the details of the google.rpc.Status `raw`. */
function inStatus(raw: Uint8Array): ErrorDetail | undefined {
  try {
    const any = RpcStatus.decode(raw).details.find(
      (a) => a.typeUrl.slice(a.typeUrl.lastIndexOf("/") + 1) === DETAIL_TYPE,
    );
    return any && ErrorDetail.decode(any.value);
  } catch {
    return undefined;
  }
}

/**
 * The previous release's form, a bare ErrorDetail: it always names its
 * reason (a google.rpc.Status decoded as one never does, its field 1 being
 * a varint where the reason is a string; ts-proto skips such a field).
 */
function bare(raw: Uint8Array): ErrorDetail | undefined {
  try {
    const d = ErrorDetail.decode(raw);
    return d.reason ? d : undefined;
  } catch {
    return undefined;
  }
}

export function isServiceError(e: unknown): e is ServiceError {
  return e instanceof Error && typeof (e as ServiceError).code === "number" && "details" in e;
}

/** The status of a failed call. */
export function statusOf(err: ServiceError): Status {
  const raw = err.metadata?.get(DETAILS_KEY)[0];
  const detail = decodeDetail(typeof raw === "string" ? undefined : raw);
  return { code: err.code, message: err.details ?? "", detail, metadata: err.metadata };
}

/** The status a write's (or read's) own method would have answered. */
export function statusOfFailure(f: WriteFailure): Status {
  return { code: f.code as Code, message: f.message, detail: decodeDetail(f.details) };
}

// Codes outside the table that a transport or an older node gives.
const OTHER_CODES: ReadonlyMap<Code, typeof HandlestoreError> = new Map<Code, typeof HandlestoreError>([
  [Code.ABORTED, UnavailableError],
  [Code.CANCELLED, UnavailableError],
  [Code.UNIMPLEMENTED, UnimplementedError],
]);

/** The client's error for a status: the reason's class when the node gave a reason, else the code's. */
export function errorOf(s: Status): HandlestoreError {
  const name = s.detail.reason;
  const init = { code: s.code, detail: s.detail };
  if (isReason(name) && REASONS[name].code === s.code) return new REASON_ERRORS[name](s.message, init);
  const byCode = CODE_ERRORS.get(s.code) ?? OTHER_CODES.get(s.code);
  if (byCode) return new byCode(s.message, { ...init, reason: undefined });
  return new HandlestoreError(`${Code[s.code] ?? s.code}: ${s.message}`, init);
}
