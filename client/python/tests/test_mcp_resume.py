"""A call's stream cut and resumed on another replica, with the SDK's own
client (`mode="legacy"`: the 2025-11-25 protocol, the only one the SDK
resumes) against two replica processes (mcp_resume_replica.py) over a real
cluster, behind a front of the test's own (mcp_resume_front.py) that cuts
the call's stream after K messages and sends the reconnection to the other
replica. For K = 0, the middle and the end, a fast tool and a slow one
(events a second apart):

- origin alive: the client gets every event once, in order, and the result;
- origin killed: every event stored once, in order, then the `origin_lost`
  error within the documented bound (the liveness record's TTL and the
  node's sweep), never a hang; a fast call that answered before its origin
  died keeps its result.

The three K of one case run at once, each with its own client and front."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest
from cluster import REPO, free_port

pytest.importorskip("mcp")
import uvicorn  # noqa: E402
from mcp import Client as McpClient  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_resume_front import Front, Seen  # noqa: E402

from handlestore.mcp.event_layout import EVENTS_PREFIX, Layout  # noqa: E402

VECTORS = json.loads((REPO / "proto/vectors/mcp_events.json").read_text())
LIVE_TTL = VECTORS["live"]["ttl_ms"] / 1000
SWEEP = 0.25  # the node's sweep interval (docs/dev/resume.md)
SLACK = 3.0  # the client's reconnection, the follower's reads: a loaded machine's margin
REPLICA = REPO / "client/python/tests/mcp_resume_replica.py"
N = 3
KS = (0, 1, N)  # after the priming event only, the middle, every notification (the result not yet)
TOOLS = {"fast": {"n": N}, "slow": {"n": N, "pause": 1.0}}
NEVER_A_HANG = 60.0


@dataclass
class Replica:
    proc: subprocess.Popen
    url: str


def start_replica(endpoints: list[str], namespace: str) -> Replica:
    port = free_port()
    cmd = [sys.executable, str(REPLICA), "--endpoints", ",".join(endpoints), "--namespace", namespace]
    log = tempfile.TemporaryFile()  # not a pipe: nobody reads it while the replica runs
    proc = subprocess.Popen([*cmd, "--listen", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"the replica exited: {log.read().decode()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return Replica(proc, f"http://127.0.0.1:{port}")
        time.sleep(0.1)
    proc.kill()
    raise TimeoutError("the replica does not listen")


def stop(replica: Replica) -> None:
    replica.proc.kill()
    replica.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def space(cluster) -> str:
    return f"py-resume-{secrets.token_hex(4)}"


@pytest.fixture(scope="module")
def pair(cluster, space):
    """Two replicas that live through the module: [origin, follower]."""
    started = [start_replica(cluster.endpoints, space) for _ in range(2)]
    try:
        yield started
    finally:
        for r in started:
            stop(r)


@contextlib.asynccontextmanager
async def serving(front: Front):
    port = free_port()
    web = uvicorn.Server(uvicorn.Config(front, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(web.serve())
    try:
        while not web.started:
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        await task
        await front.http.aclose()


@dataclass
class Outcome:
    k: int
    progress: list[float]
    result: str | None
    error: MCPError | None
    ended: float
    seen: list[Seen]
    resumptions: int


async def call_cut(front: Front, k: int, tool: str, on_cut=None) -> Outcome:
    """The tool called through `front`, its stream cut after `k` messages;
    `on_cut` runs when it is."""
    front.cut_after = k
    progress: list[float] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    async def cut_then() -> None:
        await front.cut.wait()
        if on_cut is not None:
            await on_cut()

    watcher = asyncio.create_task(cut_then())
    async with serving(front) as url, McpClient(url, mode="legacy") as client:
        # As a client does before calling: the SDK's client would otherwise
        # list the tools (on the session's replica) when the result comes.
        await client.list_tools()
        try:
            got = await asyncio.wait_for(client.call_tool(tool, TOOLS[tool], progress_callback=on_progress), 60)
            result, error = got.content[0].text, None
        except MCPError as e:
            result, error = None, e
        ended = time.monotonic()
    if not front.cut.is_set():
        watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    assert front.cut.is_set(), f"K={k}: the stream was never cut"
    return Outcome(k, progress, result, error, ended, front.seen, front.resumptions)


async def stored(cluster, space: str, token: str) -> list[tuple[int, dict]]:
    """The stream's messages in the cluster, by sequence number."""
    layout = Layout(EVENTS_PREFIX)
    client = cluster.client(namespace=space)
    try:
        entries = [e async for e in client.state_tool().scan(layout.events(token), with_values=True)]
    finally:
        await client.close()
    return [(Layout.seq_of(e.key), e.value["message"]) for e in entries if e.value["message"] is not None]


