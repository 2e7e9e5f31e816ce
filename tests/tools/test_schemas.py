"""The tools (core and optional) as the model sees them: schemas valid and closed, matching the
signatures; and every way an argument can be wrong refused with its path, changing nothing."""

from __future__ import annotations

import inspect
import json
from typing import Any, get_args

import jsonschema
import pytest
from store_market import busy_session, scenario
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.scenario import CATEGORIES
from merchantbench.session import Session
from merchantbench.tools.declare import Tool
from merchantbench.tools.schema import IDEMPOTENCY_KEY, iter_subschemas
from merchantbench.tools.sourcing import Category
from merchantbench.tools.toolset import build_registry

DESIGN_TOOLS = {
    "sourcing": ["get_daily_report", "search_products", "get_product_detail",
                 "get_supplier_profile", "list_supplier_products"],
    "listing": ["list_product", "delist_product", "adjust_price", "review_my_listings",
                "query_my_listings"],
    "cash": ["query_balance", "get_store_snapshot", "query_platform_rules",
             "query_cash_pipeline", "query_store_performance", "query_product_sales_stats"],
    "monitoring": ["query_supply_chain_anomalies", "query_my_orders", "query_open_orders",
                   "query_order_updates", "query_order_detail"],
    "control": ["read_memory_doc", "write_memory_doc", "get_observation", "list_tools",
                "end_of_step"],
}  # fmt: skip
OPTIONAL = ["market_brief", "hot_search_terms"]
WRITES = {"list_product", "delist_product", "adjust_price", "write_memory_doc", "end_of_step"}
ALL_ENABLED = ("tools.market_brief=true", "tools.hot_search_terms=true")
REGISTRY = build_registry(scenario(*ALL_ENABLED))
TOOLS = REGISTRY.tools(include_optional=True)

# Valid values for required arguments, so that one wrong argument is the only problem.
REQUIRED = {
    "product_id": "P1000",
    "supplier_id": "S100",
    "items": [{"product_id": "P1007", "sale_price": 1.0}],
    "product_ids": ["P1000"],
    "sale_price": 16.8,
    "order_id": 1,
    "content": "note",
}


def parameters(declared: Tool) -> dict[str, Any]:
    return declared.openai_schema()["function"]["parameters"]


def valid_args(declared: Tool) -> dict[str, Any]:
    return {name: REQUIRED[name] for name in parameters(declared).get("required", [])}


def test_core_tools_in_group_order_and_the_optional_ones() -> None:
    """The core tools come group by group in §8's order, each group holding the contract's
    tools in its order (a tool added later may sit among them); optional tools come last."""
    core = build_registry(scenario()).tools()
    groups = [t.group for t in core]
    assert groups == sorted(groups, key=list(DESIGN_TOOLS).index)
    for group, names in DESIGN_TOOLS.items():
        declared = [t.name for t in core if t.group == group]
        assert [name for name in declared if name in names] == names
    assert [t.name for t in TOOLS if t.optional] == OPTIONAL
    assert {t.name for t in TOOLS if t.kind == "write"} == WRITES
    assert [t.name for t in TOOLS[: len(core)]] == [t.name for t in core]


@pytest.mark.parametrize("declared", TOOLS, ids=lambda t: t.name)
def test_schema_is_valid_closed_and_matches_the_signature(declared: Tool) -> None:
    schema = parameters(declared)
    jsonschema.Draft202012Validator.check_schema(schema)
    objects = [node for node in iter_subschemas(schema) if node.get("type") == "object"]
    assert objects and all(node["additionalProperties"] is False for node in objects)
    signature = list(inspect.signature(declared.fn).parameters.values())[1:]
    names = [p.name for p in signature] + ([IDEMPOTENCY_KEY] if declared.kind == "write" else [])
    assert list(schema["properties"]) == names
    required = [p.name for p in signature if p.default is inspect.Parameter.empty]
    assert schema.get("required", []) == required
    assert all(prop.get("description") for prop in schema["properties"].values())
    assert declared.summary.endswith(".") and len(declared.summary) <= 100


def test_category_literal_is_the_benchmark_categories() -> None:
    assert get_args(Category) == CATEGORIES


def invalid_variants(declared: Tool) -> list[tuple[str, dict[str, Any], str]]:
    """(label, arguments, expected error path) for every way the schema can be broken."""
    base = valid_args(declared)
    variants = [("unknown argument", {**base, "colour": "red"}, "$.colour")]
    for name, prop in parameters(declared)["properties"].items():
        if name == IDEMPOTENCY_KEY:
            variants.append(("empty key", {**base, name: ""}, f"$.{name}"))
            continue
        if name in base:
            variants.append(
                (f"{name} missing", {k: v for k, v in base.items() if k != name}, f"$.{name}")
            )
        typed = next((o for o in prop.get("anyOf", [prop]) if o.get("type") != "null"), prop)
        wrong = {"string": 12, "integer": "twelve", "number": "twelve", "array": "x"}
        if "enum" in typed:
            variants.append((f"{name} not in enum", {**base, name: "bogus"}, f"$.{name}"))
        elif typed.get("type") in wrong:
            variants.append(
                (f"{name} wrong type", {**base, name: wrong[typed["type"]]}, f"$.{name}")
            )
        for bound, value in _out_of_bounds(typed, base.get(name)):
            variants.append((f"{name} {bound}", {**base, name: value}, f"$.{name}"))
    return variants


