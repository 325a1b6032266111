"""The connection to a handlestore cluster: the endpoints, the node believed
to lead, and the retry loop every call goes through (as the Rust client's
`cluster.rs`).

A call is tried on the leader (or the last node that answered). On
UNAVAILABLE, a transport error or a per-attempt timeout it moves on: to the
leader the error names if there is one, else to the next node, after an
exponential backoff with full jitter (and at least what a node that refused
the call for load asked for in gRPC's retry pushback trailer), until the
call's overall deadline. Which failures are tried again is `handlestore.retry`'s
one rule.
Writes carry a `(client_id, seq)` write id that every retry reuses, so a
write retried after a leader crash is applied exactly once.

The stores, watches, key ring and coalescers under the client get it
passed in, as a `handlestore.transport.Transport`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

import grpc

from handlestore import _wire, errors, keyring, watch
from handlestore.coalesce import Stats

# Re-exported: they were defined here before `handlestore.consistency`.
from handlestore.consistency import LINEARIZABLE as LINEARIZABLE
from handlestore.consistency import STALE as STALE
from handlestore.consistency import Consistency as Consistency
from handlestore.handles import HandleStore
from handlestore.ids import is_name
from handlestore.keyring import RingKey
from handlestore.reads import MAX_READ_CALLS, Reads
from handlestore.retry import Status
from handlestore.state import StateTool
from handlestore.v1 import (
    admin_pb2_grpc,
    auth_pb2_grpc,
    common_pb2,
    handles_pb2,
    handles_pb2_grpc,
    reads_pb2,
    reads_pb2_grpc,
    state_pb2,
    state_pb2_grpc,
    watch_pb2_grpc,
    writes_pb2,
    writes_pb2_grpc,
)
from handlestore.watch import Watch
from handlestore.writes import MAX_WRITE_CALLS, Writes, WriteStats

T = TypeVar("T")

#: The metadata key a node names the leader's client address under.
LEADER_HEADER = _wire.LEADER_HEADER
#: The trailer an overloaded node says how long to wait in (milliseconds).
PUSHBACK_HEADER = _wire.PUSHBACK_HEADER
#: The largest gRPC message sent or accepted (values are limited by the node).
MAX_MESSAGE = 64 << 20

_STUBS: dict[str, Callable[[grpc.aio.Channel], Any]] = {
    "handles": handles_pb2_grpc.HandlesStub,
    "state": state_pb2_grpc.StateStub,
    "watch": watch_pb2_grpc.WatchStub,
    "admin": admin_pb2_grpc.AdminStub,
    "auth": auth_pb2_grpc.AuthStub,
    "writes": writes_pb2_grpc.WritesStub,
    "reads": reads_pb2_grpc.ReadsStub,
}


@dataclass(frozen=True)
class Tls:
    """TLS to the nodes: the cluster's CA (PEM), and a client certificate
    and key where the nodes require one."""

    ca: bytes
    cert: bytes | None = None
    key: bytes | None = None

    @staticmethod
    def from_files(ca: str, cert: str | None = None, key: str | None = None) -> "Tls":
        if (cert is None) != (key is None):
            raise errors.InvalidArgument("a client certificate needs its key, and a key its certificate")

        def read(path: str | None) -> bytes | None:
            if path is None:
                return None
            with open(path, "rb") as f:
                return f.read()

        return Tls(ca=read(ca) or b"", cert=read(cert), key=read(key))


def read_token_file(path: str) -> str:
    """A token kept in a file (a container secret): its first line, trimmed."""
    with open(path, encoding="utf-8") as f:
        token = f.read().strip().splitlines()
    if not token or not token[0].strip():
        raise errors.InvalidArgument(f"{path}: the token file is empty")
    return token[0].strip()


@dataclass
class _Node:
    """One endpoint: its target ("host:port"), and a channel once dialed
    (and a blocking one, for the rare call that must not await)."""

    target: str
    channel: grpc.aio.Channel | None = None
    stubs: dict[str, Any] = field(default_factory=dict)
    blocking: grpc.Channel | None = None


class _Shared:
    """What clones of a client share: the nodes and their channels, the
    leader guess, the credentials."""

    def __init__(self, targets: list[str], tls: Tls | None, token: str | None) -> None:
        self.nodes = [_Node(t) for t in targets]
        self.preferred = 0
        self.watches = 0
        self.tls = tls
        self.metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()

    def stub(self, index: int, service: str) -> Any:
        node = self.nodes[index]
        if node.channel is None:
            node.channel = self._dial(node.target)
        stub = node.stubs.get(service)
        if stub is None:
            stub = node.stubs[service] = _STUBS[service](node.channel)
        return stub

    def blocking_stub(self, index: int, service: str) -> Any:
        """A stub on a blocking (not asyncio) channel to node `index`."""
        node = self.nodes[index]
        if node.blocking is None:
            node.blocking = self._dial(node.target, blocking=True)
        return _STUBS[service](node.blocking)

    def _dial(self, target: str, blocking: bool = False) -> Any:
        grpc_ = grpc if blocking else grpc.aio
        options = [
            ("grpc.max_send_message_length", MAX_MESSAGE),
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            # A node that stops answering is noticed without calls in flight.
            ("grpc.keepalive_time_ms", 10_000),
            ("grpc.keepalive_timeout_ms", 5_000),
            # A restarted node is dialed again soon (gRPC's default waits up
            # to two minutes between attempts).
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1_000),
            # Each client keeps its own connections.
            ("grpc.use_local_subchannel_pool", 1),
        ]
        # No connect timeout (wire.txt's connect_timeout): grpcio takes none
        # per channel, so each attempt's timeout bounds its connecting too.
        if self.tls is None:
            return grpc_.insecure_channel(target, options=options)
        creds = grpc.ssl_channel_credentials(
            root_certificates=self.tls.ca, private_key=self.tls.key, certificate_chain=self.tls.cert
        )
        return grpc_.secure_channel(target, creds, options=options)

    async def close(self) -> None:
        for node in self.nodes:
            if node.channel is not None:
                await node.channel.close()
                node.channel, node.stubs = None, {}
            if node.blocking is not None:
                node.blocking.close()
                node.blocking = None


def _target(raw: str, tls: bool) -> str:
    """ "host:port" of an endpoint given as "host:port" or "http(s)://host:port"."""
    scheme, sep, rest = raw.partition("://")
    if not sep:
        scheme, rest = ("https" if tls else "http"), raw
    if scheme not in ("http", "https"):
        raise errors.InvalidArgument(f"endpoint {raw!r}: scheme {scheme} is not supported (http or https)")
    if scheme == "https" and not tls:
        raise errors.InvalidArgument(f"endpoint {raw!r}: an https endpoint needs the cluster's CA (tls=)")
    if scheme == "http" and tls:
        raise errors.InvalidArgument(f"endpoint {raw!r}: tls= is given, so endpoints are https:// (or host:port)")
    host = rest.rstrip("/")
    if not host or "/" in host or ":" not in host:
        raise errors.InvalidArgument(f"endpoint {raw!r}: expected host:port")
    return host


class Client:
    """A connection to a cluster. Cheap to share between tasks; `clone`s
    (`with_namespace`, `with_deadline`) share its connections.

    Nodes are dialed lazily, on first use, so creating a client succeeds
    while nodes are down; it fails only on malformed arguments. Use it in one
    asyncio event loop.
    """

    def __init__(
        self,
        endpoints: Sequence[str] | str,
        *,
        namespace: str = "default",
        token: str | None = None,
        tls: Tls | None = None,
        deadline: float = _wire.CALL_TIMEOUT,
        attempt_timeout: float = _wire.ATTEMPT_TIMEOUT,
        backoff: tuple[float, float] = (_wire.BACKOFF_BASE, _wire.BACKOFF_MAX),
        max_write_calls: int = MAX_WRITE_CALLS,
        max_read_calls: int = MAX_READ_CALLS,
    ) -> None:
        if isinstance(endpoints, str):
            endpoints = [e for e in endpoints.split(",") if e.strip()]
        if not endpoints:
            raise errors.InvalidArgument("no endpoints given")
        _check_namespace(namespace)
        if token is not None and (not token or any(c in token for c in "\r\n")):
            raise errors.InvalidArgument("the token is empty or holds characters a header cannot carry")
        if deadline <= 0 or attempt_timeout <= 0:
            raise errors.InvalidArgument("deadline and attempt_timeout must be positive")
        targets = [_target(e.strip(), tls is not None) for e in endpoints]
        self._shared = _Shared(targets, tls, token)
        self.namespace = namespace
        self.deadline = deadline
        self.attempt_timeout = attempt_timeout
        self._backoff = backoff
        self._ids = _WriteIds()
        self._writes = Writes(max_write_calls)
        self._reads = Reads(max_read_calls)

    @classmethod
    def from_env(cls, **overrides: Any) -> "Client":
        """A client as the environment says, with the names the `handlestore`
        CLI and the cart server use: HANDLESTORE_ENDPOINTS (comma-separated),
        HANDLESTORE_NAMESPACE, HANDLESTORE_CACERT (+ HANDLESTORE_CERT and
        HANDLESTORE_KEY), HANDLESTORE_TOKEN or HANDLESTORE_TOKEN_FILE."""
        env = os.environ
        kwargs: dict[str, Any] = {"namespace": env.get("HANDLESTORE_NAMESPACE") or "default"}
        if env.get("HANDLESTORE_CACERT"):
            kwargs["tls"] = Tls.from_files(
                env["HANDLESTORE_CACERT"], env.get("HANDLESTORE_CERT"), env.get("HANDLESTORE_KEY")
            )
        if env.get("HANDLESTORE_TOKEN"):
            kwargs["token"] = env["HANDLESTORE_TOKEN"]
        elif env.get("HANDLESTORE_TOKEN_FILE"):
            kwargs["token"] = read_token_file(env["HANDLESTORE_TOKEN_FILE"])
        kwargs.update(overrides)
        endpoints = kwargs.pop("endpoints", None) or env.get("HANDLESTORE_ENDPOINTS", "")
        return cls(endpoints, **kwargs)

    def __repr__(self) -> str:
        return f"Client(endpoints={self.endpoints!r}, namespace={self.namespace!r})"

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the connections (of every clone)."""
        await self._shared.close()

    @property
    def endpoints(self) -> list[str]:
        return [n.target for n in self._shared.nodes]

    @property
    def client_id(self) -> int:
        """The random id this client's writes are deduplicated under."""
        return self._ids.client_id

    def with_namespace(self, namespace: str) -> "Client":
        """The same connections in another namespace (its own write ids)."""
        _check_namespace(namespace)
        other = self._clone()
        other.namespace = namespace
        other._ids = _WriteIds()
        return other

    def with_deadline(self, deadline: float, attempt_timeout: float | None = None) -> "Client":
        """The same client with another overall deadline per call (and
        per attempt); shares connections and write ids."""
        if deadline <= 0 or (attempt_timeout is not None and attempt_timeout <= 0):
            raise errors.InvalidArgument("deadlines must be positive")
        other = self._clone()
        other.deadline = deadline
        other.attempt_timeout = attempt_timeout or min(self.attempt_timeout, deadline)
        return other

    def _clone(self) -> "Client":
        other = object.__new__(Client)
        other.__dict__.update(self.__dict__)
        return other

    def handle_store(self, store: str, **options: Any) -> HandleStore:
        """A handle store of JSON values named `store` (see `HandleStore`)."""
        return HandleStore(self, store, **options)

    def state_tool(self, **options: Any) -> StateTool:
        """The state tool in this client's namespace (see `StateTool`)."""
        return StateTool(self, **options)

    async def watch(self, **target: Any) -> Watch:
        """Starts a watch; see `handlestore.watch.watch` for the arguments
        (prefix=, key=, store= or handle=; start_revision, progress,
        keys_only)."""
        return await watch.watch(self, **target)

    async def keyring(self, include_secrets: bool = False) -> list[RingKey]:
        """The key ring of this client's namespace, oldest first."""
        return await keyring.keyring(self, include_secrets)

    async def keyring_rotate(self, create: bool = False) -> str:
        """Creates (`create=True`) or rotates the key ring; the new key's id."""
        return await keyring.keyring_rotate(self, create)

    async def keyring_retire(self, key_id: str) -> None:
        """Retires a non-primary key: what it sealed no longer opens."""
        await keyring.keyring_retire(self, key_id)

    def write_id(self) -> "WriteTicket":
        """A write id for one write; keep it for all the write's retries and
        release it when the write is answered (`with client.write_id() as w`)."""
        return self._ids.ticket()

    @property
    def write_stats(self) -> WriteStats:
        """Writes sent so far and the calls that carried them (of this
        client and its clones): under load, several writes per call."""
        return dataclasses.replace(self._writes.stats)

    async def write(self, kind: str, request: Any) -> Any:
        """Sends one write (`kind` is its field in `Write`: "mint", "put",
        "delete", "store", "state_delete", "batch_store"), alone or with
        other callers' (see `handlestore.writes`); returns the response its
        own method would, or raises its error."""
        result = await self._writes.write(self, writes_pb2.Write(**{kind: request}))
        if result.WhichOneof("result") != kind:
            raise errors.HandlestoreError(f"the node answered a {kind} with {result.WhichOneof('result')}")
        return getattr(result, kind)

    @property
    def read_stats(self) -> Stats:
        """Point reads (handle gets, state retrieves) sent so far (`sent`)
        and the calls that carried them: under load, several reads per
        call."""
        return dataclasses.replace(self._reads.calls.stats)

    async def read_state(self, request: state_pb2.RetrieveRequest) -> state_pb2.StateEntry | None:
        """Reads one state key, alone or with other callers' reads (see
        `handlestore.reads`): its entry, or None if absent or expired."""
        resp = await self._reads.read(self, reads_pb2.Read(retrieve=request))
        return None if resp is None else _expect(resp, state_pb2.RetrieveResponse).entry

    async def read_handle(self, request: handles_pb2.GetRequest) -> handles_pb2.GetResponse | None:
        """Reads one handle, alone or with other callers' reads (see
        `handlestore.reads`): the answer, or None if absent or expired."""
        resp = await self._reads.read(self, reads_pb2.Read(get=request))
        return None if resp is None else _expect(resp, handles_pb2.GetResponse)

    async def call(
        self, service: str, method: str, request: Any, check: Callable[[Any], Status | None] | None = None
    ) -> Any:
        """Calls `service.method` with failover, retries and the deadline;
        returns the response or raises a `HandlestoreError`. `check` finds
        a failure inside a response that is worth trying elsewhere."""
        shared, n = self._shared, len(self._shared.nodes)
        end = time.monotonic() + self.deadline
        index = shared.preferred % n
        tries = 0
        while True:
            timeout = max(0.001, min(end - time.monotonic(), self.attempt_timeout))
            fn = getattr(shared.stub(index, service), method)
            try:
                call = fn(request, timeout=timeout, metadata=shared.metadata)
                response = await call
                leader = self._leader_index(await call.initial_metadata())
                failure = check(response) if check else None
                if failure is None:
                    # A follower that forwarded a write names the leader:
                    # the next call goes there, without the extra hop.
                    shared.preferred = index if leader is None else leader
                    return response
                message, detail, asked = failure.message, failure.detail, 0.0
            except grpc.aio.AioRpcError as err:
                status = Status.of_call(err)
                if not status.decision.retry:
                    raise status.error(f"{shared.nodes[index].target}: ") from None
                message, detail = status.message, status.detail
                asked = _pushback(err.trailing_metadata())
                leader = self._leader_index(err.trailing_metadata())
            last = f"{shared.nodes[index].target}: {message}"
            hint = leader if leader is not None else self._index_of(detail.leader_addr)
            index = hint if hint is not None else (index + 1) % n
            shared.preferred = index
            sleep = max(self.backoff(tries), asked)
            tries += 1
            if time.monotonic() + sleep >= end:
                raise errors.DeadlineExceeded(self.deadline, last)
            await asyncio.sleep(sleep)

    def stream(
        self, index: int, service: str, method: str, request: Any, blocking: bool = False, timeout: float | None = None
    ) -> Any:
        """A server-streaming call on one node (watch), with the credentials;
        `blocking`: on a channel that does not need the event loop (an
        iterator whose reads block the calling thread)."""
        index %= len(self._shared.nodes)
        stub = self._shared.blocking_stub(index, service) if blocking else self._shared.stub(index, service)
        return getattr(stub, method)(request, metadata=self._shared.metadata, timeout=timeout)

    @property
    def preferred(self) -> int:
        """The endpoint calls go to first (the leader, when known)."""
        return self._shared.preferred % len(self._shared.nodes)

    def watch_node(self) -> int:
        """The endpoint a new watch opens on: the ones other than the
        preferred (the leader, once a call found it) in turn, so that
        serving watches takes none of the leader's time from the writes."""
        n = len(self._shared.nodes)
        if n < 2:
            return 0
        k = self._shared.watches % (n - 1)
        self._shared.watches += 1
        return (self.preferred + 1 + k) % n

    def backoff(self, tries: int) -> float:
        """Seconds before the next try after `tries` failed ones:
        exponential, capped, full jitter."""
        base, cap = self._backoff
        return random.uniform(0, min(cap, base * (2 ** min(tries, 16))))

    def _leader_index(self, metadata: Any) -> int | None:
        for key, value in metadata or ():
            if key == LEADER_HEADER:
                return self._index_of(value if isinstance(value, str) else value.decode())
        return None

    def _index_of(self, addr: str) -> int | None:
        if not addr:
            return None
        for i, node in enumerate(self._shared.nodes):
            if node.target == addr:
                return i
        return None


