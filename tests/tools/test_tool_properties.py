"""Property tests: whatever an agent sends, `call` answers and never raises (bugs aside)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from example_shop import CATALOG, FakeShop, shop_registry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from merchantbench.tools import ToolRegistry, declare_tool
from merchantbench.tools.errors import FRAMEWORK_CODES

REGISTRY = shop_registry().enable({"forecast_demand"})
NAMES = [t.name for t in REGISTRY.tools()]
DOMAIN_CODES = {"not_found", "not_listed"}
PARAMETER_NAMES = sorted(
    {name for t in REGISTRY.tools() for name in t.parameter_names} | {"product_id", "sale_price"}
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["p1", "p2", "relevance", "price_desc", "1", "2.5", "k1"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(PARAMETER_NAMES) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
argument_names = st.sampled_from(PARAMETER_NAMES) | st.text(max_size=8)
argument_dicts = st.dictionaries(argument_names, json_values)
keys = st.none() | st.sampled_from(["k1", "k2"]) | st.text(max_size=3) | st.integers()


listings = st.fixed_dictionaries(
    {
        "product_id": st.sampled_from([*CATALOG, "zz", ""]),
        "sale_price": st.floats(min_value=-5, max_value=2e6),
    }
)
# Near-valid calls, so that the properties also cover tool bodies that run and succeed.
plausible_calls = st.one_of(
    st.tuples(st.just("list_items"), st.fixed_dictionaries({"items": st.lists(listings)})),
    st.tuples(
        st.just("set_price"),
        st.fixed_dictionaries(
            {"product_id": st.sampled_from(["p1", "p2"]), "price": st.floats(-1, 2e6) | scalars}
        ),
    ),
    st.tuples(
        st.just("search"),
        st.fixed_dictionaries(
            {"query": st.text(max_size=3)},
            optional={
                "sort": st.sampled_from(["relevance", "price_asc", "price_desc", "best"]),
                "page": st.integers(-1, 60),
                "max_price": st.none() | st.floats(-1, 100),
            },
        ),
    ),
    st.tuples(st.just("forecast_demand"), st.fixed_dictionaries({}, optional={"days": scalars})),
)
random_calls = st.tuples(
    st.sampled_from([*NAMES, "nope"]), argument_dicts | st.text(max_size=40) | json_values
)


def check_answer(answer: dict[str, Any]) -> None:
    assert isinstance(answer, dict) and isinstance(answer["ok"], bool)
    if not answer["ok"]:
        assert set(answer) == {"ok", "error"}
        assert answer["error"]["code"] in FRAMEWORK_CODES | DOMAIN_CODES
        assert isinstance(answer["error"]["message"], str) and answer["error"]["message"]
        assert answer["error"].get("path", "$").startswith("$")
    json.dumps(answer, allow_nan=False)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name_and_args=plausible_calls | random_calls, key=keys)
def test_call_never_raises_for_anything_an_agent_sends(
    name_and_args: tuple[str, Any], key: Any
) -> None:
    name, args = name_and_args
    shop = FakeShop(listings={"p1": 10.0})
    before = shop.state()
    answer = REGISTRY.call(shop, name, args, idempotency_key=key)
    check_answer(answer)
    if not answer["ok"]:
        assert shop.state() == before


@settings(max_examples=200, deadline=None)
@given(name_and_args=plausible_calls | random_calls, key=keys)
def test_a_second_identical_call_with_a_key_replays(
    name_and_args: tuple[str, Any], key: Any
) -> None:
    name, args = name_and_args
    shop = FakeShop(listings={"p1": 10.0})
    first = REGISTRY.call(shop, name, args, idempotency_key=key)
    writes = shop.writes
    second = REGISTRY.call(shop, name, args, idempotency_key=key)
    check_answer(second)
    if first["ok"] and REGISTRY.get(name).kind == "write" and isinstance(key, str) and key:
        assert second == first and shop.writes == writes


@settings(max_examples=200, deadline=None)
@given(items=st.lists(listings, max_size=7))
def test_validation_agrees_with_the_advertised_schema(items: list[dict[str, Any]]) -> None:
    arguments = {"items": items}
    validator = jsonschema.Draft202012Validator(REGISTRY.get("list_items").parameters_schema)
    answer = REGISTRY.call(FakeShop(), "list_items", arguments)
    schema_valid = validator.is_valid(arguments)
    assert (answer["ok"] or answer["error"]["code"] != "invalid_argument") is schema_valid


def _buggy_registry() -> ToolRegistry:
    def explode(ctx: object, count: int = 0, label: str = "") -> dict[str, Any]:
        """Fail on purpose.

        Args:
            count: Anything.
            label: Anything.
        """
        raise LookupError(f"bug with {count} {label}")

    return ToolRegistry([declare_tool(explode, kind="read", group="control")])


BUGGY = _buggy_registry()


@settings(max_examples=200, deadline=None)
@given(args=argument_dicts | st.text(max_size=30))
def test_a_buggy_tool_crashes_loudly_for_valid_arguments_only(args: Any) -> None:
    try:
        answer = BUGGY.call(object(), "explode", args)
    except LookupError as bug:
        assert str(bug).startswith("bug with")
    else:
        check_answer(answer)
        assert answer["ok"] is False


def test_the_buggy_tool_does_raise() -> None:
    with pytest.raises(LookupError):
        BUGGY.call(object(), "explode", {"count": "3"})
