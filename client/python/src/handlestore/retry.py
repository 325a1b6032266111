"""Which failures are worth trying again on another node, as the error
table (`handlestore.reasons`) says: the policy under `Client.call`'s retry
loop and a watch's resuming.

A failure is a failed call (a gRPC status with its `ErrorDetail`) or a
`Failure`: one write's or read's failure inside a response of the Writes
or Reads service, as the status its own method would have answered.
"""

from __future__ import annotations

import grpc

from handlestore import errors, reasons
from handlestore.v1 import common_pb2, reads_pb2, writes_pb2

_RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.CANCELLED,
}

_CODES = {c.value[0]: c for c in grpc.StatusCode}


class Failure:
    """A write's (or read's) failure as the status its own method would
    have answered."""

    def __init__(self, failure: writes_pb2.WriteFailure) -> None:
        self.code = _CODES.get(failure.code, grpc.StatusCode.UNKNOWN)
        self.message = failure.message
        self.detail = errors.detail_in(failure.details)

    def error(self) -> errors.HandlestoreError:
        return errors.from_status(self.code, self.message, self.detail)


def retryable(code: grpc.StatusCode, detail: common_pb2.ErrorDetail, message: str) -> bool:
    """Worth trying again elsewhere: the node could not serve it now."""
    row = reasons.TABLE.get(detail.reason)
    if row is not None:
        return row.retried == "yes"
    if code in _RETRYABLE:
        return not _tls_refused_status(code, message)
    if code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
        return not detail.reason
    return False


def retryable_error(err: grpc.aio.AioRpcError) -> bool:
    """`retryable` for a failed call."""
    return retryable(err.code(), errors.detail_of(err), err.details() or "")


def retryable_failure(resp: writes_pb2.SubmitResponse | reads_pb2.ReadsResponse) -> Failure | None:
    """The first failure among `resp`'s results (of writes, or of reads)
    that another node could fix."""
    for r in resp.results:
        if r.WhichOneof("result") == "failure":
            f = Failure(r.failure)
            if retryable(f.code, f.detail, f.message):
                return f
    return None


def tls_refused(err: grpc.aio.AioRpcError) -> bool:
    """A TLS handshake that failed (the node's certificate is not from the
    trusted CA, or it refused ours): it would fail again, so it is not
    worth retrying, as in the Rust client."""
    return _tls_refused_status(err.code(), err.details() or "")


def _tls_refused_status(code: grpc.StatusCode, message: str) -> bool:
    details = message.lower()
    return code == grpc.StatusCode.UNAVAILABLE and "handshake" in details and ("ssl" in details or "tls" in details)
