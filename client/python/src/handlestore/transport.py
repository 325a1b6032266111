"""`Transport`: what the modules under the client need of it. `Client`
hands itself to the stores (`HandleStore`, `StateTool`), watches, the key
ring and the write and read coalescers, which know it only as this
protocol, so imports go one way: from `handlestore.client` down, never
back."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable, Protocol

from handlestore.retry import Status
from handlestore.v1 import common_pb2, handles_pb2, state_pb2


class Transport(Protocol):
    """A connection to a cluster, in one namespace: a `handlestore.Client`,
    whose methods of these names say what they do."""

    @property
    def namespace(self) -> str: ...

    @property
    def deadline(self) -> float:
        """Seconds a call may take, its retries included."""
        ...

    @property
    def attempt_timeout(self) -> float:
        """Seconds one attempt of a call may take."""
        ...

    @property
    def endpoints(self) -> list[str]: ...

    async def call(
        self, service: str, method: str, request: Any, check: Callable[[Any], Status | None] | None = None
    ) -> Any:
        """Calls `service.method` with failover, retries and the deadline."""
        ...

    def stream(
        self, index: int, service: str, method: str, request: Any, blocking: bool = False, timeout: float | None = None
    ) -> Any:
        """A server-streaming call on endpoint `index`."""
        ...

    def watch_node(self) -> int:
        """The endpoint a new watch opens on."""
        ...

    def backoff(self, tries: int) -> float:
        """Seconds before the next try after `tries` failed ones."""
        ...

    def write_id(self) -> AbstractContextManager[common_pb2.WriteId]:
        """A write id for one write, released when the `with` ends."""
        ...

    async def write(self, kind: str, request: Any) -> Any:
        """Sends one write (`kind`: its field in `Write`); its response."""
        ...

    async def read_state(self, request: state_pb2.RetrieveRequest) -> state_pb2.StateEntry | None:
        """Reads one state key: its entry, or None."""
        ...

    async def read_handle(self, request: handles_pb2.GetRequest) -> handles_pb2.GetResponse | None:
        """Reads one handle: the answer, or None."""
        ...
