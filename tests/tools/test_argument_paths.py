"""A refused argument is named by its full JSON path, however deep it sits."""

from __future__ import annotations

import pytest

from merchantbench.tools.agent_input import MAX_DEPTH, HostileInput, decode_arguments


def refusal(args) -> dict:
    with pytest.raises(HostileInput) as caught:
        decode_arguments(args)
    return caught.value.result["error"]


def test_paths_of_refused_values():
    items = [{"product_id": "p1", "sale_price": 3.0}, {"product_id": "p2", "sale_price": 1e999}]
    assert refusal({"items": items})["path"] == "$.items[1].sale_price"
    assert refusal({"a": [1, 2, {"b": b"raw"}]})["path"] == "$.a[2].b"
    assert refusal({"note": ["ok", "bad \ud800"]})["path"] == "$.note[1]"
    assert refusal({"x": {1: "y"}})["path"] == "$.x"
    assert refusal('{"items": [{"sale_price": NaN}]}')["code"] == "invalid_json"


def test_path_of_too_deep_a_value():
    deep: dict = {}
    node = deep
    for _ in range(MAX_DEPTH):
        node["k"] = {}
        node = node["k"]
    error = refusal(deep)
    assert error["path"] == "$" + ".k" * MAX_DEPTH and "deeper" in error["message"]


def test_accepted_arguments_come_back_unchanged():
    args = {"items": [{"product_id": "p1", "sale_price": 3.5}], "note": "收纳盒", "flag": None}
    assert decode_arguments(args) == args
