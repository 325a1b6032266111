"""The one retry rule (proto/vectors/retry.json's "rule"): whether a failure
is worth trying again on another node, whether a watch resumes from its
position after it, and whether it is TLS refusing the connection. The call
loop (`Client.call`), the per-item failures of Writes.Submit and
Reads.Submit, and a watch, opening or established, all ask `decide`.

A failure is a failed call (a gRPC status with its `ErrorDetail`) or one
write's or read's failure inside a response of the Writes or Reads service,
as the status its own method would have answered: either is a `Status`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import grpc

from handlestore import _wire, errors, reasons
from handlestore.v1 import common_pb2, reads_pb2, writes_pb2

# Codes that say the attempt, not the request, failed: worth another node.
_RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.CANCELLED,
    }
)
# Without a reason these are a broken stream, not a node's verdict (a node
# puts a reason on every status it makes).
_BROKEN_STREAM = frozenset({grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL})

_CODES = {c.value[0]: c for c in grpc.StatusCode}


class Decision(NamedTuple):
    """What the client does after one failure."""

    #: A call is tried again, on another node after a backoff.
    retry: bool
    #: A watch resumes from its position.
    resume: bool
    #: TLS refused the connection: the caller gets UNAUTHENTICATED "TLS: ...".
    tls_refused: bool = False


_GIVE_UP = Decision(False, False)
_RETRY = Decision(True, True)


def decide(code: grpc.StatusCode, reason: str, message: str) -> Decision:
    """The rule: a reason this build knows decides, whatever the message (a
    node may quote a peer's TLS error); an unknown one (a newer node's)
    leaves it to the code; without a reason, a TLS refusal marker in the
    message gives up, else the code decides."""
    row = reasons.TABLE.get(reason)
    if row is not None:
        return Decision(row.retried == "yes", row.retried in ("yes", "resume"))
    if reason:
        return _RETRY if code in _RETRYABLE else _GIVE_UP
    if tls_refused(message):
        return Decision(False, False, tls_refused=True)
    return _RETRY if code in _RETRYABLE or code in _BROKEN_STREAM else _GIVE_UP


def tls_refused(message: str) -> bool:
    """The message of a status without a reason says TLS refused the
    connection (a certificate rejected, a TLS alert, TLS spoken to a plain
    port): it would fail again on every node, so it is not retried. The
    markers name a judgement, never a mere mention of TLS or a handshake
    that broke off, which heals."""
    text = message.lower()
    return any(marker in text for marker in _wire.TLS_REFUSED_MARKERS)


@dataclass(frozen=True)
class Status:
    """A failed call's status, or one write's (or read's) failure as the
    status its own method would have answered."""

    code: grpc.StatusCode
    message: str
    detail: common_pb2.ErrorDetail

    @classmethod
    def of_call(cls, err: grpc.RpcError) -> Status:
        return cls(err.code(), err.details() or "", errors.detail_of(err))

    @classmethod
    def of_failure(cls, failure: writes_pb2.WriteFailure) -> Status:
        code = _CODES.get(failure.code, grpc.StatusCode.UNKNOWN)
        return cls(code, failure.message, errors.detail_in(failure.details))

    @property
    def decision(self) -> Decision:
        return decide(self.code, self.detail.reason, self.message)

    def error(self, where: str = "") -> errors.HandlestoreError:
        """The exception the caller gets when the client gives up; `where`
        (a node's address and ": ") prefixes a TLS refusal's message."""
        if self.decision.tls_refused:
            return errors.Unauthenticated(f"{where}TLS: {self.message}")
        return errors.from_status(self.code, self.message, self.detail)


def retryable_failure(resp: writes_pb2.SubmitResponse | reads_pb2.ReadsResponse) -> Status | None:
    """The first failure among `resp`'s results (of writes, or of reads)
    that another node could fix."""
    for r in resp.results:
        if r.WhichOneof("result") == "failure":
            failure = Status.of_failure(r.failure)
            if failure.decision.retry:
                return failure
    return None