def _pushback(metadata: Any) -> float:
    """Seconds a node that refused a call for load (`overloaded`) asked
    clients to wait before trying again (gRPC's retry pushback, in ms; none
    if it named none, `MAX_PUSHBACK` at most)."""
    for key, value in metadata or ():
        if key == PUSHBACK_HEADER:
            try:
                return min(int(value if isinstance(value, str) else value.decode()) / 1000, _wire.MAX_PUSHBACK)
            except ValueError:
                return 0.0
    return 0.0


def _expect(resp: Any, kind: type[T]) -> T:
    """`resp`, if it is an answer of this kind."""
    if not isinstance(resp, kind):
        raise errors.HandlestoreError(f"the node answered a read with a {type(resp).__name__}")
    return resp


def _check_namespace(ns: str) -> None:
    if not isinstance(ns, str) or not is_name(ns, 64):
        raise errors.InvalidArgument(f"namespace {ns!r} may only contain A-Z a-z 0-9 _ - . (1-64 bytes)")


class WriteTicket:
    """One write's id; released (`with`, or `release()`) once answered."""

    def __init__(self, ids: "_WriteIds", seq: int, first_incomplete: int) -> None:
        self._ids = ids
        self.pb = common_pb2.WriteId(client_id=ids.client_id, seq=seq, first_incomplete_seq=first_incomplete)

    def __enter__(self) -> common_pb2.WriteId:
        return self.pb

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        self._ids.in_flight.discard(self.pb.seq)


class _WriteIds:
    """A client's exactly-once sequence: a random client id, and seq 1, 2,
    3, ...; each id also says the lowest seq still in flight, below which
    the cluster may forget remembered answers."""

    def __init__(self) -> None:
        self.client_id = secrets.randbelow(2**64 - 2) + 1
        self.next_seq = 1
        self.in_flight: set[int] = set()

    def ticket(self) -> WriteTicket:
        seq = self.next_seq
        self.next_seq += 1
        self.in_flight.add(seq)
        return WriteTicket(self, seq, min(self.in_flight))
