"""Form fields for a tool, read off its JSON schema, so every filter, sort and paging option a
tool takes is on the page (and stays there when a tool gains one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from merchantbench.tools.toolset import DECLARED, END_OF_STEP

if TYPE_CHECKING:
    from merchantbench.scenario import Scenario
    from merchantbench.tools.registry import ToolRegistry

# The sale price the basket suggests for a product: this many times its procurement price
# (at most the scenario's price cap); the person changes it before listing.
DEFAULT_PRICE_MULTIPLE = 2.0

# The pages, in order, and the tools each one offers first, in this order (the page's layout).
# Any other tool the scenario enables lands on the page of its declared group (`GROUP_PANELS`),
# so a tool added to the declarations shows up with no edit here.
PANELS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("today", "Today", ("get_daily_report", "get_store_snapshot")),
    ("find", "Find products", ("search_products", "get_product_detail",
                               "get_supplier_profile", "list_supplier_products")),
    ("listings", "My listings", ("review_my_listings", "query_my_listings", "adjust_price",
                                 "query_product_sales_stats")),
    ("orders", "Orders", ("query_my_orders", "query_open_orders", "query_order_updates",
                          "query_order_detail")),
    ("supply", "Supply chain", ("query_supply_chain_anomalies",)),
    ("money", "Money", ("query_cash_pipeline", "query_balance", "query_store_performance")),
    ("notes", "Notes", ()),
    ("rules", "Rules", ("query_platform_rules",)),
)  # fmt: skip


# The page of each environment tool group, for tools `PANELS` does not place.
GROUP_PANELS: dict[str, str] = {
    "sourcing": "find", "listing": "listings", "cash": "money", "monitoring": "orders",
    "control": "rules",
}  # fmt: skip
# Tools the page drives through its own controls, not a form: the basket (list_product), the
# delist button, the notes pad (the memory document), the window's observation on Today and
# the tool list the pages themselves are; the window closer is the End-window button.
OWN_CONTROLS = frozenset(
    {"list_product", "delist_product", "read_memory_doc", "write_memory_doc", "get_observation",
     "list_tools", END_OF_STEP}
)  # fmt: skip


@dataclass(frozen=True)
class Field:
    """One input of a tool form."""

    name: str
    kind: str  # text, number, integer, select, textarea
    label: str
    help: str
    default: Any
    required: bool
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class ToolForm:
    """A tool and its fields."""

    tool: str
    title: str
    help: str
    fields: tuple[Field, ...]


def _plain(spec: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an optional (`anyOf: [X, null]`) property."""
    for branch in spec.get("anyOf", []):
        if branch.get("type") != "null":
            return {**branch, **{k: v for k, v in spec.items() if k != "anyOf"}}
    return spec


def _field(name: str, spec: dict[str, Any], required: bool) -> Field:
    spec = _plain(spec)
    kind = spec.get("type", "string")
    choices = tuple(str(c) for c in spec.get("enum", ()))
    if choices:
        kind = "select"
    elif kind in ("number", "integer"):
        pass
    else:
        kind = "text"
    return Field(
        name=name,
        kind=kind,
        label=name.replace("_", " "),
        help=str(spec.get("description", "")),
        default=spec.get("default"),
        required=required,
        choices=choices,
        minimum=spec.get("minimum"),
        maximum=spec.get("maximum"),
    )


def tool_form(schema: dict[str, Any]) -> ToolForm:
    """The form of one OpenAI function tool (idempotency keys are drawn by the page)."""
    function = schema["function"]
    params = function.get("parameters", {})
    required = set(params.get("required", ()))
    fields = tuple(
        _field(name, spec, name in required)
        for name, spec in params.get("properties", {}).items()
        if name != "idempotency_key"
    )
    description = str(function.get("description", ""))
    title = function["name"].replace("_", " ").capitalize()
    return ToolForm(function["name"], title, description.split("\n")[0], fields)


def panel_tools(names: list[str]) -> list[tuple[str, str, list[str]]]:
    """Each panel's tools among `names` (the tools a scenario enables, in declaration order):
    those `PANELS` places, then the others of the groups the panel shows. Every tool lands on
    one panel unless the page has its own control for it."""
    placed = {tool for _key, _title, tools in PANELS for tool in tools}
    extra: dict[str, list[str]] = {}
    for name in names:
        if name not in placed and name not in OWN_CONTROLS and name in DECLARED:
            extra.setdefault(GROUP_PANELS[DECLARED.get(name).group], []).append(name)
    return [
        (key, title, [t for t in tools if t in names] + extra.get(key, []))
        for key, title, tools in PANELS
    ]


def panel_forms(schemas: list[dict[str, Any]]) -> list[tuple[str, str, list[ToolForm]]]:
    """The forms of each panel, for the tools this scenario enables."""
    by_name = {s["function"]["name"]: s for s in schemas}
    return [
        (key, title, [tool_form(by_name[t]) for t in tools])
        for key, title, tools in panel_tools(list(by_name))
    ]


def page_config(registry: ToolRegistry, scenario: Scenario) -> dict[str, Any]:
    """What the playground page takes from the server instead of knowing it: the tools that
    change the store (their declared kind: the page sends each of their actions with one
    idempotency key), the tool that ends the window, and the basket's price multiple."""
    cap = scenario.demand.max_price_multiple_of_cost
    return {
        "write_tools": [t.name for t in registry.tools() if t.kind == "write"],
        "window_closer": registry.window_closer,
        "default_price_multiple": min(DEFAULT_PRICE_MULTIPLE, cap),
    }
