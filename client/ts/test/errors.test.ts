/**
 * Errors follow the error table: each reason a node sends becomes the error
 * of its class, keeps the reason and the node's message, and is retried only
 * where the table says so. No cluster: the statuses are made here as a node
 * makes them (a google.rpc.Status holding the ErrorDetail, in the
 * grpc-status-details-bin trailer).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { status as Code, Metadata, type ServiceError } from "@grpc/grpc-js";
import { errorOf, statusOf } from "../src/errors.js";
import { Status as RpcStatus } from "../src/gen/google/rpc/status.js";
import { ErrorDetail } from "../src/gen/handlestore/v1/common.js";
import {
  AlreadyExistsError,
  CompactedError,
  FailedPreconditionError,
  HandlestoreError,
  HandlestoreTimeoutError,
  InternalError,
  InvalidArgumentError,
  NotFoundError,
  NotLeaderError,
  OutOfRangeError,
  PreconditionError,
  QuotaError,
  REASON_ERRORS,
  REASONS,
  type Reason,
  ResourceExhaustedError,
  RevisionMismatchError,
  SlowWatcherError,
  TimeoutError,
  UnavailableError,
  ValueTooLargeError,
} from "../src/index.js";
import { decide, leaderOf } from "../src/retry.js";

function serviceError(code: Code, message: string, detail?: Partial<ErrorDetail>, extra: [string, string][] = []) {
  const metadata = new Metadata();
  if (detail) {
    const any = {
      typeUrl: "type.googleapis.com/handlestore.v1.ErrorDetail",
      value: Buffer.from(ErrorDetail.encode(ErrorDetail.create(detail)).finish()),
    };
    const status = RpcStatus.encode({ code, message, details: [any] }).finish();
    metadata.set("grpc-status-details-bin", Buffer.from(status));
  }
  for (const [k, v] of extra) metadata.set(k, v);
  return Object.assign(new Error(`${code} ${Code[code]}: ${message}`), {
    code,
    details: message,
    metadata,
  }) as ServiceError;
}

function fromReason(reason: Reason, message = "what the node said", detail: Partial<ErrorDetail> = {}) {
  return statusOf(serviceError(REASONS[reason].code, message, { ...detail, reason }));
}

for (const reason of Object.keys(REASONS) as Reason[]) {
  test(`reason ${reason}: its class, its reason, the node's message, the table's retry`, () => {
    const s = fromReason(reason);
    const err = errorOf(s);
    assert.ok(err instanceof REASON_ERRORS[reason]);
    assert.ok(err instanceof HandlestoreError);
    assert.equal(err.reason, reason);
    assert.equal(err.code, REASONS[reason].code);
    assert.equal(err.message, "what the node said");
    assert.equal(decide(s).retry, REASONS[reason].retried === "yes");
    assert.equal(decide(s).resume, REASONS[reason].retried !== "no");
  });
}

test("a node's timeout is not named as AbortSignal.timeout()'s DOMException; its old class name still works", () => {
  const err = errorOf(fromReason("timeout"));
  assert.ok(err instanceof HandlestoreTimeoutError && err instanceof UnavailableError);
  // "TimeoutError" is what `AbortSignal.timeout()` rejects with: a caller's own deadline.
  assert.equal(err.name, "HandlestoreTimeoutError");
  assert.equal(`${err}`, "HandlestoreTimeoutError: what the node said");
  // The deprecated name is the same class, as a value and as a type.
  const old: TimeoutError = err;
  assert.ok(old instanceof TimeoutError);
  assert.equal(TimeoutError, HandlestoreTimeoutError);
});

test("the classes nest: a reason's class is its code's", () => {
  assert.ok(errorOf(fromReason("not_leader")) instanceof NotLeaderError);
  assert.ok(errorOf(fromReason("not_leader")) instanceof UnavailableError);
  assert.ok(errorOf(fromReason("value_too_large")) instanceof ValueTooLargeError);
  assert.ok(errorOf(fromReason("value_too_large")) instanceof InvalidArgumentError);
  assert.ok(errorOf(fromReason("compacted")) instanceof OutOfRangeError);
  assert.ok(errorOf(fromReason("quota")) instanceof QuotaError);
  assert.ok(errorOf(fromReason("slow_watcher")) instanceof ResourceExhaustedError);
  assert.ok(errorOf(fromReason("not_found")) instanceof NotFoundError);
  assert.ok(errorOf(fromReason("already_exists")) instanceof AlreadyExistsError);
  assert.ok(errorOf(fromReason("internal")) instanceof InternalError);
});

test("only a revision mismatch is one, with the entry's current revision", () => {
  const lost = errorOf(fromReason("revision_mismatch", "lost", { currentRevision: 7n }));
  assert.ok(lost instanceof RevisionMismatchError);
  assert.equal(lost.currentRevision, 7);
  for (const reason of ["precondition", "stale_write"] as const) {
    const refused = errorOf(fromReason(reason, "key k1 is the primary"));
    assert.ok(refused instanceof FailedPreconditionError);
    assert.ok(!(refused instanceof RevisionMismatchError));
    assert.equal(refused.message, "key k1 is the primary");
  }
  assert.ok(errorOf(fromReason("precondition")) instanceof PreconditionError);
});

test("compacted says from where the history is kept", () => {
  const err = errorOf(fromReason("compacted", "too old", { compactRevision: 42n }));
  assert.ok(err instanceof CompactedError);
  assert.equal(err.compactRevision, 42);
});

test("a quota and a slow watcher are told apart", () => {
  const quota = errorOf(fromReason("quota"));
  const slow = errorOf(fromReason("slow_watcher"));
  assert.ok(quota instanceof ResourceExhaustedError && slow instanceof SlowWatcherError);
  assert.deepEqual([quota.reason, slow.reason], ["quota", "slow_watcher"]);
});

test("a status without a reason gets its code's class; transport failures are retried", () => {
  const lostConnection = statusOf(serviceError(Code.UNAVAILABLE, "No connection established"));
  assert.ok(decide(lostConnection).retry);
  const err = errorOf(lostConnection);
  assert.ok(err instanceof UnavailableError);
  assert.equal(err.reason, undefined);
  assert.ok(decide(statusOf(serviceError(Code.DEADLINE_EXCEEDED, "Deadline exceeded"))).retry);
  assert.ok(!decide(statusOf(serviceError(Code.INVALID_ARGUMENT, "bad"))).retry);
  assert.ok(decide(statusOf(serviceError(Code.UNAVAILABLE, "TLS handshake failed: certificate unknown"))).tlsRefused);
});

test("a garbled detail trailer is ignored, never a crash", () => {
  const metadata = new Metadata();
  metadata.set("grpc-status-details-bin", Buffer.from([0xff, 0xff, 0xff]));
  const e = Object.assign(new Error("x"), { code: Code.NOT_FOUND, details: "gone", metadata }) as ServiceError;
  const err = errorOf(statusOf(e));
  assert.ok(err instanceof NotFoundError);
  assert.equal(err.message, "gone");
});

test("the leader a refusal names is read from its metadata", () => {
  const e = serviceError(Code.UNAVAILABLE, "not the leader", { reason: "not_leader" }, [
    ["x-handlestore-leader", "127.0.0.1:7402"],
  ]);
  assert.equal(leaderOf(statusOf(e).metadata), "127.0.0.1:7402");
});
