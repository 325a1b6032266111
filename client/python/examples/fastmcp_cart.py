"""A stateless FastMCP cart server whose carts live in handlestore, so any
number of replicas behind a load balancer share them: the Python twin of
client/rust/examples/cart_server/main.rs, with the same tools and the same stores
(`cart`, `order`), so Rust and Python replicas even share carts.

    python client/python/examples/fastmcp_cart.py --listen 127.0.0.1:8081 \\
        --endpoints 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403

(or HANDLESTORE_ENDPOINTS, HANDLESTORE_CACERT, HANDLESTORE_TOKEN... as the
`handlestore` CLI reads them). Tools: `create_cart`, `add_item(cart_id,
sku, quantity, request_id?)`, `get_cart(cart_id)`, `checkout(cart_id)`.
`add_item` is a compare-and-set update, so replicas adding to one cart at
once never lose an item; a `request_id` makes a retried add_item a no-op;
`checkout` records one order per cart however often it is called, on
whichever replica. A change is its cart's own write, with nothing
published beside it: listeners that follow the cart store hear it as
`cart://<cart_id>` (the Rust cart_server's, or an MCP SDK server's
`ClusterSubscriptionBus(client, follow_store=("cart", "cart://"))`).
FastMCP's own session state goes to the cluster too
(`session_state_store`).

With `--kv handlestore|redis|memory` the carts go through a py-key-value
`AsyncKeyValue` instead (FastMCP's storage interface): `HandlestoreStore`,
py-key-value's own `RedisStore` (`--redis URL`) or its `MemoryStore`, for
the bench's comparison. That interface has no compare-and-set, so an
update there is a read and then a write, as a FastMCP author writes it
today: two replicas adding to one cart at once can lose an add.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Annotated, Any, Callable, Protocol

import uvicorn
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from handlestore import NEVER, Client, InvalidArgument, new_handle_id
from handlestore.kv import HandlestoreStore

CART_URI = "cart://"


class Carts(Protocol):
    """Where the carts and orders live."""

    async def create(self) -> str: ...

    async def get(self, cart_id: str) -> dict | None: ...

    async def update(self, cart_id: str, change: Callable[[dict], None]) -> dict | None: ...

    async def record_order(self, order_id: str, order: dict) -> None: ...


class ClusterCarts:
    """Carts as the cluster's handles: `update` is a compare-and-set, so
    replicas adding to one cart at once never lose an item."""

    def __init__(self, client: Client, cart_ttl: float) -> None:
        self._carts = client.handle_store("cart", prefix="cart", default_ttl=cart_ttl)
        self._orders = client.handle_store("order")

    async def create(self) -> str:
        return await self._carts.mint({"lines": []})

    async def get(self, cart_id: str) -> dict | None:
        return await self._carts.get(cart_id)

    async def update(self, cart_id: str, change: Callable[[dict], None]) -> dict | None:
        return await self._carts.update(cart_id, change)

    async def record_order(self, order_id: str, order: dict) -> None:
        await self._orders.put(order_id, order, NEVER)


class KvCarts:
    """Carts in a py-key-value `AsyncKeyValue` (collections `cart` and
    `order`): an update reads, then writes (the interface has no
    compare-and-set), and a write resets the cart's TTL."""

    def __init__(self, kv: Any, cart_ttl: float) -> None:
        self._kv = kv
        self._ttl = cart_ttl

    async def create(self) -> str:
        cart_id = new_handle_id("cart")
        await self._kv.put(cart_id, {"lines": []}, collection="cart", ttl=self._ttl)
        return cart_id

    async def get(self, cart_id: str) -> dict | None:
        return await self._kv.get(cart_id, collection="cart")

    async def update(self, cart_id: str, change: Callable[[dict], None]) -> dict | None:
        cart = await self.get(cart_id)
        if cart is None:
            return None
        change(cart)
        await self._kv.put(cart_id, cart, collection="cart", ttl=self._ttl)
        return cart

    async def record_order(self, order_id: str, order: dict) -> None:
        await self._kv.put(order_id, order, collection="order")


def build(client: Client, cart_ttl: float = 3600.0) -> FastMCP:
    """The server over the cluster: carts as handles, FastMCP's session
    state in its key-value store."""
    return build_on(ClusterCarts(client, cart_ttl), HandlestoreStore(client, prefix="fastmcp"))


