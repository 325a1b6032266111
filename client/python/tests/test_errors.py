"""The client's exceptions follow the error table: each reason a node sends
becomes the exception of its class, keeps the reason, and is retried only
where the table says so. No cluster needed: the statuses are made here as a
node makes them (a google.rpc.Status holding the ErrorDetail, in the status
details trailer)."""

import grpc
import pytest
from google.rpc import status_pb2

from handlestore import errors, reasons
from handlestore.retry import Status
from handlestore.v1 import common_pb2


def status(reason: str, message: str = "what the node said", **detail: int) -> grpc.aio.AioRpcError:
    code = grpc.StatusCode[reasons.TABLE[reason].code]
    rich = status_pb2.Status(code=code.value[0], message=message)
    rich.details.add().Pack(common_pb2.ErrorDetail(reason=reason, **detail))
    trailers = grpc.aio.Metadata(("grpc-status-details-bin", rich.SerializeToString()))
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailers, message)


@pytest.mark.parametrize("reason", sorted(reasons.TABLE))
def test_every_reason_keeps_its_reason_and_the_tables_retry(reason: str) -> None:
    err = status(reason)
    assert errors.from_rpc_error(err).reason == reason
    decision = Status.of_call(err).decision
    assert decision.retry == (reasons.TABLE[reason].retried == "yes")
    assert decision.resume == (reasons.TABLE[reason].retried in ("yes", "resume"))


def test_only_a_revision_mismatch_is_a_conflict() -> None:
    lost = errors.from_rpc_error(status(reasons.REVISION_MISMATCH, current_revision=7))
    assert isinstance(lost, errors.Conflict) and lost.current_revision == 7
    for reason in (reasons.PRECONDITION, reasons.STALE_WRITE):
        refused = errors.from_rpc_error(status(reason, "key k1 is the primary"))
        assert type(refused) is errors.FailedPrecondition, reason
        assert str(refused) == "key k1 is the primary"


def test_a_quota_and_a_slow_watcher_are_told_apart() -> None:
    quota = errors.from_rpc_error(status(reasons.QUOTA))
    slow = errors.from_rpc_error(status(reasons.SLOW_WATCHER))
    assert isinstance(quota, errors.ResourceExhausted) and isinstance(slow, errors.ResourceExhausted)
    assert (quota.reason, slow.reason) == ("quota", "slow_watcher")


def test_internal_is_its_own_class() -> None:
    assert isinstance(errors.from_rpc_error(status(reasons.INTERNAL)), errors.Internal)
