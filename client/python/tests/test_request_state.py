"""The request-state codec: the Rust codec's test vectors
(proto/vectors/request_state_vectors.json), and blobs sealed in one
language opened in the other over a real cluster's key ring."""

from __future__ import annotations

import json
import subprocess

import pytest
from cluster import handlestore_bin

from handlestore import Mode, RequestStateCodec, RingKey, SingleUse
from handlestore.single_use import token_id


def codec_for(vectors: dict, ring: list[str], mode: str) -> RequestStateCodec:
    keys = [RingKey(name, name == vectors["primary"], 0, bytes.fromhex(vectors["keys"][name])) for name in ring]
    return RequestStateCodec.with_keys(keys, Mode(mode))


def test_every_vector_opens_as_the_rust_codec_says(vectors):
    for v in vectors["vectors"]:
        codec = codec_for(vectors, v["ring"], v["mode"])
        got = codec.decode_at(v["blob"], v["subject"], v["tool"], v["now"])
        assert got == v["expect"], v["name"]


def test_sealing_gives_the_vectors_bytes(vectors):
    nonce = bytes.fromhex(vectors["nonce"])
    sealed = [v for v in vectors["vectors"] if v.get("encodes")]
    assert len(sealed) >= 4
    for v in sealed:
        codec = codec_for(vectors, v["ring"], v["mode"])
        blob = codec.encode_at(v["expect"], v["subject"], v["tool"], vectors["exp"], nonce)
        assert blob == v["blob"], v["name"]


def test_tokens_are_redeemed_under_the_shared_vectors_ids(vectors):
    assert vectors["redemptions"]
    for case in vectors["redemptions"]:
        assert token_id(case["token"]) == case["id"], case["token"]


@pytest.mark.parametrize("garbage", ["", "v1.", "v1e.", "v1..", "v1e.!!!!", "v2.a.b", "x" * 70000, "v1.e30.AAAA"])
def test_garbage_never_opens(vectors, garbage):
    codec = codec_for(vectors, ["key1"], "signed")
    assert codec.decode_at(garbage, "s", None, vectors["exp"] - 1) is None


def example(name: str):
    binary = handlestore_bin()
    path = binary.parent / "examples" / name if binary else None
    if path is None or not path.exists():
        pytest.skip(f"no {name} example binary: run `cargo build --release --examples`")
    return path


def rust(cluster, namespace: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [str(example("request_state")), "--endpoints", ",".join(cluster.endpoints), "--namespace", namespace]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("mode", [Mode.SIGNED, Mode.ENCRYPTED])
async def test_a_blob_sealed_by_rust_opens_in_python_and_back(cluster, client, namespace, mode):
    example("request_state")
    await client.keyring_rotate(create=True)
    py = await RequestStateCodec.from_cluster(client, mode)
    state = {"cart_id": "cart-1", "lines": 3, "note": "thé"}

    sealed_by_rust = rust(
        cluster,
        namespace,
        "seal",
        "--mode",
        mode.value,
        "--subject",
        "cart-1",
        "--tool",
        "checkout",
        "--state",
        json.dumps(state),
    )
    assert sealed_by_rust.returncode == 0, sealed_by_rust.stderr
    blob = sealed_by_rust.stdout.strip()
    assert await py.decode(blob, "cart-1", "checkout") == state
    assert await py.decode(blob, "cart-2", "checkout") is None, "bound to the subject"

    blob = await py.encode(state, "cart-1", "checkout", ttl=60)
    opened = rust(cluster, namespace, "open", "--subject", "cart-1", "--tool", "checkout", "--blob", blob)
    assert opened.returncode == 0, opened.stderr
    assert json.loads(opened.stdout) == state
    refused = rust(cluster, namespace, "open", "--subject", "cart-1", "--tool", "other", "--blob", blob)
    assert refused.returncode == 1, "bound to the tool"


async def test_rotation_keeps_old_blobs_until_their_key_retires(client):
    first = await client.keyring_rotate(create=True)
    codec = await RequestStateCodec.from_cluster(client, Mode.SIGNED, refresh_every=0)
    blob = await codec.encode({"n": 1}, "s")
    await client.keyring_rotate()
    newer = await codec.encode({"n": 2}, "s")
    assert await codec.decode(blob, "s") == {"n": 1}, "an older key still opens"
    await client.keyring_retire(first)
    assert await codec.decode(blob, "s") is None, "a retired key's blobs no longer open"
    assert await codec.decode(newer, "s") == {"n": 2}


async def test_single_use_opens_a_blob_once_across_replicas(cluster, client, namespace):
    await client.keyring_rotate(create=True)
    other = cluster.client(namespace=namespace)
    try:
        a = (await RequestStateCodec.from_cluster(client, Mode.ENCRYPTED)).with_single_use(SingleUse(client))
        b = (await RequestStateCodec.from_cluster(other, Mode.ENCRYPTED)).with_single_use(SingleUse(other))
        blob = await a.encode({"step": 1}, "u")
        assert await b.decode(blob, "u") == {"step": 1}, "the first redemption, on another replica"
        assert await a.decode(blob, "u") is None, "refused everywhere after"
        assert await b.decode(blob, "u") is None
    finally:
        await other.close()
