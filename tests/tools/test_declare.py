"""Declaring a tool: the schema, description and checks derived from one typed function."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

import jsonschema
import pytest
from example_shop import FakeShop, Listing, list_items, search, set_price, shop_registry
from pydantic import BaseModel, ConfigDict, Field

from merchantbench.tools import ToolArgs, ToolRegistry, declare_tool, tool
from merchantbench.tools.schema import SchemaError, iter_subschemas


def parameters(declared: Any) -> dict[str, Any]:
    return declared.openai_schema()["function"]["parameters"]


def test_openai_schema_has_the_function_calling_shape() -> None:
    schema = search.openai_schema()
    assert schema["type"] == "function"
    assert set(schema["function"]) == {"name", "description", "parameters"}
    assert schema["function"]["name"] == "search"
    assert schema["function"]["parameters"]["type"] == "object"


def test_signature_gives_properties_required_defaults_enums_and_bounds() -> None:
    props = parameters(search)["properties"]
    assert list(props) == ["query", "sort", "page", "max_price"]
    assert parameters(search)["required"] == ["query"]
    assert props["query"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 100,
        "description": "Words to look for.",
    }
    assert props["sort"]["enum"] == ["relevance", "price_asc", "price_desc"]
    assert props["sort"]["default"] == "relevance"
    assert (props["page"]["minimum"], props["page"]["maximum"], props["page"]["default"]) == (
        1,
        50,
        1,
    )
    number, null = props["max_price"]["anyOf"]
    assert number == {"type": "number", "exclusiveMinimum": 0}
    assert null == {"type": "null"}


def test_nested_models_are_inlined_with_their_bounds() -> None:
    items = parameters(list_items)["properties"]["items"]
    assert (items["type"], items["minItems"], items["maxItems"]) == ("array", 1, 5)
    listing = items["items"]
    assert listing["required"] == ["product_id", "sale_price"]
    assert listing["properties"]["sale_price"]["minimum"] == 0.01
    assert listing["properties"]["sale_price"]["maximum"] == 1e6
    assert listing["properties"]["product_id"]["maxLength"] == 16
    assert listing["description"] == "One product to put on sale."


@pytest.mark.parametrize("declared", shop_registry().tools(include_optional=True))
def test_no_refs_no_titles_and_every_object_is_closed(declared: Any) -> None:
    schema = parameters(declared)
    assert "$ref" not in json.dumps(schema) and "$defs" not in json.dumps(schema)
    nodes = iter_subschemas(schema)
    assert all("title" not in node for node in nodes)
    objects = [node for node in nodes if node.get("type") == "object"]
    assert objects and all(node["additionalProperties"] is False for node in objects)


@pytest.mark.parametrize("declared", shop_registry().tools(include_optional=True))
def test_every_schema_is_valid_draft_2020_12(declared: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(parameters(declared))


@pytest.mark.parametrize(
    ("arguments", "valid"),
    [
        ({"items": [{"product_id": "p1", "sale_price": 3}]}, True),
        ({"items": [{"product_id": "p1", "sale_price": 3}], "idempotency_key": "k"}, True),
        ({"items": []}, False),
        ({"items": [{"product_id": "p1", "sale_price": 0}]}, False),
        ({"items": [{"product_id": "", "sale_price": 3}]}, False),
        ({"items": [{"product_id": "p1", "sale_price": 3, "note": "x"}]}, False),
        ({"items": [{"product_id": "p1"}]}, False),
        ({"items": [{"product_id": "p1", "sale_price": 3}], "extra": 1}, False),
        ({}, False),
    ],
)
def test_json_schema_and_validation_agree(arguments: dict[str, Any], valid: bool) -> None:
    """What the model is promised is what validation enforces."""
    validator = jsonschema.Draft202012Validator(parameters(list_items))
    assert validator.is_valid(arguments) is valid
    registry = ToolRegistry([list_items])
    assert registry.call(FakeShop(), "list_items", arguments)["ok"] is valid


def test_only_write_tools_advertise_an_optional_idempotency_key() -> None:
    for declared in shop_registry().tools(include_optional=True):
        props = parameters(declared)["properties"]
        assert ("idempotency_key" in props) is (declared.kind == "write")
        assert "idempotency_key" not in parameters(declared).get("required", [])
    assert "idempotency_key" not in set_price.args_model.model_fields


def test_docstring_gives_description_and_parameter_descriptions() -> None:
    description = list_items.openai_schema()["function"]["description"]
    assert description.startswith("Put products on sale.\n\nEvery product must exist")
    assert "Returns:\nThe ids now listed." in description
    assert "Raises" not in description and "Args" not in description
    items = parameters(list_items)["properties"]["items"]
    assert items["description"] == "Products and their sale prices, at most five per call."
    assert list_items.summary == "Put products on sale."


def test_metadata_is_available_to_adapters() -> None:
    assert (set_price.name, set_price.kind, set_price.group, set_price.optional) == (
        "set_price",
        "write",
        "listing",
        False,
    )
    assert set_price.parameter_names == ("product_id", "price", "idempotency_key")
    model = set_price.args_model.model_validate({"product_id": "p1", "price": "2.5"})
    assert model.model_dump() == {"product_id": "p1", "price": 2.5}


def _priced(doc: str) -> Any:
    def reprice(ctx: object, price: Annotated[float, Field(ge=0.01)]) -> dict[str, Any]:
        return {"price": price}

    reprice.__doc__ = doc
    return declare_tool(reprice, kind="write", group="listing")


def test_schema_hash_is_stable_and_follows_the_docstring() -> None:
    doc = "Reprice.\n\nArgs:\n    price: New price in RMB.\n"
    first, again = ToolRegistry([_priced(doc)]), ToolRegistry([_priced(doc)])
    assert first.schema_sha256() == first.schema_sha256() == again.schema_sha256()
    changed = ToolRegistry([_priced(doc.replace("New price", "The new price"))])
    assert changed.schema_sha256() != first.schema_sha256()
    text = first.schema_json()
    assert json.loads(text) == first.schema_list()
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    assert first.schema_sha256() == hashlib.sha256(text.encode()).hexdigest()


def test_schema_list_returns_copies() -> None:
    registry = shop_registry()
    registry.schema_list()[0]["function"]["parameters"]["properties"].clear()
    assert registry.schema_list()[0]["function"]["parameters"]["properties"]


def test_context_annotation_need_not_be_importable() -> None:
    """Tool modules import their context type under TYPE_CHECKING only."""

    def peek(ctx: NotImportedAnywhere, depth: int = 1) -> dict[str, Any]:  # noqa: F821
        """Peek.

        Args:
            depth: How deep.
        """
        return {}

    assert declare_tool(peek, kind="read", group="control").parameter_names == ("depth",)


class Loose(BaseModel):
    sale_price: float


class Node(ToolArgs):
    children: list[Node] = []


def _declare(annotation: Any, name: str = "value", doc: str | None = None) -> Any:
    """Declare a read tool with one parameter of this name and annotation."""
    namespace: dict[str, Any] = {"annotation": annotation}
    exec(f"def probe(ctx, {name}: annotation): pass", namespace)
    fn = namespace["probe"]
    fn.__doc__ = doc if doc is not None else f"Probe.\n\nArgs:\n    {name}: A value.\n"
    return declare_tool(fn, kind="read", group="control")


@pytest.mark.parametrize(
    ("annotation", "complaint"),
    [
        (dict, "forbid unknown fields"),
        (dict[str, Any], "forbid unknown fields"),  # a map, but of values the schema can't say
        (Loose, "forbid unknown fields"),
        (list[Loose], "forbid unknown fields"),
        (Node, "refers to itself"),
    ],
)
def test_arguments_a_model_cannot_be_promised_are_refused(annotation: Any, complaint: str) -> None:
    with pytest.raises(SchemaError, match=complaint):
        _declare(annotation)


def test_maps_with_a_value_schema_are_accepted_and_validated() -> None:
    declared = _declare(dict[str, int])
    value = declared.parameters_schema["properties"]["value"]
    assert value == {"type": "object", "additionalProperties": {"type": "integer"},
                     "description": "A value."}  # fmt: skip
    registry = ToolRegistry([declared])
    assert registry.call(FakeShop(), "probe", {"value": {"a": 1, "b": 2}})["ok"] is True
    refused = registry.call(FakeShop(), "probe", {"value": {"a": "x"}})
    assert refused["error"]["code"] == "invalid_argument"
    assert refused["error"]["path"] == "$.value.a"


def test_closed_models_are_accepted() -> None:
    class Closed(BaseModel):
        model_config = ConfigDict(extra="forbid")
        sale_price: float

    assert _declare(list[Closed]).parameters_schema["properties"]["value"]["type"] == "array"
    assert _declare(list[Listing]).parameters_schema["required"] == ["value"]


@pytest.mark.parametrize(
    ("name", "doc", "complaint"),
    [
        ("value", "Probe.\n", "missing from the Args"),
        ("value", "Probe.\n\nArgs:\n    value: A.\n    other: B.\n", "unknown parameters"),
        ("idempotency_key", None, "reserved"),
        ("json", None, "reserved"),
    ],
)
def test_declaration_mistakes_are_refused(name: str, doc: str | None, complaint: str) -> None:
    with pytest.raises(TypeError, match=complaint):
        _declare(int, name, doc)


def test_descriptions_are_written_in_one_place() -> None:
    with pytest.raises(TypeError, match="not in Field"):
        _declare(Annotated[int, Field(ge=1, description="twice")])


def test_signature_mistakes_are_refused() -> None:
    def no_doc(ctx: object) -> None:
        pass

    def varargs(ctx: object, *rest: int) -> None:
        """Varargs."""

    def untyped(ctx, value):  # type: ignore[no-untyped-def]
        """Untyped.

        Args:
            value: A value.
        """

    def no_context() -> None:
        """Nothing."""

    def field_default(ctx: object, page: int = Field(1, ge=1)) -> None:
        """Page.

        Args:
            page: Page number.
        """

    with pytest.raises(ValueError, match="docstring"):
        declare_tool(no_doc, kind="read", group="control")
    for fn, complaint in [
        (varargs, r"\*args"),
        (untyped, "annotation"),
        (no_context, "first"),
        (field_default, "inside Annotated"),
    ]:
        with pytest.raises(TypeError, match=complaint):
            declare_tool(fn, kind="read", group="control")


def test_kind_group_and_name_are_checked() -> None:
    def Shout(ctx: object) -> None:  # noqa: N802
        """Shout."""

    with pytest.raises(ValueError, match="kind"):
        tool(kind="delete", group="control")(search.fn)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="group"):
        tool(kind="read", group="marketing")(search.fn)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="snake_case"):
        tool(kind="read", group="control")(Shout)
