"""A node's error details, as every gRPC library expects them: a
`google.rpc.Status` in `grpc-status-details-bin` (and in a write's
`WriteFailure.details`) whose details hold the `ErrorDetail` as an `Any`.
The shared vectors (proto/vectors/error_details.json) hold the client to
both forms, the node's and the bare `ErrorDetail` of the previous release,
through both paths; a real cluster's errors parse with grpcio-status' own
`rpc_status.from_call`."""

from __future__ import annotations

import json

import grpc
import pytest
from cluster import REPO
from google.rpc import status_pb2
from grpc_status import rpc_status

from handlestore import Conflict, errors
from handlestore.ids import new_handle_id
from handlestore.retry import Status
from handlestore.v1 import common_pb2, handles_pb2, handles_pb2_grpc, writes_pb2, writes_pb2_grpc

VECTORS = json.loads((REPO / "proto/vectors/error_details.json").read_text())
CASES = VECTORS["cases"]
_CODES = {c.value[0]: c for c in grpc.StatusCode}


def expected(case: dict) -> common_pb2.ErrorDetail:
    return common_pb2.ErrorDetail(**case["expect"]) if case["expect"] else common_pb2.ErrorDetail()


def call_error(case: dict) -> grpc.aio.AioRpcError:
    """A failed call whose trailer carries the case's details, as a node's does."""
    details = bytes.fromhex(case["details"])
    trailers = grpc.aio.Metadata(*([("grpc-status-details-bin", details)] if details else []))
    return grpc.aio.AioRpcError(_CODES[case["code"]], grpc.aio.Metadata(), trailers, case["message"])


def test_there_are_cases_of_every_form() -> None:
    assert {c["name"].split(":")[0] for c in CASES} == {"new", "old", "none"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_calls_details(case: dict) -> None:
    assert errors.detail_of(call_error(case)) == expected(case)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_writes_failure_details(case: dict) -> None:
    failure = writes_pb2.WriteFailure(
        code=case["code"], message=case["message"], details=bytes.fromhex(case["details"])
    )
    assert Status.of_failure(failure).detail == expected(case)
    assert Status.of_failure(failure).error().reason == expected(case).reason


def unpacked(status: status_pb2.Status | None) -> common_pb2.ErrorDetail:
    """The one ErrorDetail of a google.rpc.Status."""
    assert status is not None and len(status.details) == 1, status
    detail = common_pb2.ErrorDetail()
    assert status.details[0].Unpack(detail), status.details[0].type_url
    return detail


async def test_a_real_nodes_errors_parse_with_grpc_status(cluster, client) -> None:
    store = client.handle_store("errs")
    handle = await store.mint({"n": 1})
    revision = (await store.get_versioned(handle)).mod_revision
    stale = handles_pb2.PutRequest(
        namespace=client.namespace, store="errs", id=handle, value=b"{}", expected_revision=revision + 1000
    )
    leader = await cluster.wait_leader()
    async with grpc.aio.insecure_channel(cluster.nodes[leader - 1].addr) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as lost:
            await handles_pb2_grpc.HandlesStub(channel).Put(stale)
        detail = unpacked(rpc_status.from_call(lost.value))
        assert (lost.value.code(), detail.reason, detail.current_revision) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "revision_mismatch",
            revision,
        )
        missing = handles_pb2.GetRequest(namespace=client.namespace, store="errs", id=new_handle_id())
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            await handles_pb2_grpc.HandlesStub(channel).Get(missing)
        assert (gone.value.code(), unpacked(rpc_status.from_call(gone.value)).reason) == (
            grpc.StatusCode.NOT_FOUND,
            "not_found",
        )
        submit = writes_pb2.SubmitRequest(writes=[writes_pb2.Write(put=stale)])
        failure = (await writes_pb2_grpc.WritesStub(channel).Submit(submit)).results[0].failure
    status = status_pb2.Status.FromString(failure.details)
    assert (status.code, status.message) == (failure.code, failure.message)
    assert (unpacked(status).reason, unpacked(status).current_revision) == ("revision_mismatch", revision)

    # The client keeps both (its puts go through Writes.Submit).
    with pytest.raises(Conflict) as conflict:
        await store.put_with(handle, {"n": 2}, expected_revision=revision + 1000)
    assert (conflict.value.reason, conflict.value.current_revision) == ("revision_mismatch", revision)