async def answered(cluster, space: str, front: Front) -> None:
    """Until the call's stream holds its answer."""
    token = front.seen[0].event_id.split(".")[0]
    while not any("result" in m for _, m in await stored(cluster, space, token)):
        await asyncio.sleep(0.02)


async def check_every_stored_event_once(cluster, space: str, out: Outcome) -> list[dict]:
    """Every message stored on the call's stream reached the client exactly
    once, in order, and nothing else did: the messages, in order."""
    sent = [s for s in out.seen if s.message is not None]
    assert sent, f"K={out.k}: no message reached the client"
    token = sent[0].event_id.split(".")[0]
    ids = [int(s.event_id.split(".")[1]) for s in sent]
    assert ids == sorted(set(ids)), f"K={out.k}: events repeated or out of order: {ids}"
    in_cluster = await stored(cluster, space, token)
    assert [(i, s.message) for i, s in zip(ids, sent, strict=True)] == in_cluster, f"K={out.k}"
    answers = [m for m in in_cluster if "id" in m[1] and "method" not in m[1]]
    assert len(answers) == 1 and answers[0] == in_cluster[-1], f"K={out.k}: one answer, last: {in_cluster}"
    return [m for _, m in in_cluster]


@pytest.mark.parametrize("tool", ["fast", "slow"])
async def test_a_cut_call_ends_on_the_other_replica_with_every_event_once(cluster, space, pair, tool):
    origin, follower = pair
    outs = await asyncio.gather(*(call_cut(Front(origin.url, follower.url), k, tool) for k in KS))
    for out in outs:
        assert out.error is None, f"K={out.k}: {out.error}"
        assert out.result == f"{tool} {N} done", f"K={out.k}"
        assert out.progress == [float(i) for i in range(1, N + 1)], f"K={out.k}"
        assert out.resumptions == 1, f"K={out.k}: one resumption follows the call to its end, no polling"
        messages = await check_every_stored_event_once(cluster, space, out)
        assert messages[-1]["result"]["content"][0]["text"] == out.result


@pytest.mark.parametrize("tool", ["fast", "slow"])
async def test_a_cut_call_whose_origin_died_gets_what_was_stored_then_its_end(cluster, space, pair, tool):
    """Slow: killed before answering, so `origin_lost`; fast: it answered
    before it was killed, so the result."""
    follower = pair[1]
    origins = await asyncio.gather(*(asyncio.to_thread(start_replica, cluster.endpoints, space) for _ in KS))
    killed: dict[int, float] = {}

    def killer(k: int, origin: Replica, front: Front):
        async def kill() -> None:
            if tool == "fast":  # killed once it has answered (stored before sent)
                await answered(cluster, space, front)
            origin.proc.kill()
            killed[k] = time.monotonic()

        return kill

    fronts = [Front(o.url, follower.url) for o in origins]
    try:
        outs = await asyncio.wait_for(
            asyncio.gather(
                *(call_cut(f, k, tool, killer(k, o, f)) for k, o, f in zip(KS, origins, fronts, strict=True))
            ),
            NEVER_A_HANG,
        )
    finally:
        for o in origins:
            stop(o)
    for out in outs:
        messages = await check_every_stored_event_once(cluster, space, out)
        if tool == "fast":
            assert out.error is None and out.result == f"fast {N} done", f"K={out.k}: {out.error}"
            continue
        assert out.result is None and out.error is not None, f"K={out.k}: the call must fail"
        lost = VECTORS["origin_lost"]
        assert (out.error.code, out.error.message) == (lost["code"], lost["message"]), f"K={out.k}"
        assert out.error.data == {"reason": lost["reason"]}, f"K={out.k}"
        assert messages[-1]["error"]["data"] == {"reason": "origin_lost"}
        assert out.progress == [m["params"]["progress"] for m in messages[:-1]], f"K={out.k}"
        assert out.ended - killed[out.k] <= LIVE_TTL + SWEEP + SLACK, f"K={out.k}: the error came late"
        assert out.resumptions == 1, f"K={out.k}"
