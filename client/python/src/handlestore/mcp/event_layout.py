"""Where the MCP event streams live in the cluster, and the numbers of the
contract every client's event store keeps (proto/vectors/mcp_events.json,
docs/dev/resume.md; tests/test_mcp_event_vectors.py holds these to it).

Keys, under a prefix (`mcp/events`):

- `streams/<digest of the stream's name>`: its head `{token, seq}`;
- `tokens/<token>`: the stream's name;
- `live/<token>`: `{"requests": [ids]}` while the origin may add events;
- `requests/<token>`: the same ids, kept as long as the events, for a
  follower that starts after the live record is gone;
- `events/<token>/<seq // 100, 12 digits>/<seq, 20 digits>`: one event.

An event id is `<token>.<seq>`: 26 base32 characters, a dot, and the
sequence number in decimal without leading zeros, at most 2^53-1 (so a
JavaScript client can hold it as a number).
"""

from __future__ import annotations

import re

from handlestore._encoding import digest_name

EVENTS_PREFIX = "mcp/events"
BUCKET = 100
#: The largest sequence number: JavaScript's largest safe integer.
MAX_SEQ = 2**53 - 1
#: The origin's liveness record: its TTL and how often it is written again.
LIVE_TTL = 10.0
LIVE_REFRESH = 3.0
#: The TTL the completing event's batch writes the record with: it ends it
#: (a batch of stores cannot delete).
LIVE_ENDED_TTL = 0.001
#: A resumption this store serves sends an SSE comment after this much silence.
KEEPALIVE = 15.0
#: The error a follower appends for a request whose origin stopped first.
ORIGIN_LOST_CODE = -32603
ORIGIN_LOST_MESSAGE = (
    "the replica running this request stopped before it answered; every event it stored was delivered, "
    "and whether the request took effect is unknown"
)
ORIGIN_LOST_REASON = "origin_lost"
#: The Python SDK's name for the standalone GET stream of a session.
GET_STREAM = "_GET_stream"

_EVENT_ID = re.compile(r"([A-Z2-7]{26})\.(0|[1-9][0-9]{0,15})")


def parse_event_id(event_id: str) -> tuple[str, int] | None:
    """`(token, seq)` of an id this store mints; None for anything else (a
    `Last-Event-ID` is whatever a client sends)."""
    m = _EVENT_ID.fullmatch(event_id)
    if m is None or int(m.group(2)) > MAX_SEQ:
        return None
    return m.group(1), int(m.group(2))


def event_id(token: str, seq: int) -> str:
    return f"{token}.{seq}"


class Layout:
    """The keys of the streams under one prefix."""

    def __init__(self, prefix: str = EVENTS_PREFIX) -> None:
        self.prefix = prefix

    def head(self, name: str) -> str:
        return f"{self.prefix}/streams/{digest_name(name)}"

    def token(self, token: str) -> str:
        return f"{self.prefix}/tokens/{token}"

    def live(self, token: str) -> str:
        return f"{self.prefix}/live/{token}"

    def requests(self, token: str) -> str:
        return f"{self.prefix}/requests/{token}"

    def events(self, token: str) -> str:
        """The prefix of a stream's events."""
        return f"{self.prefix}/events/{token}/"

    def bucket(self, token: str, bucket: int) -> str:
        return f"{self.events(token)}{bucket:012}/"

    def event(self, token: str, seq: int) -> str:
        return f"{self.bucket(token, seq // BUCKET)}{seq:020}"

    @staticmethod
    def seq_of(key: str) -> int:
        """The sequence number of an event key."""
        return int(key.rsplit("/", 1)[-1])


def stream_name(token: str, sdk_stream_id: str, scoped: bool) -> str:
    """A stream's name in the cluster: `<its token>\0<SDK stream id>` when
    the store is attached to a session manager (unique to the stream), else
    the SDK's stream id itself (the Python SDK names a POST's stream after
    its request id, `str(id)`, and a session's standalone stream
    `_GET_stream`: the same in every session)."""
    return f"{token}\0{sdk_stream_id}" if scoped else sdk_stream_id
