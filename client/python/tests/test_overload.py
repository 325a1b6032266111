"""A node full of calls (`--max-concurrent-calls`) refuses one more with
UNAVAILABLE (`overloaded`) and gRPC's retry hint; the Python client
waits at least that long and tries again, and gets its answer once a
place is free. The calls that fill the node are held open over raw HTTP/2:
their requests' headers are sent, their bodies never."""

from __future__ import annotations

import asyncio
import socket

import grpc
import h2.config
import h2.connection
import pytest
from cluster import need_binary, running

from handlestore import errors, reasons
from handlestore.client import _pushback
from handlestore.v1 import handles_pb2, handles_pb2_grpc

PLACES = 2


def hold(addr: str, calls: int) -> socket.socket:
    """Opens `calls` Get calls on node `addr` and sends none of their
    bodies; the node keeps their places until the socket is closed."""
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    for _ in range(calls):
        headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", addr),
            (":path", "/handlestore.v1.Handles/Get"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
        conn.send_headers(conn.get_next_available_stream_id(), headers, end_stream=False)
    sock.sendall(conn.data_to_send())
    return sock


async def refused_with_a_hint(addr: str) -> None:
    """A Get straight to the node, without the client's retries, is refused
    at once (once the held calls have taken every place)."""
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = handles_pb2_grpc.HandlesStub(channel)
        request = handles_pb2.GetRequest(namespace="default", store="cart", id="none")
        for _ in range(100):
            try:
                await stub.Get(request, timeout=10)
            except grpc.aio.AioRpcError as err:
                if errors.detail_of(err).reason == reasons.OVERLOADED:
                    assert err.code() == grpc.StatusCode.UNAVAILABLE
                    assert 0 < _pushback(err.trailing_metadata()) <= 5
                    return
            await asyncio.sleep(0.05)
        raise AssertionError("the node never refused a call")


def test_a_hint_is_read_from_the_trailers_and_bounded() -> None:
    assert _pushback((("grpc-retry-pushback-ms", "40"),)) == 0.04
    assert _pushback((("grpc-retry-pushback-ms", "900000"),)) == 5.0
    assert _pushback((("grpc-retry-pushback-ms", "soon"),)) == 0.0
    assert _pushback(()) == 0.0


async def test_a_full_node_makes_the_client_wait_and_try_again() -> None:
    need_binary()
    async with running(size=1, extra_args=("--max-concurrent-calls", str(PLACES))) as cluster:
        client = cluster.client(deadline=20.0)
        store = client.handle_store("cart")
        handle = await store.mint({"lines": ["tea"]})
        held = hold(cluster.nodes[0].addr, PLACES)
        try:
            await refused_with_a_hint(cluster.nodes[0].addr)
            waiting = asyncio.ensure_future(store.get(handle))
            await asyncio.sleep(0.5)
            assert not waiting.done(), "the client waits while the node is full"
        finally:
            held.close()
        assert await asyncio.wait_for(waiting, 20) == {"lines": ["tea"]}
        log = cluster.logs()
        assert "panicked" not in log
        await client.close()


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__]))
