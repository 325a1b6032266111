"""Fixtures: one real three-node cluster for the session (the built
`handlestore` binary), and a fresh namespace per test so tests do not see
each other's keys."""

from __future__ import annotations

import itertools
import json
import pathlib

import pytest
from cluster import REPO, handlestore_bin, need_binary, running

_names = itertools.count(1)


def pytest_report_header() -> str:
    binary = handlestore_bin()
    return f"handlestore binary: {binary or 'none (the cluster tests skip)'}"


@pytest.fixture(scope="session")
async def cluster():
    """One cluster for the tests that only read and write."""
    need_binary()
    async with running() as c:
        yield c


@pytest.fixture
async def own_cluster():
    """A cluster of the test's own, for tests that kill nodes."""
    need_binary()
    async with running() as c:
        yield c


@pytest.fixture
def namespace(request) -> str:
    """A namespace of this test's own."""
    return f"py-{next(_names)}-{request.node.name[:40]}".replace("[", "-").replace("]", "")[:64]


@pytest.fixture
async def client(cluster, namespace):
    c = cluster.client(namespace=namespace)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture(scope="session")
def vectors() -> dict:
    return json.loads((REPO / "proto/vectors/request_state_vectors.json").read_text())


def repo_path(*parts: str) -> pathlib.Path:
    return REPO.joinpath(*parts)
