"""The exceptions of the client: one class per gRPC status a caller acts on
differently, as the Rust client's `Error`.

Every exception the client raises derives from `HandlestoreError`. A node's
answer carries a machine-readable `ErrorDetail` (reason, leader, current
revision); it is decoded here, in one place. The reasons, their codes and
which ones the client retries are the error table (`handlestore.reasons`,
generated from the node's).

The `ErrorDetail` travels as gRPC's richer error model has it: inside the
`google.rpc.Status` of the `grpc-status-details-bin` trailer (read by
grpcio-status' `rpc_status.from_call`), as an `Any`; a write's failure
inside a Submit answer carries the same bytes. A node of the previous
release sent the bare `ErrorDetail` there instead: still read, for one
release, when the first form is not there (proto/vectors/error_details.json
holds both).
"""

from __future__ import annotations

import grpc
from google.rpc import status_pb2
from grpc_status import rpc_status

from handlestore import reasons
from handlestore.v1 import common_pb2

# The trailer a status's details travel in.
_DETAILS_KEY = "grpc-status-details-bin"


class HandlestoreError(Exception):
    """Base class of every error the client raises."""

    #: The node's stable reason ("not_leader", "revision_mismatch", ...) or "".
    reason: str = ""


class InvalidArgument(HandlestoreError):
    """Malformed id, key, store name or TTL, or a value over the size limit."""


class NotFound(HandlestoreError):
    """The entry is absent or expired."""


class AlreadyExists(HandlestoreError):
    """A mint or create-only write found a live entry."""


class FailedPrecondition(HandlestoreError):
    """The cluster's state does not allow the change: `reason` is
    "precondition" (e.g. retiring the key ring's primary key), "stale_write"
    (a write id already declared done) or, for the subclass `Conflict`,
    "revision_mismatch". Retrying the same call fails the same way."""


class Conflict(FailedPrecondition):
    """Compare-and-set lost: the entry is now at `current_revision` (0 = absent)."""

    def __init__(self, message: str, current_revision: int = 0) -> None:
        super().__init__(message)
        self.current_revision = current_revision


class Unavailable(HandlestoreError):
    """No quorum, no leader, or no node reachable: not acknowledged, and a
    retry (with the same write id, as the client does) is safe."""


class DeadlineExceeded(HandlestoreError):
    """The call's overall deadline passed while retrying; a write's outcome
    is unknown."""

    def __init__(self, deadline: float, last: str) -> None:
        super().__init__(f"deadline of {deadline:g}s exceeded; last error: {last}")
        self.deadline = deadline
        self.last = last


class Unauthenticated(HandlestoreError):
    """No credentials, a wrong token, or a TLS handshake the node refused."""


class PermissionDenied(HandlestoreError):
    """The caller's roles do not allow this."""


class ResourceExhausted(HandlestoreError):
    """A quota is full (`reason` "quota"), or a watcher fell too far behind
    ("slow_watcher"; watches resume these themselves)."""


class Internal(HandlestoreError):
    """A bug or a storage failure on the node ("internal")."""


class Compacted(HandlestoreError):
    """A watch from a revision older than the history the node keeps: read
    the current state, then watch from its revision + 1."""

    def __init__(self, message: str, compact_revision: int) -> None:
        super().__init__(message)
        self.compact_revision = compact_revision


class Unimplemented(HandlestoreError):
    """The node does not know the method: it is older than this client."""


class CodecError(HandlestoreError):
    """A value could not be encoded or decoded as JSON."""


class Closed(HandlestoreError):
    """The store or client was closed."""


def detail_of(err: grpc.aio.AioRpcError) -> common_pb2.ErrorDetail:
    """The node's ErrorDetail of a failed call (empty if it sent none)."""
    try:
        status = rpc_status.from_call(err)
    except Exception:  # not this call's google.rpc.Status: the old form, or not a node's
        status = None
    found = _in_status(status) if status is not None else None
    if found is None:
        for key, value in err.trailing_metadata() or ():
            if key == _DETAILS_KEY and isinstance(value, bytes):
                found = _bare(value)
    return found if found is not None else common_pb2.ErrorDetail()


def detail_in(details: bytes) -> common_pb2.ErrorDetail:
    """The ErrorDetail in a write's (or read's) failure details, in either
    form (empty if there is none)."""
    status = status_pb2.Status()
    try:
        status.ParseFromString(details)
        found = _in_status(status)
    except Exception:  # not a google.rpc.Status
        found = None
    if found is None:
        found = _bare(details)
    return found if found is not None else common_pb2.ErrorDetail()


def _in_status(status: status_pb2.Status) -> common_pb2.ErrorDetail | None:
    """The first ErrorDetail among a google.rpc.Status' details."""
    for any_detail in status.details:
        detail = common_pb2.ErrorDetail()
        if any_detail.Unpack(detail):
            return detail
    return None


def _bare(raw: bytes) -> common_pb2.ErrorDetail | None:
    """The previous release's form, a bare ErrorDetail: it always names its
    reason (a google.rpc.Status parsed as one never does: its field 1 is a
    varint, where the reason is a string)."""
    detail = common_pb2.ErrorDetail()
    try:
        detail.ParseFromString(raw)
    except Exception:  # not an ErrorDetail either
        return None
    return detail if detail.reason else None


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: Unavailable,
    grpc.StatusCode.ABORTED: Unavailable,
    grpc.StatusCode.CANCELLED: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
}


def from_rpc_error(err: grpc.aio.AioRpcError) -> HandlestoreError:
    """The client's exception for a failed call."""
    return from_status(err.code(), err.details() or "", detail_of(err))


def from_status(code: grpc.StatusCode, message: str, detail: common_pb2.ErrorDetail) -> HandlestoreError:
    """The client's exception for a status (a call's, or one write's of a
    `Writes.Submit`)."""
    if code == grpc.StatusCode.OUT_OF_RANGE and detail.reason == reasons.COMPACTED:
        out: HandlestoreError = Compacted(message, detail.compact_revision)
    elif code == grpc.StatusCode.FAILED_PRECONDITION and detail.reason == reasons.REVISION_MISMATCH:
        out = Conflict(message, detail.current_revision)
    elif code == grpc.StatusCode.INTERNAL and detail.reason == reasons.INTERNAL:
        out = Internal(message)
    elif code in _BY_CODE:
        out = _BY_CODE[code](message)
    else:
        out = HandlestoreError(f"{code.name}: {message}")
    out.reason = detail.reason
    return out
