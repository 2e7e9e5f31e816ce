"""Tool descriptions and schema bounds state the run's limits: rendered from the scenario."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from pydantic import Field
from store_market import new_session, scenario

from merchantbench.scenario import Scenario
from merchantbench.tools.declare import declare_tool
from merchantbench.tools.render import Limit, byte_size_text, render_text
from merchantbench.tools.toolset import DECLARED, END_OF_STEP, build_registry

DEFAULT = build_registry(Scenario())


def function(registry: Any, name: str) -> dict[str, Any]:
    return registry.get(name).openai_schema()["function"]


def test_the_listing_cap_is_stated_where_list_product_and_delist_product_state_it() -> None:
    registry = build_registry(scenario("tools.max_active_listings=30"))
    listed = function(registry, "list_product")
    assert "At most 30\nactive listings" in listed["description"]
    items = listed["parameters"]["properties"]["items"]
    assert (items["maxItems"], items["description"]) == (
        30,
        "1 to 30 products with their sale prices.",
    )
    delisted = function(registry, "delist_product")["parameters"]["properties"]["product_ids"]
    assert delisted["maxItems"] == 30
    default_items = function(DEFAULT, "list_product")["parameters"]["properties"]["items"]
    assert default_items["maxItems"] == 50  # the batch size is 100, but only 50 slots exist
    assert registry.schema_sha256() != DEFAULT.schema_sha256()
    # Validation keeps the promise the schema makes.
    too_many = {"items": [{"product_id": f"P{k}", "sale_price": 5} for k in range(31)]}
    model = registry.get("list_product").args_model
    with pytest.raises(ValueError, match="at most 30 items"):
        model.model_validate(too_many)


def test_a_smaller_batch_size_is_the_bound_when_it_is_below_the_cap() -> None:
    registry = build_registry(scenario("tools.list_batch_max=7"))
    items = function(registry, "list_product")["parameters"]["properties"]["items"]
    assert (items["maxItems"], items["description"][:7]) == (7, "1 to 7 ")


@pytest.mark.parametrize(("size", "text"), [(10, "10 bytes"), (512 * 1024, "512 KiB")])
def test_the_memory_document_limit_follows_the_scenario(size: int, text: str) -> None:
    sc = scenario(f"tools.memory_doc_bytes={size}")
    registry = build_registry(sc)
    described = function(registry, "write_memory_doc")["description"]
    assert f"It holds {text} of UTF-8 at most." in described
    assert "256 KiB" in function(DEFAULT, "write_memory_doc")["description"]
    assert registry.schema_sha256() != DEFAULT.schema_sha256()
    assert byte_size_text(sc.tools.memory_doc_bytes) == text


def test_other_stated_limits_follow_the_scenario() -> None:
    overrides = (
        "tools.page_size_max=12",
        "orders.late_after_hours=36",
        "orders.resolution_hours=[24,240]",
        "demand.max_price_multiple_of_cost=20",
        "demand.exposure_ramp_days=10",
    )
    registry = build_registry(scenario(*overrides))
    page = function(registry, "query_my_orders")["parameters"]["properties"]["page_size"]
    assert (page["maximum"], page["default"], page["description"]) == (
        12,
        12,
        "Rows per page (at most 12).",
    )
    assert "within 36 h" in function(registry, "query_supply_chain_anomalies")["description"]
    assert "not shipped\n36 h after" in function(registry, "query_open_orders")["description"]
    assert "settles, 1-10 days after" in function(registry, "query_cash_pipeline")["description"]
    assert "(20 × price)" in function(registry, "get_product_detail")["description"]
    listed = function(registry, "list_product")["description"]
    assert "0.01 to 20 × the" in listed and "about\n10 days" in listed
    price = function(registry, "adjust_price")["parameters"]["properties"]["sale_price"]
    assert "0.01 to 20 × the procurement price" in price["description"]


def test_no_stated_limit_is_left_as_a_number_of_the_default_scenario() -> None:
    """Each tool states exactly the settings it names; rendering a scenario that changes all of
    them leaves no tool text as it was, unless the tool states no limit at all."""
    changed = scenario(
        "tools.max_active_listings=31", "tools.list_batch_max=29", "tools.page_size_max=13",
        "tools.memory_doc_bytes=1000", "orders.late_after_hours=37",
        "orders.resolution_hours=[48,192]", "demand.max_price_multiple_of_cost=21",
        "demand.exposure_ramp_days=11",
    )  # fmt: skip
    registry = build_registry(changed)
    for declared in DECLARED.tools(include_optional=True):
        rendered = registry.get(declared.name)
        if declared.settings:
            assert rendered is not declared
            assert rendered.openai_schema() != declared.openai_schema(), declared.name
        else:
            assert rendered is declared


def test_the_default_scenario_renders_to_the_declared_tools_and_renderings_are_cached() -> None:
    for declared in DECLARED.tools(include_optional=True):
        assert DEFAULT.get(declared.name) is declared
    one = build_registry(scenario("tools.page_size_max=9")).get("search_products")
    two = build_registry(scenario("tools.page_size_max=9")).get("search_products")
    assert one is two


def test_the_brief_agrees_with_the_rendered_schemas() -> None:
    session = new_session("tools.max_active_listings=30", "tools.memory_doc_bytes=100000")
    brief, registry = session.brief(), session.registry
    items = function(registry, "list_product")["parameters"]["properties"]["items"]
    assert "At most 30 active listings" in brief
    assert f"list_product takes up to {items['maxItems']} products per call" in brief
    assert "a document of up to 100000 bytes (UTF-8)" in brief
    assert "It holds 100000 bytes of UTF-8" in function(registry, "write_memory_doc")["description"]


def test_end_of_step_is_the_one_tool_that_ends_the_window() -> None:
    assert END_OF_STEP == "end_of_step" == DEFAULT.window_closer
    assert [t.name for t in DECLARED.tools(include_optional=True) if t.ends_window] == [END_OF_STEP]
    assert DEFAULT.ends_window(END_OF_STEP) and not DEFAULT.ends_window("query_balance")
    assert not DEFAULT.ends_window("no_such_tool")


# --- the mechanism itself ----------------------------------------------------------------------
@dataclass(frozen=True)
class Sizes:
    most: int = 5
    pair: tuple[int, int] = (24, 72)


def _probe(doc: str, annotation: Any = int, default: Any = 1) -> Any:
    namespace: dict[str, Any] = {"annotation": annotation, "default": default}
    exec("def probe(ctx, value: annotation = default): pass", namespace)
    fn = namespace["probe"]
    fn.__doc__ = doc
    return fn


def test_a_limit_renders_into_bounds_description_and_default() -> None:
    fn = _probe(
        "Probe at most {most} ({pair.1:days} days).\n\nArgs:\n    value: Up to {most}.\n",
        Annotated[int, Field(ge=1), Limit(le="most")],
        default=20,
    )
    declared = declare_tool(fn, kind="read", group="control", renders_from=Sizes())
    value = declared.parameters_schema["properties"]["value"]
    assert (value["maximum"], value["default"], value["description"]) == (5, 5, "Up to 5.")
    assert declared.description == "Probe at most 5 (3 days)."
    wider = declared.render(Sizes(most=40))
    assert wider.parameters_schema["properties"]["value"]["maximum"] == 40
    assert wider.parameters_schema["properties"]["value"]["default"] == 20
    assert wider.args_model.model_validate({"value": 40}).value == 40  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="no setting 'most'"):
        declared.render(Scenario())


@pytest.mark.parametrize(
    ("doc", "annotation", "complaint"),
    [
        ("Probe {nope}.\n\nArgs:\n    value: V.\n", int, "no setting 'nope'"),
        ("Probe {most:weird}.\n\nArgs:\n    value: V.\n", int, "unknown format"),
        ("Probe.\n\nArgs:\n    value: V.\n", Annotated[int, Limit(le="absent")], "absent"),
        (
            "Probe.\n\nArgs:\n    value: V.\n",
            list[Annotated[int, Limit(le="most")]],
            "top level",
        ),
    ],
)
def test_setting_mistakes_are_refused_at_declaration(
    doc: str, annotation: Any, complaint: str
) -> None:
    with pytest.raises(TypeError, match=complaint):
        declare_tool(_probe(doc, annotation), kind="read", group="control", renders_from=Sizes())


def test_limit_checks_its_own_arguments() -> None:
    with pytest.raises(TypeError, match="not one of"):
        Limit(maximum="most")
    with pytest.raises(TypeError, match="setting path"):
        Limit(le="Not A Path")
    with pytest.raises(TypeError, match="at least one"):
        Limit()


def test_text_without_placeholders_is_left_alone() -> None:
    text = 'error {code, message}; {"id": 1}; `$.items[3]`'
    assert render_text(text, {}) == text
    assert re.sub(r"\s", "", render_text("{a}/{b:bytes}", {"a": 2.5, "b": 2048})) == "2.5/2KiB"
