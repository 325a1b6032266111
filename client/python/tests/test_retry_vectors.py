"""The shared retry vectors (proto/vectors/retry.json): the client's one
retry rule (`handlestore.retry.decide`, asked by the call loop, the
per-item failures of Writes.Submit and Reads.Submit, and a watch) decides
every case as the contract says. Each status is made as grpcio hands one
over: the code, the message, and a reason as a node sends it (a
google.rpc.Status holding the ErrorDetail in the status details trailer),
or no details at all."""

from __future__ import annotations

import json

import grpc
import pytest
from cluster import REPO
from google.rpc import status_pb2

from handlestore import errors
from handlestore.retry import Decision, Status
from handlestore.v1 import common_pb2, writes_pb2

VECTORS = json.loads((REPO / "proto/vectors/retry.json").read_text(encoding="utf-8"))
CASES = [pytest.param(case, id=f"{i}-{case['code']}-{case['reason']}") for i, case in enumerate(VECTORS["cases"])]


def details(case: dict) -> bytes:
    """The case's google.rpc.Status, as a node puts it in its trailer (and
    in a write's failure), or nothing for a status without a reason."""
    if case["reason"] is None:
        return b""
    rich = status_pb2.Status(code=grpc.StatusCode[case["code"]].value[0], message=case["message"])
    rich.details.add().Pack(common_pb2.ErrorDetail(reason=case["reason"]))
    return rich.SerializeToString()


def call_error(case: dict) -> grpc.aio.AioRpcError:
    """A failed call as grpcio hands it over."""
    raw = details(case)
    trailers = grpc.aio.Metadata(*([("grpc-status-details-bin", raw)] if raw else []))
    return grpc.aio.AioRpcError(grpc.StatusCode[case["code"]], grpc.aio.Metadata(), trailers, case["message"])


def verdict(decision: Decision) -> tuple[str, str]:
    """A decision in the vectors' words."""
    return ("retry" if decision.retry else "give_up", "resume" if decision.resume else "give_up")


def error_class(code: str) -> type[errors.HandlestoreError]:
    """The class of the client's exception for a status of `code`."""
    return type(errors.from_status(grpc.StatusCode[code], "", common_pb2.ErrorDetail()))


@pytest.mark.parametrize("case", CASES)
def test_a_failed_call(case: dict) -> None:
    status = Status.of_call(call_error(case))
    assert verdict(status.decision) == (case["call"], case["watch"]), case["message"]
    # Only the TLS cases name the error: the client's "TLS: ..." one.
    if "error_code" in case:
        error = status.error()
        assert type(error) is error_class(case["error_code"]) and str(error).startswith("TLS: "), error
    else:
        assert not status.decision.tls_refused, case["message"]


@pytest.mark.parametrize("case", CASES)
def test_a_writes_or_reads_failure(case: dict) -> None:
    failure = writes_pb2.WriteFailure(
        code=grpc.StatusCode[case["code"]].value[0], message=case["message"], details=details(case)
    )
    assert verdict(Status.of_failure(failure).decision) == (case["call"], case["watch"]), case["message"]
