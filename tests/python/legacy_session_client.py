"""The official Python MCP SDK's client on a legacy session (initialize
handshake, Mcp-Session-Id), driven by tests/tests/mcp/sessions.rs.

Usage: legacy_session_client.py URL TOKEN

It creates a cart and adds two items, prints `phase1 <cart_id>`, waits for
a line on stdin (the test restarts a replica meanwhile), adds two more
items and prints `done <json of the cart and the session id>`. Every call
goes through the same session; a round-robin front sends them to
alternating replicas.
"""

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def structured(result):
    if result.is_error:
        raise SystemExit(f"tool error: {result.content}")
    return result.structured_content


async def main(url: str, token: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
    async with Client(transport, mode="legacy") as client:
        cart = structured(await client.call_tool("create_cart", {}))
        cart_id = cart["cart_id"]
        for sku in ("apple", "pear"):
            structured(await client.call_tool("add_item", {"cart_id": cart_id, "sku": sku, "quantity": 1}))
        print(f"phase1 {cart_id}", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        for sku in ("fig", "kiwi"):
            structured(await client.call_tool("add_item", {"cart_id": cart_id, "sku": sku, "quantity": 1}))
        final = structured(await client.call_tool("get_cart", {"cart_id": cart_id}))
        print("done " + json.dumps({"cart": final, "protocol": client.protocol_version}), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
