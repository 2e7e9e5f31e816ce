"""Idempotency keys on state-changing tools."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from example_shop import FakeShop, shop_registry

REGISTRY = shop_registry()
ITEMS = {"items": [{"product_id": "p1", "sale_price": 15}]}


def test_a_repeated_key_returns_the_first_result_without_acting_again() -> None:
    shop = FakeShop()
    first = REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1")
    assert first == {"ok": True, "listed": ["p1"]}
    again = REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1")
    assert again == first
    assert shop.writes == 1


def test_the_key_may_be_sent_among_the_arguments() -> None:
    shop = FakeShop()
    REGISTRY.call(shop, "list_items", {**ITEMS, "idempotency_key": "k1"})
    REGISTRY.call(shop, "list_items", json.dumps({**ITEMS, "idempotency_key": "k1"}))
    REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1")
    assert shop.writes == 1
    assert list(shop.idempotency_store) == ["k1"]


def test_equivalent_arguments_are_the_same_call() -> None:
    shop = FakeShop()
    REGISTRY.call(shop, "set_price", {"product_id": "p1", "price": 3}, idempotency_key="k")
    assert shop.writes == 0  # not listed: a refusal is not remembered
    shop.listings["p1"] = 1.0
    REGISTRY.call(shop, "set_price", {"product_id": "p1", "price": 3}, idempotency_key="k")
    replay = REGISTRY.call(shop, "set_price", '{"price": "3.0", "product_id": "p1"}', "k")
    assert replay == {"ok": True, "product_id": "p1", "price": 3.0}
    assert shop.writes == 1


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("list_items", {"items": [{"product_id": "p1", "sale_price": 16}]}),
        ("list_items", {"items": [{"product_id": "p2", "sale_price": 15}]}),
        ("set_price", {"product_id": "p1", "price": 15}),
    ],
)
def test_a_key_reused_for_a_different_call_is_a_conflict(name: str, args: dict[str, Any]) -> None:
    shop = FakeShop()
    REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1")
    before = shop.state()
    result = REGISTRY.call(shop, name, args, idempotency_key="k1")
    assert result["ok"] is False
    assert (result["error"]["code"], result["error"]["path"]) == (
        "idempotency_conflict",
        "$.idempotency_key",
    )
    assert shop.state() == before


def test_without_a_key_every_call_acts() -> None:
    shop = FakeShop()
    REGISTRY.call(shop, "list_items", ITEMS)
    REGISTRY.call(shop, "list_items", ITEMS)
    assert shop.writes == 2 and shop.idempotency_store == {}


def test_a_refused_call_leaves_its_key_free() -> None:
    shop = FakeShop()
    bad = {"items": [{"product_id": "zz", "sale_price": 15}]}
    assert REGISTRY.call(shop, "list_items", bad, idempotency_key="k1")["ok"] is False
    assert shop.idempotency_store == {}
    assert REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1")["ok"] is True


@pytest.mark.parametrize("key", ["", "x" * 201, 7, ["k"]])
def test_malformed_keys_are_refused(key: Any) -> None:
    shop = FakeShop()
    result = REGISTRY.call(shop, "list_items", {**ITEMS, "idempotency_key": key})
    assert result["error"]["code"] == "invalid_argument"
    assert result["error"]["path"] == "$.idempotency_key"
    assert shop.writes == 0


def test_two_different_keys_for_one_call_are_refused() -> None:
    shop = FakeShop()
    result = REGISTRY.call(shop, "list_items", {**ITEMS, "idempotency_key": "a"}, "b")
    assert result["error"]["code"] == "invalid_argument"
    assert shop.writes == 0


def test_read_tools_ignore_a_key_beside_the_arguments_but_not_inside() -> None:
    shop = FakeShop()
    assert REGISTRY.call(shop, "search", {"query": "x"}, idempotency_key="k")["ok"] is True
    assert shop.idempotency_store == {}
    inside = REGISTRY.call(shop, "search", {"query": "x", "idempotency_key": "k"})
    assert inside["error"]["path"] == "$.idempotency_key"


def test_the_store_snapshots_and_restores_with_the_context() -> None:
    shop = FakeShop()
    first = REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1")
    snapshot = json.loads(json.dumps(shop.idempotency_store))
    restored = FakeShop(listings=dict(shop.listings), idempotency_store=snapshot)
    assert REGISTRY.call(restored, "list_items", ITEMS, idempotency_key="k1") == first
    assert restored.writes == 0


def test_a_replay_is_a_fresh_copy() -> None:
    shop = FakeShop()
    first = REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1")
    remembered = copy.deepcopy(first)
    first["listed"].append("tampered")
    again = REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1")
    again["listed"].clear()
    assert REGISTRY.call(shop, "list_items", ITEMS, idempotency_key="k1") == remembered
