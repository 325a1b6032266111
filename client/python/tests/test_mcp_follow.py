"""The event store's origin and follower against a real cluster, below the
SDK: streams kept per session, a silent origin that stays alive past its
record's TTL, two followers of a dead stream appending one error between
them, and a follower that starts after the live record expired. (test_mcp_resume.py drives the same through the SDK.)"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

pytest.importorskip("mcp")
from mcp_types import JSONRPCNotification, JSONRPCResponse  # noqa: E402

from handlestore.mcp import ClusterEventStore  # noqa: E402
from handlestore.mcp.origin import CURRENT, Session  # noqa: E402

# Short liveness timings: the follower's behaviour, not the contract's numbers.
TTL, REFRESH = 1.0, 0.3


def progress(i: int) -> JSONRPCNotification:
    return JSONRPCNotification(
        jsonrpc="2.0", method="notifications/progress", params={"progressToken": 1, "progress": i}
    )


@contextlib.contextmanager
def in_session(session: Session):
    token = CURRENT.set(session)
    try:
        yield
    finally:
        CURRENT.reset(token)


def session_with(request_id) -> Session:
    s = Session(scoped=True)
    s.request_ids[str(request_id)] = request_id
    return s


@pytest.fixture
async def clients(cluster, namespace):
    made = [cluster.client(namespace=namespace) for _ in range(3)]
    try:
        yield made
    finally:
        for c in made:
            await c.close()


class Received:
    def __init__(self) -> None:
        self.events: list = []

    async def __call__(self, event) -> None:
        self.events.append(event)

    def ids(self) -> list[str]:
        return [e.event_id for e in self.events]


async def test_two_sessions_with_the_same_request_id_write_two_streams(clients):
    store = ClusterEventStore(clients[0])
    a, b = session_with(1), session_with(1)
    with in_session(a):
        first = await store.store_event("1", None)
    with in_session(b):
        second = await store.store_event("1", None)
    assert first.split(".")[0] != second.split(".")[0]
    store.close()


async def test_a_silent_origin_stays_alive_past_its_records_ttl(clients):
    origin = ClusterEventStore(clients[0], live_ttl=TTL, live_refresh=REFRESH)
    follower = ClusterEventStore(clients[1])
    with in_session(session_with(1)):
        primed = await origin.store_event("1", None)
        await origin.store_event("1", progress(1))
        got = Received()
        following = asyncio.create_task(follower.replay_events_after(primed, got))
        await asyncio.sleep(TTL * 2.5)  # silence: only the refreshes say the origin lives
        assert not following.done(), "the follower ended while the origin lived"
        answer = await origin.store_event("1", JSONRPCResponse(jsonrpc="2.0", id=1, result={}))
    assert await asyncio.wait_for(following, 10) is None
    assert [e.message.model_dump(exclude_unset=True) for e in got.events] == [
        progress(1).model_dump(exclude_unset=True),
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ]
    assert got.ids()[-1] == answer
    # A client that already had the answer: nothing more, at once.
    late = Received()
    await asyncio.wait_for(follower.replay_events_after(answer, late), 5)
    assert late.events == []
    origin.close()


async def test_two_followers_of_a_dead_stream_append_one_error(clients):
    origin = ClusterEventStore(clients[0], live_ttl=TTL, live_refresh=REFRESH)
    # "7": a string that reads as a number; the SDK's stream id (str(id))
    # cannot tell it from 7, the liveness record can.
    with in_session(session_with("7")):
        primed = await origin.store_event("7", None)
        note = await origin.store_event("7", progress(1))
    origin.close()  # the origin dies: its record expires within TTL
    followers = [ClusterEventStore(c) for c in clients[1:]]
    got = [Received(), Received()]
    await asyncio.wait_for(
        asyncio.gather(*(f.replay_events_after(primed, r) for f, r in zip(followers, got, strict=True))), 15
    )
    assert got[0].ids() == got[1].ids(), "both clients read the same answer"
    assert got[0].ids()[0] == note and len(got[0].ids()) == 2
    error = got[0].events[-1].message.model_dump(exclude_unset=True)
    assert error["id"] == "7", "the request's id, type and all"
    assert error["error"]["data"] == {"reason": "origin_lost"}
    token = primed.split(".")[0]
    stored = [e async for e in clients[0].state_tool().scan(followers[0].layout.events(token), with_values=True)]
    assert len(stored) == 3, "priming, progress, one error"


async def gone(state, key: str, within: float = 10.0) -> None:
    """Waits until `key` reads as absent (its TTL ran out)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while await state.retrieve(key) is not None:
        assert loop.time() < deadline, f"{key} still there after {within} s"
        await asyncio.sleep(0.1)


