"""The Python client's mint, get, put and state get against a cluster, beside redis-py's
SET EX and GET against a Redis, each with N asyncio tasks at once for a
while: what `target/release/pyclient` runs (tests/bench/src/bin/pyclient.rs),
one JSON object per cell on stdout.

    python tests/python/client_bench.py --endpoints 127.0.0.1:7401,... \\
        --redis redis://127.0.0.1:6379/ --tasks 1,64 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

VALUE = "v" * 256
PRELOAD = 1000

Op = Callable[[int], Awaitable[Any]]


async def cell(system: str, name: str, op: Op, tasks: int, seconds: float) -> dict:
    """`tasks` workers loop on `op` for `seconds`; latencies of the calls
    that succeeded, errors counted (the first one kept)."""
    took: list[float] = []
    errors = 0
    first_error: str | None = None
    end = time.monotonic() + seconds

    async def worker(w: int) -> None:
        nonlocal errors, first_error
        i = 0
        while time.monotonic() < end:
            t = time.perf_counter()
            try:
                await op(w * 1_000_000 + i)
                took.append(time.perf_counter() - t)
            except Exception as e:  # noqa: BLE001 (counted, never hidden)
                errors += 1
                first_error = first_error or repr(e)
            i += 1

    start = time.monotonic()
    await asyncio.gather(*(worker(w) for w in range(tasks)))
    wall = time.monotonic() - start
    took.sort()

    def quantile(q: float) -> int:
        return int(took[min(len(took) - 1, int(q * len(took)))] * 1e6) if took else 0

    return {
        "system": system,
        "op": name,
        "concurrency": tasks,
        "ops": len(took),
        "errors": errors,
        "seconds": wall,
        "throughput": len(took) / wall,
        "p50_us": quantile(0.5),
        "p99_us": quantile(0.99),
        "first_error": first_error,
    }


async def handlestore_ops(endpoints: list[str]) -> tuple[dict[str, Op], Any]:
    from handlestore import Client
    from handlestore.state import StoreItem

    client = Client(endpoints, namespace="bench")
    store = client.handle_store("bench")
    keys = [await store.mint(VALUE) for _ in range(PRELOAD)]

    async def get(_: int) -> None:
        if await store.get(random.choice(keys)) is None:
            raise KeyError("a preloaded handle is missing")

    async def put(_: int) -> None:
        await store.put(random.choice(keys), VALUE)

    tool = client.state_tool()
    names = [f"bench/read/{i}" for i in range(PRELOAD)]
    for start in range(0, PRELOAD, 100):
        await tool.batch_store([StoreItem(k, VALUE) for k in names[start : start + 100]])

    async def state_get(_: int) -> None:
        if await tool.get(random.choice(names)) is None:
            raise KeyError("a preloaded state key is missing")

    ops: dict[str, Op] = {
        "mint": lambda _: store.mint(VALUE),
        "get": get,
        "put": put,
        "state_get": state_get,
    }
    return ops, client


async def redis_ops(url: str) -> tuple[dict[str, Op], Any]:
    import redis.asyncio as redis

    r = redis.Redis.from_url(url, max_connections=1024)
    keys = [f"bench:read:{i}" for i in range(PRELOAD)]
    for k in keys:
        await r.set(k, VALUE)

    async def get(_: int) -> None:
        if await r.get(random.choice(keys)) is None:
            raise KeyError("a preloaded key is missing")

    ops: dict[str, Op] = {
        "set_ex": lambda i: r.set(f"bench:w:{i}", VALUE, ex=3600),
        "get": get,
    }
    return ops, r


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", help="handlestore endpoints, comma-separated")
    parser.add_argument("--redis", help="a Redis URL")
    parser.add_argument(
        "--tasks", default="1,64", help="concurrent tasks per cell, comma-separated"
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per cell")
    args = parser.parse_args()
    levels = [int(t) for t in args.tasks.split(",")]
    systems: list[tuple[str, dict[str, Op], Any]] = []
    if args.endpoints:
        systems.append(
            ("python-client", *await handlestore_ops(args.endpoints.split(",")))
        )
    if args.redis:
        systems.append(("redis-py", *await redis_ops(args.redis)))
    for system, ops, conn in systems:
        for name, op in ops.items():
            for tasks in levels:
                print(
                    json.dumps(await cell(system, name, op, tasks, args.seconds)),
                    flush=True,
                )
        await conn.aclose() if hasattr(conn, "aclose") else await conn.close()


if __name__ == "__main__":
    asyncio.run(main())
