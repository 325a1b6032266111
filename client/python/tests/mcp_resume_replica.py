"""One replica of a small MCP server (the Python SDK's `MCPServer`, stateful)
whose SSE events live in the cluster through `ClusterEventStore`, attached
to the session manager as docs/python.md says. Its tools report progress:
`fast` all at once, `slow` with `pause` seconds between events. Run by
test_mcp_resume.py, which starts two and kills one:

    python mcp_resume_replica.py --endpoints A,B,C --namespace ns --listen 127.0.0.1:8001
"""

from __future__ import annotations

import argparse
import asyncio

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

from handlestore import Client
from handlestore.mcp import ClusterEventStore


def build(client: Client) -> tuple[MCPServer, ClusterEventStore]:
    server = MCPServer("resume")

    @server.tool()
    async def fast(n: int, ctx: Context) -> str:
        for i in range(1, n + 1):
            await ctx.report_progress(i, n)
        return f"fast {n} done"

    @server.tool()
    async def slow(n: int, pause: float, ctx: Context) -> str:
        for i in range(1, n + 1):
            await asyncio.sleep(pause)
            await ctx.report_progress(i, n)
        await asyncio.sleep(pause)
        return f"slow {n} done"

    return server, ClusterEventStore(client)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoints", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--listen", required=True)
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    client = Client(args.endpoints.split(","), namespace=args.namespace)
    server, store = build(client)
    app = server.streamable_http_app(event_store=store)
    store.attach(server.session_manager)
    uvicorn.run(app, host=host, port=int(port), log_level="warning")


if __name__ == "__main__":
    main()