async def died_long_ago(clients, request_id) -> tuple[ClusterEventStore, str, str]:
    """A stream whose origin stopped after a progress event, and whose live
    record has expired since: `(a follower, the priming id, the note's id)`."""
    origin = ClusterEventStore(clients[0], live_ttl=TTL, live_refresh=REFRESH)
    with in_session(session_with(request_id)):
        primed = await origin.store_event(str(request_id), None)
        note = await origin.store_event(str(request_id), progress(1))
    origin.close()
    await gone(clients[0].state_tool(), origin.layout.live(primed.split(".")[0]))
    return ClusterEventStore(clients[1]), primed, note


@pytest.mark.parametrize("request_id", ["7", 7], ids=["string", "number"])
async def test_a_follower_after_the_live_record_expired_answers_the_typed_id(clients, request_id):
    """The live record is gone when the resumption starts: the ids come from
    `requests/<token>`, with their JSON type (the SDK's stream id, "7" for
    both, could not tell)."""
    follower, primed, note = await died_long_ago(clients, request_id)
    got = Received()
    await asyncio.wait_for(follower.replay_events_after(primed, got), 10)
    assert got.ids()[0] == note and len(got.ids()) == 2
    error = got.events[-1].message.model_dump(exclude_unset=True)
    assert error["error"]["data"] == {"reason": "origin_lost"}
    assert type(error["id"]) is type(request_id) and error["id"] == request_id, "the request's id, type and all"


async def test_without_the_requests_record_a_late_follower_owes_no_error(clients):
    """A stream written without `requests/<token>` (by a store that kept no
    such record): which request it answers, and its id's type, are unknown,
    so the follower sends what is stored and appends nothing."""
    follower, primed, note = await died_long_ago(clients, "7")
    token = primed.split(".")[0]
    state = clients[0].state_tool()
    assert (await state.delete(follower.layout.requests(token))).count == 1, "the origin wrote it"
    got = Received()
    await asyncio.wait_for(follower.replay_events_after(primed, got), 10)
    assert got.ids() == [note]
    stored = [e async for e in state.scan(follower.layout.events(token))]
    assert len(stored) == 2, "priming and progress: no error appended"


async def test_a_follower_never_writes_over_what_a_late_origin_stored(clients):
    """The origin's record expired (cut off from the cluster, say), and it
    answers while a follower is about to append `origin_lost`: the
    compare-and-set on the head makes the follower send the answer instead."""
    origin = ClusterEventStore(clients[0], live_ttl=TTL, live_refresh=REFRESH)
    follower = ClusterEventStore(clients[1])
    session = session_with(1)
    with in_session(session):
        primed = await origin.store_event("1", None)
    origin.close()
    await asyncio.sleep(TTL + 0.5)
    read_head = follower._state.retrieve
    late: list[str] = []

    async def retrieve(key, *args, **kwargs):
        got = await read_head(key, *args, **kwargs)
        if "/streams/" in key and not late:  # the follower has read the head: the origin answers now
            with in_session(session):
                late.append(await origin.store_event("1", JSONRPCResponse(jsonrpc="2.0", id=1, result={})))
        return got

    follower._state.retrieve = retrieve
    got = Received()
    await asyncio.wait_for(follower.replay_events_after(primed, got), 10)
    assert late, "the follower never read the head"
    assert got.ids() == late
    assert [e.message.model_dump(exclude_unset=True) for e in got.events] == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
