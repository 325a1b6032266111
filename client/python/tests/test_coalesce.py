"""How a call picks its requests from the queue (handlestore.coalesce):
in order, one group at a time, within the bounds, skipping callers that
gave up."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Hashable

from handlestore.coalesce import Waiting, take_batch
from handlestore.writes import MAX_SUBMIT_BYTES, MAX_SUBMIT_WRITES


def _waiting(loop: asyncio.AbstractEventLoop, size: int, group: Hashable = None) -> Waiting:
    return Waiting(object(), size, loop.create_future(), group)


async def test_a_call_takes_requests_in_order_within_its_bounds_and_skips_the_abandoned():
    loop = asyncio.get_running_loop()
    queue: deque[Waiting] = deque()
    kept = []
    for i in range(MAX_SUBMIT_WRITES * 2):
        w = _waiting(loop, 100)
        queue.append(w)
        if i % 3 == 0:
            w.done.cancel()  # this caller has given up
        else:
            kept.append(w)
    first = take_batch(queue, MAX_SUBMIT_WRITES, MAX_SUBMIT_BYTES)
    assert first == kept[:MAX_SUBMIT_WRITES]
    second = take_batch(queue, MAX_SUBMIT_WRITES, MAX_SUBMIT_BYTES)
    assert first + second == kept and not queue

    # By bytes: a request that would pass the bound waits for the next
    # call; one larger than the bound goes alone.
    sizes = [MAX_SUBMIT_BYTES // 2, MAX_SUBMIT_BYTES // 2 + 1, MAX_SUBMIT_BYTES * 2, 10]
    queue.extend(_waiting(loop, s) for s in sizes)
    for s in sizes:
        assert [w.size for w in take_batch(queue, MAX_SUBMIT_WRITES, MAX_SUBMIT_BYTES)] == [s]
    assert take_batch(queue, MAX_SUBMIT_WRITES, MAX_SUBMIT_BYTES) == []


async def test_a_call_takes_one_group_and_the_others_keep_their_places():
    loop = asyncio.get_running_loop()
    a1, b1, a2, b2, a3, c1 = (_waiting(loop, 1, g) for g in "ababac")
    gone = _waiting(loop, 1, "b")
    gone.done.cancel()
    queue = deque([a1, gone, b1, a2, b2, a3, c1])
    assert take_batch(queue, 2, 1 << 20) == [a1, a2]
    assert list(queue) == [b1, b2, a3, c1], "the abandoned dropped, the rest in order"
    assert take_batch(queue, 10, 1 << 20) == [b1, b2]
    assert take_batch(queue, 10, 1 << 20) == [a3]
    assert take_batch(queue, 10, 1 << 20) == [c1]
    assert not queue