def _out_of_bounds(prop: dict[str, Any], example: Any) -> list[tuple[str, Any]]:
    found = []
    if "minimum" in prop:
        found.append(("below minimum", prop["minimum"] - 1))
    if "maximum" in prop:
        found.append(("above maximum", prop["maximum"] + 1))
    if "maxLength" in prop:
        found.append(("too long", "x" * (prop["maxLength"] + 1)))
    if prop.get("minItems"):
        found.append(("too few items", []))
    if "maxItems" in prop:
        found.append(("too many items", [example[0]] * (prop["maxItems"] + 1)))
    return found


CASES = [(t, *v) for t in TOOLS for v in invalid_variants(t)]


@pytest.fixture(scope="module")
def session() -> Session:
    return busy_session(windows=2, **{})


def test_every_tool_has_invalid_variants() -> None:
    per_tool = {t.name: sum(1 for c in CASES if c[0] is t) for t in TOOLS}
    assert min(per_tool.values()) >= 1 and len(CASES) > 100


@pytest.mark.parametrize(("declared", "label", "arguments", "path"), CASES,
                         ids=[f"{c[0].name}: {c[1]}" for c in CASES])  # fmt: skip
def test_invalid_arguments_are_refused_with_their_path_and_change_nothing(
    session: Session, declared: Tool, label: str, arguments: dict[str, Any], path: str
) -> None:
    assert not jsonschema.Draft202012Validator(parameters(declared)).is_valid(arguments)
    registry = build_registry(scenario(*ALL_ENABLED))
    before = (session.state_hash(), session.memory_doc, dict(session.idempotency_store))
    result = registry.call(session, declared.name, arguments)
    assert result["ok"] is False and result["error"]["code"] == "invalid_argument", result
    assert result["error"]["path"] == path
    assert (session.state_hash(), session.memory_doc, dict(session.idempotency_store)) == before
    assert not session._end_requested  # a refused end_of_step does not close the window


@pytest.mark.parametrize("declared", TOOLS, ids=lambda t: t.name)
def test_valid_minimal_arguments_pass_the_schema(declared: Tool) -> None:
    assert jsonschema.Draft202012Validator(parameters(declared)).is_valid(valid_args(declared))


def test_arguments_as_raw_json_text_and_invalid_json(session: Session) -> None:
    registry = build_registry(scenario())
    assert registry.call(session, "query_my_orders", '{"status": "open", "page_size": "5"}')["ok"]
    assert (
        registry.call(session, "query_my_orders", '{"status": ')["error"]["code"] == "invalid_json"
    )


# --- CLI -------------------------------------------------------------------------------------

runner = CliRunner()


def test_cli_schema_prints_the_registry_schemas_and_hash() -> None:
    result = runner.invoke(app, ["tools", "schema", "--scenario", "smoke"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    registry = build_registry(scenario())
    assert document == {"sha256": registry.schema_sha256(), "tools": registry.schema_list()}
    enabled = runner.invoke(app, ["tools", "schema", "--set", "tools.market_brief=true"])
    assert len(json.loads(enabled.output)["tools"]) == 27


def test_cli_list_and_describe() -> None:
    listed = runner.invoke(app, ["tools", "list"]).output.splitlines()
    assert listed[0].split() == ["name", "group", "kind", "summary"] and len(listed) == 27
    assert listed[6].split()[:3] == ["list_product", "listing", "write"]
    every = runner.invoke(app, ["tools", "list", "--all"]).output
    assert "market_brief" in every and "(optional, off)" in every
    described = runner.invoke(app, ["tools", "describe", "list_product"])
    assert described.exit_code == 0 and "`items[].sale_price`" in described.output
    unknown = runner.invoke(app, ["tools", "describe", "sell_everything"])
    assert unknown.exit_code == 2


@pytest.mark.parametrize(
    ("item", "path"),
    [
        ({"product_id": "P1007", "sale_price": 0}, "$.items[0].sale_price"),
        ({"product_id": "P1007", "sale_price": "cheap"}, "$.items[0].sale_price"),
        ({"product_id": "", "sale_price": 1}, "$.items[0].product_id"),
        ({"product_id": "P1007"}, "$.items[0].sale_price"),
        ({"product_id": "P1007", "sale_price": 1, "colour": "red"}, "$.items[0].colour"),
    ],
)
def test_nested_item_errors_point_into_the_batch(
    session: Session, item: dict[str, Any], path: str
) -> None:
    before = session.state_hash()
    result = build_registry(scenario()).call(session, "list_product", {"items": [item]})
    assert (result["error"]["code"], result["error"]["path"]) == ("invalid_argument", path)
    assert session.state_hash() == before
