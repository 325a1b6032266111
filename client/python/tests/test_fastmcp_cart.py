"""The FastMCP cart example, run as two replicas over one cluster and
driven by the official MCP Python client alternating between them: no item
lost under concurrent adds, checkout exactly once."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time

import pytest
from cluster import REPO, free_port

pytest.importorskip("fastmcp")
from mcp import Client as McpClient  # noqa: E402

EXAMPLE = REPO / "client/python/examples/fastmcp_cart.py"


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the replica exited: {proc.stdout.read() if proc.stdout else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port}")


def start(cmd: list[str]) -> tuple[subprocess.Popen, str]:
    """A server process listening on a free port (`cmd` gets --listen): it
    and its MCP URL."""
    port = free_port()
    proc = subprocess.Popen(
        [*cmd, "--listen", f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    wait_listening(port, proc)
    return proc, f"http://127.0.0.1:{port}/mcp"


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
        p.wait(timeout=10)


@pytest.fixture
def replicas(cluster, namespace):
    cmd = [sys.executable, str(EXAMPLE), "--endpoints", ",".join(cluster.endpoints), "--namespace", namespace]
    started = [start(cmd) for _ in range(2)]
    try:
        yield [url for _, url in started]
    finally:
        stop([p for p, _ in started])


async def call(client: McpClient, tool: str, **args) -> dict:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content


async def test_two_replicas_lose_no_item_and_check_out_once(client, replicas):
    async with McpClient(replicas[0], mode="auto") as a, McpClient(replicas[1], mode="auto") as b:
        sides = [a, b]
        cart_id = (await call(a, "create_cart"))["cart_id"]
        assert cart_id.startswith("cart-")

        async def shopper(n: int) -> None:
            for i in range(8):
                side = sides[(n + i) % 2]  # alternate replicas, no stickiness
                await call(side, "add_item", cart_id=cart_id, sku=f"sku-{n}-{i}", quantity=1)

        await asyncio.gather(*(shopper(n) for n in range(4)))
        # A retried add_item (same request_id) through the other replica is not added twice.
        await call(a, "add_item", cart_id=cart_id, sku="tea", quantity=2, request_id="r-1")
        await call(b, "add_item", cart_id=cart_id, sku="tea", quantity=2, request_id="r-1")
        lines = (await call(b, "get_cart", cart_id=cart_id))["cart"]["lines"]
        skus = sorted(line["sku"] for line in lines)
        assert skus == sorted([f"sku-{n}-{i}" for n in range(4) for i in range(8)] + ["tea"]), "no item lost"

        orders = await asyncio.gather(*(call(sides[i % 2], "checkout", cart_id=cart_id) for i in range(6)))
        assert len({o["order_id"] for o in orders}) == 1, "one order, whoever checked out"
        refused = await b.call_tool("add_item", {"cart_id": cart_id, "sku": "late", "quantity": 1})
        assert refused.is_error and "checked out" in refused.content[0].text

    # The order is in the cluster, once.
    order = await client.handle_store("order").get(orders[0]["order_id"])
    assert order["cart_id"] == cart_id and len(order["lines"]) == 33
    assert await client.handle_store("order").len() == 1


async def test_unknown_carts_and_bad_arguments_are_tool_errors(replicas):
    async with McpClient(replicas[1], mode="auto") as b:
        for args in ({"cart_id": "nope"}, {"cart_id": "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA"}):
            r = await b.call_tool("get_cart", args)
            assert r.is_error and "unknown cart_id" in r.content[0].text
        r = await b.call_tool("add_item", {"cart_id": "x", "sku": "", "quantity": 0})
        assert r.is_error


async def test_a_rust_and_a_python_replica_share_carts(cluster, namespace, replicas):
    from cluster import handlestore_bin

    binary = handlestore_bin()
    rust_server = binary.parent / "examples" / "cart_server" if binary else None
    if rust_server is None or not rust_server.exists():
        pytest.skip("no cart_server example binary: run `cargo build --release --examples`")
    proc, url = start([str(rust_server), "--endpoints", ",".join(cluster.endpoints), "--namespace", namespace])
    try:
        async with (
            McpClient(url, mode="auto") as rust,
            McpClient(replicas[0], mode="auto") as python,
        ):
            cart_id = (await call(rust, "create_cart"))["cart_id"]
            await call(python, "add_item", cart_id=cart_id, sku="tea", quantity=2)
            await call(rust, "add_item", cart_id=cart_id, sku="cake", quantity=1)
            seen_by_python = (await call(python, "get_cart", cart_id=cart_id))["cart"]["lines"]
            assert [(x["sku"], x["quantity"]) for x in seen_by_python] == [("tea", 2), ("cake", 1)]
            order = (await call(python, "checkout", cart_id=cart_id))["order_id"]
            assert (await call(rust, "checkout", cart_id=cart_id))["order_id"] == order, "checked out once"
    finally:
        stop([proc])


@pytest.mark.parametrize("kv", ["handlestore", "memory"])
async def test_the_key_value_mode_runs_the_same_tools(cluster, namespace, client, kv):
    """`--kv`: the carts in a py-key-value store (the bench's comparison);
    over `HandlestoreStore` two replicas share them, and the cluster holds
    them under the store's prefix."""
    cmd = [sys.executable, str(EXAMPLE), "--kv", kv, "--endpoints", ",".join(cluster.endpoints)]
    cmd += ["--namespace", namespace]
    started = [start(cmd) for _ in range(2 if kv == "handlestore" else 1)]
    try:
        urls = [url for _, url in started]
        async with McpClient(urls[0], mode="auto") as a, McpClient(urls[-1], mode="auto") as b:
            cart_id = (await call(a, "create_cart"))["cart_id"]
            await call(b, "add_item", cart_id=cart_id, sku="tea", quantity=2)
            await call(a, "add_item", cart_id=cart_id, sku="cake", quantity=1)
            lines = (await call(b, "get_cart", cart_id=cart_id))["cart"]["lines"]
            assert [(x["sku"], x["quantity"]) for x in lines] == [("tea", 2), ("cake", 1)]
            order = (await call(a, "checkout", cart_id=cart_id))["order_id"]
            assert (await call(b, "checkout", cart_id=cart_id))["order_id"] == order
            missing = await a.call_tool("get_cart", {"cart_id": "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA"})
            assert missing.is_error and "unknown cart_id" in missing.content[0].text
    finally:
        stop([p for p, _ in started])
    if kv == "handlestore":
        keys = [e.key async for e in client.state_tool().scan("carts-kv/")]
        assert any(cart_id in k for k in keys), keys
