"""The event store of handlestore.mcp held to the contract every client's
keeps (proto/vectors/mcp_events.json): its numbers, keys, digests, event
ids, the completion rule and the `origin_lost` error."""

from __future__ import annotations

import json

import pytest
from cluster import REPO

pytest.importorskip("mcp")
from handlestore._encoding import digest_name  # noqa: E402
from handlestore.mcp import event_layout as lay  # noqa: E402
from handlestore.mcp.completion import Completion  # noqa: E402
from handlestore.mcp.follow import origin_lost  # noqa: E402

V = json.loads((REPO / "proto/vectors/mcp_events.json").read_text())


def test_the_numbers_are_the_contract():
    assert lay.EVENTS_PREFIX == V["prefix"]
    assert lay.BUCKET == V["bucket"]
    assert lay.MAX_SEQ == V["max_seq"]
    live = V["live"]
    assert (lay.LIVE_TTL * 1000, lay.LIVE_REFRESH * 1000) == (live["ttl_ms"], live["refresh_ms"])
    assert lay.LIVE_ENDED_TTL * 1000 == live["ended_ttl_ms"]
    assert lay.KEEPALIVE * 1000 == V["follow"]["keepalive_ms"]
    layout = lay.Layout()
    key = layout.event("T", 0).rsplit("/", 2)
    assert (len(key[1]), len(key[2])) == (V["widths"]["bucket"], V["widths"]["seq"])


def test_origin_lost_is_the_contract_error():
    lost = V["origin_lost"]
    assert origin_lost(7) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": lost["code"], "message": lost["message"], "data": {"reason": lost["reason"]}},
    }
    assert origin_lost("7")["id"] == "7", "the request's id, type and all"


@pytest.mark.parametrize("case", V["digests"], ids=lambda c: c["why"])
def test_digests(case):
    assert digest_name(case["input"]) == case["digest"]


@pytest.mark.parametrize("case", V["keys"], ids=lambda c: f"{c['kind']}-{c.get('seq', '')}")
def test_keys(case):
    layout = lay.Layout(V["prefix"])
    if case["kind"] == "head":
        name = next(d["input"] for d in V["digests"] if d["digest"] == case["stream_digest"])
        assert layout.head(name) == case["key"]
    elif case["kind"] == "token":
        assert layout.token(case["token"]) == case["key"]
    elif case["kind"] == "live":
        assert layout.live(case["token"]) == case["key"]
    elif case["kind"] == "requests":
        assert layout.requests(case["token"]) == case["key"]
    elif case["kind"] == "event":
        assert layout.event(case["token"], case["seq"]) == case["key"]
        assert lay.Layout.seq_of(case["key"]) == case["seq"]
    else:
        pytest.fail(f"a key kind the layout does not know: {case['kind']}")


@pytest.mark.parametrize("case", V["event_ids"], ids=lambda c: c.get("why", c["input"]))
def test_event_ids(case):
    parsed = lay.parse_event_id(case["input"])
    if case.get("valid", True):
        assert parsed == (case["token"], case["seq"])
        assert lay.event_id(*parsed) == case["input"]
    else:
        assert parsed is None


@pytest.mark.parametrize("case", V["completion"]["cases"], ids=lambda c: c["why"])
def test_completion(case):
    c = Completion(case["requests"])
    for message in case["messages"]:
        c.add(message)
    assert c.complete is case["complete"]
    if case["complete"]:
        assert c.unanswered() == []
