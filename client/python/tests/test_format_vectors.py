"""The shared format vectors (proto/vectors/formats.json): this client's
checks of handle ids, names, keys and prefixes decide every case as the
node does."""

from __future__ import annotations

import json

import pytest
from cluster import REPO

from handlestore.ids import check_handle_id, is_name
from handlestore.keys import check_key, check_prefix

FORMATS = json.loads((REPO / "proto/vectors/formats.json").read_text(encoding="utf-8"))
CHECKS = {
    "handle_ids": lambda s: check_handle_id(s) is None,
    "names": lambda s: is_name(s),
    "keys": lambda s: check_key(s) is None,
    "prefixes": lambda s: check_prefix(s) is None,
}


def expand(v: str | list | dict) -> str:
    """A case's input: a string, or parts (strings or {"repeat", "times"}) concatenated."""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "".join(map(expand, v))
    return v["repeat"] * v["times"]


@pytest.mark.parametrize(
    ("kind", "case"),
    [pytest.param(kind, case, id=f"{kind}-{i}") for kind in CHECKS for i, case in enumerate(FORMATS[kind])],
)
def test_format_vector(kind: str, case: dict) -> None:
    assert CHECKS[kind](expand(case["input"])) == case["valid"], f"{case['input']!r}: {case['why']}"
