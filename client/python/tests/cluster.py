"""Real three-node clusters for the tests: the built `handlestore` binary on
free loopback ports, each node with its own temporary data directory, as
the Rust tests start them (tests/src/cluster.rs)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import grpc

from handlestore import Client, Tls
from handlestore.v1 import admin_pb2, admin_pb2_grpc

REPO = pathlib.Path(__file__).resolve().parents[3]


def handlestore_bin() -> pathlib.Path | None:
    """$HANDLESTORE_BIN, else the release build in $CARGO_TARGET_DIR or target/."""
    if os.environ.get("HANDLESTORE_BIN"):
        path = pathlib.Path(os.environ["HANDLESTORE_BIN"])
        return path if path.exists() else None
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    path = target / "release" / "handlestore"
    return path if path.exists() else None


def need_binary() -> None:
    """Skips the test, saying why, when there is no binary to run; fails it
    where the test command built one just before ($HANDLESTORE_REQUIRE_BIN=1,
    as tests/run.sh sets it)."""
    import pytest

    if handlestore_bin() is None:
        why = "no handlestore binary: run `cargo build --release` or set HANDLESTORE_BIN"
        if os.environ.get("HANDLESTORE_REQUIRE_BIN") == "1":
            pytest.fail(f"{why} (HANDLESTORE_REQUIRE_BIN=1: the test command built it)")
        pytest.skip(why)


_USED_PORTS: set[int] = set()


def free_port() -> int:
    """A free loopback port, never the same one twice in a test run (a port
    handed out but not yet bound must not be handed out again), as the Rust
    harness picks them."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _USED_PORTS:
            _USED_PORTS.add(port)
            return port


class Node:
    def __init__(self, node_id: int, root: pathlib.Path) -> None:
        self.id = node_id
        self.addr = f"127.0.0.1:{free_port()}"
        self.data = root / f"node-{node_id}"
        self.log = root / f"node-{node_id}.log"
        # Nodes with TLS talk to each other on a port of their own (mutual TLS).
        self.peer_addr = ""
        self.proc: subprocess.Popen | None = None


class Cluster:
    """`size` nodes; with `tls`, certificates from `handlestore certs`."""

    def __init__(self, size: int = 3, tls: bool = False, extra_args: tuple[str, ...] = ()) -> None:
        binary = handlestore_bin()
        if binary is None:
            raise RuntimeError("no handlestore binary: build it (cargo build --release) or set HANDLESTORE_BIN")
        self.bin = binary
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="handlestore-py-"))
        self.nodes = [Node(i + 1, self.root) for i in range(size)]
        self.extra_args = list(extra_args)
        self.certs = self.root / "certs" if tls else None
        if self.certs is not None:
            self._make_certs()
            for n in self.nodes:
                n.peer_addr = f"127.0.0.1:{free_port()}"

    def _make_certs(self) -> None:
        cmd = [str(self.bin), "certs", "--dir", str(self.certs), "--client", "root"]
        for n in self.nodes:
            cmd += ["--node", f"{n.id}=localhost,127.0.0.1"]
        subprocess.run(cmd, check=True, capture_output=True)

    @property
    def endpoints(self) -> list[str]:
        return [n.addr for n in self.nodes]

    @property
    def tls(self) -> Tls | None:
        return None if self.certs is None else Tls.from_files(str(self.certs / "ca.pem"))

    def client(self, **options) -> Client:
        options.setdefault("tls", self.tls)
        return Client(self.endpoints, **options)

    def start(self) -> "Cluster":
        # A line "python" per cluster in $HANDLESTORE_CLUSTER_RUNS: tests/run.sh
        # counts them, so a tier whose cluster tests all skipped cannot pass unseen.
        runs = os.environ.get("HANDLESTORE_CLUSTER_RUNS")
        if runs:
            with open(runs, "a") as f:
                f.write("python\n")
        for n in self.nodes:
            self.spawn(n.id)
        return self

    def spawn(self, node_id: int) -> None:
        n = self.nodes[node_id - 1]
        initial = ",".join(f"{m.id}={m.addr}" + (f"/{m.peer_addr}" if m.peer_addr else "") for m in self.nodes)
        args = [str(self.bin), "node", "--id", str(n.id), "--listen", n.addr, "--data", str(n.data)]
        args += ["--initial-cluster", initial, "--heartbeat", "100ms", "--election-timeout", "700ms"]
        args += ["--sweep-interval", "100ms"]
        if self.certs is not None:
            cert, key = str(self.certs / f"node-{n.id}.pem"), str(self.certs / f"node-{n.id}-key.pem")
            ca = str(self.certs / "ca.pem")
            args += ["--tls-cert", cert, "--tls-key", key, "--peer-tls-cert", cert, "--peer-tls-key", key]
            args += ["--peer-tls-ca", ca, "--peer-listen", n.peer_addr]
        n.data.mkdir(parents=True, exist_ok=True)
        with open(n.log, "ab") as log:
            n.proc = subprocess.Popen(args + self.extra_args, stdout=log, stderr=log)

    def kill(self, node_id: int) -> None:
        """SIGKILL: no goodbye, as a crash."""
        n = self.nodes[node_id - 1]
        if n.proc is not None:
            n.proc.send_signal(signal.SIGKILL)
            n.proc.wait()
            n.proc = None

    def restart(self, node_id: int) -> None:
        self.kill(node_id)
        self.spawn(node_id)

    def stop(self) -> None:
        for n in self.nodes:
            if n.proc is not None:
                n.proc.terminate()
        for n in self.nodes:
            if n.proc is not None:
                try:
                    n.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    n.proc.kill()
                n.proc = None
        shutil.rmtree(self.root, ignore_errors=True)

    def logs(self, lines: int = 40) -> str:
        out = []
        for n in self.nodes:
            text = n.log.read_text(errors="replace").splitlines() if n.log.exists() else []
            out.append(f"---- node {n.id} ----\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    async def status(self, node_id: int) -> admin_pb2.StatusResponse:
        n = self.nodes[node_id - 1]
        if self.certs is None:
            channel = grpc.aio.insecure_channel(n.addr)
        else:
            creds = grpc.ssl_channel_credentials((self.certs / "ca.pem").read_bytes())
            channel = grpc.aio.secure_channel(n.addr, creds)
        async with channel:
            return await admin_pb2_grpc.AdminStub(channel).Status(admin_pb2.StatusRequest(), timeout=1)

    async def wait_leader(self, timeout: float = 30.0) -> int:
        """The leader's id, once every running node agrees on it."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            seen = []
            for n in self.nodes:
                if n.proc is None:
                    continue
                try:
                    seen.append(await self.status(n.id))
                except grpc.aio.AioRpcError:
                    seen.append(None)
            leaders = {s.node_id for s in seen if s is not None and s.state == "leader"}
            if len(leaders) == 1 and all(s is not None and s.leader_id in leaders for s in seen):
                return leaders.pop()
            await asyncio.sleep(0.1)
        raise TimeoutError(f"no leader within {timeout}s\n{self.logs()}")


@contextlib.asynccontextmanager
async def running(size: int = 3, tls: bool = False, extra_args: tuple[str, ...] = ()):
    """A started cluster with a leader, stopped (and its files removed) after."""
    c = Cluster(size, tls=tls, extra_args=extra_args).start()
    try:
        await c.wait_leader()
        yield c
    finally:
        c.stop()
