"""Calling tools: decoding, validation, refusals versus bugs, optional tools."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from example_shop import FakeShop, Listing, shop_registry
from pydantic import BaseModel

from merchantbench.tools import ToolError, ToolRegistry, declare_tool

REGISTRY = shop_registry()


def call(shop: FakeShop, name: str, args: Any = None, **kwargs: Any) -> dict[str, Any]:
    return REGISTRY.call(shop, name, args, **kwargs)


def error(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"] is False, result
    return result["error"]


def test_success_merges_the_result_and_applies_defaults() -> None:
    result = call(FakeShop(), "search", {"query": "box", "sort": "price_desc"})
    assert result["ok"] is True
    assert result["page"] == 1
    assert [row[1] for row in result["rows"]] == [99.0, 30.0, 12.5, 7.25]


def test_a_model_result_is_dumped() -> None:
    shop = FakeShop(listings={"p1": 20.0})
    assert call(shop, "query_balance") == {"ok": True, "balance": 2000.0, "listings": 1}


def test_lax_coercion_of_numeric_strings_but_not_of_nonsense() -> None:
    assert call(FakeShop(), "search", {"query": "x", "page": "3"})["page"] == 3
    problem = error(call(FakeShop(), "search", {"query": "x", "page": "third"}))
    assert problem["code"] == "invalid_argument" and problem["path"] == "$.page"
    assert error(call(FakeShop(), "search", {"query": "x", "page": 2.5}))["path"] == "$.page"


def test_unknown_argument_is_rejected_and_the_allowed_ones_are_named() -> None:
    problem = error(call(FakeShop(), "search", {"query": "x", "colour": "red"}))
    assert problem["path"] == "$.colour"
    assert "unknown argument 'colour'" in problem["message"]
    assert "query, sort, page, max_price" in problem["message"]


def test_literal_values_are_enforced() -> None:
    problem = error(call(FakeShop(), "search", {"query": "x", "sort": "cheapest"}))
    assert problem["path"] == "$.sort"
    assert "'relevance', 'price_asc' or 'price_desc'" in problem["message"]


def test_nested_errors_point_at_the_list_item_and_field() -> None:
    shop = FakeShop()
    before = shop.state()
    items = [{"product_id": "p1", "sale_price": 5}] * 2 + [{"product_id": "p2", "sale_price": -1}]
    problem = error(call(shop, "list_items", {"items": items}))
    assert problem["code"] == "invalid_argument"
    assert problem["path"] == "$.items[2].sale_price"
    assert problem["message"].startswith("$.items[2].sale_price: Input should be greater")
    assert "(got -1)" in problem["message"]
    assert "details" not in problem
    assert shop.state() == before


def test_every_error_is_listed_in_details_and_missing_fields_have_paths() -> None:
    items = [{"sale_price": 5}, {"product_id": "p2", "sale_price": 5, "colour": "red"}]
    problem = error(call(FakeShop(), "list_items", {"items": items, "extra": True}))
    paths = [detail["path"] for detail in problem["details"]]
    assert paths == ["$.items[0].product_id", "$.items[1].colour", "$.extra"]
    assert problem["path"] == "$.items[0].product_id"
    assert "and 2 more (see details)" in problem["message"]
    assert problem["details"][1]["message"] == "unknown field 'colour'"


def test_missing_required_argument() -> None:
    problem = error(call(FakeShop(), "set_price", {"product_id": "p1"}))
    assert (problem["path"], problem["message"]) == ("$.price", "$.price: required but missing")


def test_union_member_names_do_not_leak_into_paths() -> None:
    assert error(call(FakeShop(), "search", {"query": "x", "max_price": "cheap"}))["path"] == (
        "$.max_price"
    )

    def restock(ctx: object, orders: list[Listing | Literal["all"]]) -> None:
        """Restock.

        Args:
            orders: What to restock.
        """

    registry = ToolRegistry([declare_tool(restock, kind="write", group="listing")])
    orders = ["all", {"product_id": "p1", "sale_price": -2}, 3]
    problem = error(registry.call(object(), "restock", {"orders": orders}))
    paths = {detail["path"] for detail in problem["details"]}
    assert paths == {"$.orders[1].sale_price", "$.orders[1]", "$.orders[2]"}


def test_raw_json_arguments() -> None:
    result = call(FakeShop(), "search", '{"query": "box", "page": 2}')
    assert (result["ok"], result["page"]) == (True, 2)
    for nothing in ("", "  ", None):
        assert call(FakeShop(), "query_balance", nothing)["ok"] is True
    # One decoder for every caller (tools.agent_input): JSON null is not an object.
    assert error(call(FakeShop(), "query_balance", "null"))["code"] == "invalid_json"


@pytest.mark.parametrize(
    "text", ['{"query": "box"', "{'query': 'box'}", '{"query": NaN}', "[" * 100_000, "box"]
)
def test_malformed_json_is_refused(text: str) -> None:
    problem = error(call(FakeShop(), "search", text))
    assert problem["code"] == "invalid_json"
    assert "path" not in problem


@pytest.mark.parametrize("args", [[1, 2], 3.5])
def test_arguments_must_be_an_object(args: Any) -> None:
    problem = error(call(FakeShop(), "search", args))
    assert (problem["code"], problem["path"]) == ("invalid_argument", "$")


@pytest.mark.parametrize("text", ["[1, 2]", '"box"', "3"])
def test_json_text_must_hold_an_object(text: str) -> None:
    # As the agent surface answers (tools.agent_input): the text is not a JSON object.
    problem = error(call(FakeShop(), "search", text))
    assert problem["code"] == "invalid_json" and "must be a JSON object" in problem["message"]


def test_non_finite_numbers_are_refused_in_python_arguments_too() -> None:
    shop = FakeShop(listings={"p1": 1.0})
    problem = error(call(shop, "set_price", {"product_id": "p1", "price": float("nan")}))
    assert problem["path"] == "$.price"
    listing = {"product_id": "p1", "sale_price": float("inf")}
    assert error(call(FakeShop(), "list_items", {"items": [listing]}))["path"] == (
        "$.items[0].sale_price"
    )


def test_unknown_tool_suggests_the_closest_name() -> None:
    problem = error(call(FakeShop(), "serch", {"query": "x"}))
    assert problem["code"] == "unknown_tool"
    assert "Did you mean 'search'?" in problem["message"]
    assert "forecast_demand" not in problem["message"]
    assert error(call(FakeShop(), ["search"]))["code"] == "unknown_tool"  # type: ignore[arg-type]


def test_tool_error_is_a_refusal_that_changes_nothing() -> None:
    shop = FakeShop()
    before = shop.state()
    items = [{"product_id": "p1", "sale_price": 5}, {"product_id": "nope", "sale_price": 5}]
    problem = error(call(shop, "list_items", {"items": items}, idempotency_key="k1"))
    assert problem == {
        "code": "not_found",
        "message": "no product nope",
        "path": "$.items[1].product_id",
    }
    assert shop.state() == before
    assert error(call(shop, "set_price", {"product_id": "p1", "price": 3}))["code"] == "not_listed"


def test_tool_bodies_receive_validated_values() -> None:
    seen: list[Any] = []

    def capture(ctx: object, items: list[Listing]) -> None:
        """Capture.

        Args:
            items: Items.
        """
        seen.extend(items)

    registry = ToolRegistry([declare_tool(capture, kind="read", group="control")])
    raw = '{"items": [{"product_id": "p1", "sale_price": "2"}]}'
    assert registry.call(object(), "capture", raw) == {"ok": True}
    assert seen == [Listing(product_id="p1", sale_price=2.0)]


def _declared(body: Any) -> ToolRegistry:
    def broken(ctx: object, n: int = 1) -> Any:
        """Broken.

        Args:
            n: A number.
        """
        return body(n)

    return ToolRegistry([declare_tool(broken, kind="read", group="control")])


def test_a_bug_in_a_tool_propagates() -> None:
    with pytest.raises(ZeroDivisionError):
        _declared(lambda n: n / 0).call(object(), "broken", {"n": 3})


def test_a_validation_error_inside_a_tool_is_a_bug_not_a_refusal() -> None:
    with pytest.raises(ValueError):
        _declared(lambda n: Listing(product_id="", sale_price=n)).call(object(), "broken", {})


@pytest.mark.parametrize(("returned", "complaint"), [([1], "returned list"), ({"ok": 1}, "'ok'")])
def test_returning_the_wrong_shape_is_a_bug(returned: Any, complaint: str) -> None:
    with pytest.raises(TypeError, match=complaint):
        _declared(lambda n: returned).call(object(), "broken", {})


def test_returning_none_is_a_bare_success() -> None:
    assert _declared(lambda n: None).call(object(), "broken", {}) == {"ok": True}


def test_tool_error_carries_code_message_and_path() -> None:
    refusal = ToolError("listing_cap", "50 listings at most", "$.items")
    assert refusal.to_result() == {
        "ok": False,
        "error": {"code": "listing_cap", "message": "50 listings at most", "path": "$.items"},
    }
    assert "path" not in ToolError("store_closed", "closed").to_result()["error"]


def test_optional_tools_are_off_until_enabled() -> None:
    assert [t.name for t in REGISTRY.tools()][-1] == "query_balance"
    assert [t.name for t in REGISTRY.tools(include_optional=True)][-1] == "forecast_demand"
    problem = error(call(FakeShop(), "forecast_demand", {}))
    assert (problem["code"], "not enabled" in problem["message"]) == ("unknown_tool", True)
    scenario = REGISTRY.enable({"forecast_demand"})
    assert scenario.call(FakeShop(), "forecast_demand", {"days": 2})["orders"] == [0, 0]
    names = [schema["function"]["name"] for schema in scenario.schema_list()]
    assert names == ["list_items", "set_price", "search", "query_balance", "forecast_demand"]
    assert REGISTRY.schema_list({"forecast_demand"}) == scenario.schema_list()
    assert REGISTRY.schema_sha256() != scenario.schema_sha256()
    assert REGISTRY.enabled == frozenset()


def test_enabling_an_unknown_tool_is_an_error() -> None:
    with pytest.raises(ValueError, match="forecast"):
        REGISTRY.enable({"forecast"})
    assert REGISTRY.enable({"search"}).schema_sha256() == REGISTRY.schema_sha256()


def test_registry_keeps_declaration_order_and_refuses_duplicates() -> None:
    import example_shop

    collected = ToolRegistry.from_modules(example_shop)
    assert [t.name for t in collected.tools(include_optional=True)] == [
        t.name for t in REGISTRY.tools(include_optional=True)
    ]
    with pytest.raises(ValueError, match="already registered"):
        ToolRegistry([REGISTRY.get("search"), REGISTRY.get("search")])


def test_the_registry_decorator_declares_and_registers() -> None:
    registry = ToolRegistry()

    @registry.tool(kind="read", group="control")
    def ping(ctx: object) -> dict[str, Any]:
        """Answer pong."""
        return {"pong": True}

    assert "ping" in registry and len(registry) == 1
    assert registry.call(object(), "ping") == {"ok": True, "pong": True}
    assert isinstance(registry.get("ping").args_model(), BaseModel)
