"""When a stream is complete: the rule the origin (to end its liveness
record) and a follower (to end a resumption) both apply to the messages
of a stream, as JSON values (proto/vectors/mcp_events.json, "completion").

A message answers a request when it is a response (an object with an id
that is a string or a number, exactly one of `result` and `error`, and no
`method`) whose id equals the request's, type and all: 1 and "1" differ.
With no request recorded, the first response completes the stream; with
requests, the stream is complete when every one has a response.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Union

RequestId = Union[int, float, str]


def response_id(message: object) -> RequestId | None:
    """The id of a response, or None if `message` is not one (a
    notification, a request, a priming event, a null-id error)."""
    if not isinstance(message, dict) or "method" in message:
        return None
    if ("result" in message) == ("error" in message):
        return None
    rid = message.get("id")
    return rid if is_request_id(rid) else None


def is_request_id(value: object) -> bool:
    """A JSON-RPC id a request can carry: a string or a number (not a
    boolean, which Python counts as a number)."""
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)


def same_id(a: RequestId, b: RequestId) -> bool:
    """Equal as JSON values: a string never equals a number."""
    return isinstance(a, str) == isinstance(b, str) and a == b


class Completion:
    """The answered state of one stream, fed its messages in any order."""

    def __init__(self, requests: Iterable[RequestId]) -> None:
        self.requests = list(requests)
        self._answered = [False] * len(self.requests)
        self._any_response = False

    def copy(self) -> Completion:
        c = Completion(self.requests)
        c._answered, c._any_response = list(self._answered), self._any_response
        return c

    def add(self, message: object) -> None:
        rid = response_id(message)
        if rid is None:
            return
        self._any_response = True
        for i, request in enumerate(self.requests):
            if same_id(request, rid):
                self._answered[i] = True

    @property
    def complete(self) -> bool:
        if not self.requests:
            return self._any_response
        return all(self._answered)

    def unanswered(self) -> list[RequestId]:
        return [r for r, done in zip(self.requests, self._answered, strict=True) if not done]
