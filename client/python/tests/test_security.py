"""TLS and tokens: a cluster with TLS on every port and auth enabled;
missing or wrong credentials get clear errors and change nothing."""

from __future__ import annotations

import pytest
from cluster import Cluster, need_binary, running

from handlestore import Client, PermissionDenied, Tls, Unauthenticated
from handlestore.v1 import auth_pb2


@pytest.fixture(scope="module")
async def secured():
    need_binary()
    async with running(tls=True) as c:
        async with c.client() as admin:
            root = (await admin.call("auth", "AuthEnable", auth_pb2.AuthEnableRequest())).root_token
        yield c, root


async def test_tls_and_a_token_work(secured):
    cluster, root = secured
    async with cluster.client(token=root) as client:
        await client.state_tool().store("k", "v")
        assert await client.state_tool().get("k") == "v"


async def test_no_token_or_a_wrong_one_is_unauthenticated(secured):
    cluster, _ = secured
    for token in (None, "not-a-token"):
        async with cluster.client(token=token, deadline=5.0) as client:
            with pytest.raises(Unauthenticated):
                await client.state_tool().store("k2", "v")
    async with cluster.client(token=secured[1]) as client:
        assert not await client.state_tool().exists("k2"), "refused calls changed nothing"


async def test_a_user_without_grants_is_denied(secured):
    cluster, root = secured
    async with cluster.client(token=root) as admin:
        user = await admin.call("auth", "UserAdd", auth_pb2.UserAddRequest(name="nobody"))
    async with cluster.client(token=user.token) as client:
        with pytest.raises(PermissionDenied):
            await client.state_tool().store("k3", "v")


async def test_a_ca_that_did_not_sign_the_nodes_is_refused(secured, tmp_path):
    cluster, root = secured
    other = Cluster(1, tls=True)  # only for its CA
    try:
        ca = (other.certs / "ca.pem").read_bytes()
    finally:
        other.stop()
    client = Client(cluster.endpoints, tls=Tls(ca=ca), token=root, deadline=5.0)
    with pytest.raises(Unauthenticated):
        await client.state_tool().get("k")
    await client.close()


async def test_plaintext_to_a_tls_cluster_gives_a_clear_error(secured):
    cluster, root = secured
    client = Client(cluster.endpoints, token=root, deadline=3.0)
    with pytest.raises(Unauthenticated) as e:
        await client.state_tool().get("k")
    assert "requires TLS" in str(e.value)
    await client.close()


def test_https_without_a_ca_is_refused_at_once():
    from handlestore import InvalidArgument

    with pytest.raises(InvalidArgument):
        Client(["https://127.0.0.1:7401"])