def build_on(carts: Carts, session_state_store: Any) -> FastMCP:
    """The server: its tools over `carts`."""
    mcp = FastMCP("handlestore-cart", session_state_store=session_state_store)

    async def existing(cart_id: str, read: Any) -> dict:
        """The cart `read` (a store call) returns, or the tool error a
        caller should see: an unknown cart, or a store to retry."""
        try:
            cart = await read
        except InvalidArgument:
            raise ToolError(f"unknown cart_id: {cart_id}") from None
        except Exception as e:  # any store's failure: the outcome is unknown
            raise ToolError(f"cart store unavailable, retry: {e}") from None
        if cart is None:
            raise ToolError(f"unknown cart_id: {cart_id}")
        return cart

    @mcp.tool(description="Create an empty shopping cart and return its cart_id.")
    async def create_cart() -> dict[str, Any]:
        try:
            return {"cart_id": await carts.create()}
        except Exception as e:
            raise ToolError(f"cart store unavailable, retry: {e}") from None

    @mcp.tool(description="Add quantity units of a SKU to a cart. Returns the cart.")
    async def add_item(
        cart_id: Annotated[str, Field(description="The id create_cart returned.")],
        sku: Annotated[str, Field(min_length=1, max_length=128, description="Product SKU.")],
        quantity: Annotated[int, Field(ge=1, le=2**32 - 1, description="How many (at least 1).")],
        request_id: Annotated[
            str | None,
            Field(description="Idempotency key: a retried add_item with the same request_id is not added twice."),
        ] = None,
    ) -> dict[str, Any]:
        line = {"sku": sku, "quantity": quantity}
        if request_id is not None:
            line["request_id"] = request_id
        refused: list[str] = []

        def add(cart: dict) -> None:
            refused.clear()
            if cart.get("order_id"):
                refused.append(f"cart {cart_id} is already checked out (order {cart['order_id']})")
                return
            lines = cart.setdefault("lines", [])
            if request_id is None or all(x.get("request_id") != request_id for x in lines):
                lines.append(line)

        cart = await existing(cart_id, carts.update(cart_id, add))
        if refused:
            raise ToolError(refused[0])
        return {"cart_id": cart_id, "cart": cart}

    @mcp.tool(description="Show a cart's lines and, once checked out, its order_id.")
    async def get_cart(cart_id: Annotated[str, Field(description="The id create_cart returned.")]) -> dict[str, Any]:
        return {"cart_id": cart_id, "cart": await existing(cart_id, carts.get(cart_id))}

    @mcp.tool(description="Check a cart out and return its order_id. Calling it again returns the same order_id.")
    async def checkout(cart_id: Annotated[str, Field(description="The id create_cart returned.")]) -> dict[str, Any]:
        candidate = new_handle_id("order")
        empty: list[bool] = []

        def place(cart: dict) -> None:
            empty[:] = [not cart.get("lines") and not cart.get("order_id")]
            if not cart.get("order_id") and not empty[0]:
                cart["order_id"] = candidate

        cart = await existing(cart_id, carts.update(cart_id, place))
        if empty and empty[0]:
            raise ToolError(f"cart {cart_id} is empty")
        order_id = cart["order_id"]
        # Whichever call recorded the order writes it; a repeat writes the
        # same content again.
        order = {"cart_id": cart_id, "lines": cart["lines"]}
        try:
            await carts.record_order(order_id, order)
        except Exception as e:
            raise ToolError(f"cart store unavailable, retry: {e}") from None
        return {"cart_id": cart_id, "order_id": order_id, "lines": len(cart["lines"])}

    @mcp.resource(CART_URI + "{cart_id}", description="A cart, as get_cart shows it.")
    async def cart_resource(cart_id: str) -> dict[str, Any]:
        return {"cart_id": cart_id, "cart": await existing(cart_id, carts.get(cart_id))}

    return mcp


def kv_store(args: argparse.Namespace, client: Client | None) -> Any:
    """The py-key-value store `--kv` names."""
    if args.kv == "handlestore":
        assert client is not None
        return HandlestoreStore(client, prefix="carts-kv")
    if args.kv == "redis":
        from key_value.aio.stores.redis import RedisStore

        if not args.redis:
            raise SystemExit("--kv redis needs --redis URL")
        return RedisStore(url=args.redis)
    from key_value.aio.stores.memory import MemoryStore

    return MemoryStore()


async def serve(args: argparse.Namespace) -> None:
    client = None
    if args.kv in (None, "handlestore"):
        overrides: dict[str, Any] = {"namespace": args.namespace} if args.namespace else {}
        if args.endpoints:
            overrides["endpoints"] = args.endpoints
        client = Client.from_env(**overrides)
    if args.kv is None:
        assert client is not None
        server = build(client, args.cart_ttl)
    else:
        kv = kv_store(args, client)
        server = build_on(KvCarts(kv, args.cart_ttl), kv)
    app = server.http_app(path="/mcp", stateless_http=True)
    host, _, port = args.listen.rpartition(":")
    config = uvicorn.Config(app, host=host or "127.0.0.1", port=int(port), log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve()
    finally:
        if client is not None:
            await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:8081", help="host:port to serve MCP on (path /mcp)")
    parser.add_argument("--endpoints", help="handlestore endpoints, comma-separated (or HANDLESTORE_ENDPOINTS)")
    parser.add_argument("--namespace", help="handlestore namespace (or HANDLESTORE_NAMESPACE; default: default)")
    parser.add_argument("--cart-ttl", type=float, default=3600.0, help="seconds an idle cart lives (default 3600)")
    parser.add_argument(
        "--kv",
        choices=["handlestore", "redis", "memory"],
        help="keep carts in a py-key-value store instead of as handles (read, then write): for comparison",
    )
    parser.add_argument("--redis", help="with --kv redis: the Redis URL (redis://host:port/)")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
