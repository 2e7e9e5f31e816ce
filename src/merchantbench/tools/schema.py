"""Turn pydantic's JSON schema of a tool's arguments into what a model can use.

Pydantic gives a correct Draft 2020-12 schema, but models stumble on parts of it: `$ref` into
`$defs` is ignored or mangled by several providers, and `title` on every node costs tokens for
nothing. So the schema is rewritten once, at declaration:

- every `$ref` is replaced by the definition it points to (a recursive model is refused);
- `title` keywords are dropped (a *property* called `title` is of course kept);
- every object must either list its properties and forbid others (`additionalProperties:
  false`) or be a map whose values all follow one schema (`dict[str, int]`, `dict[str,
  JsonValue]` for a free JSON object). This is checked rather than added, because validation
  uses the same pydantic models: a schema that promised `false` while validation let unknown
  fields through would be a lie. A plain `dict`, `dict[str, Any]` (no value schema), a
  `TypedDict`, a dataclass or a model that allows extra fields is refused.
"""

from __future__ import annotations

import copy
from typing import Any

IDEMPOTENCY_KEY = "idempotency_key"
IDEMPOTENCY_KEY_MAX_LENGTH = 200

IDEMPOTENCY_KEY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": IDEMPOTENCY_KEY_MAX_LENGTH,
    "description": (
        "Optional. Any unique string for this action. Repeating a call with the same key "
        "returns the first result instead of acting twice."
    ),
}

# Keywords whose value is a single subschema, and those holding a list or a name->schema map.
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs")


class SchemaError(TypeError):
    """A tool's arguments cannot be described to a model as declared."""


def _resolve(ref: str, definitions: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or ref[len(prefix) :] not in definitions:
        raise SchemaError(f"cannot inline the reference {ref!r}")
    name = ref[len(prefix) :]
    return name, definitions[name]


def _rewrite(node: Any, definitions: dict[str, Any], expanding: tuple[str, ...], at: str) -> Any:
    """Return a copy of `node` with references inlined, titles dropped and objects checked."""
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "$ref" in node:
        name, target = _resolve(node.pop("$ref"), definitions)
        if name in expanding:
            raise SchemaError(f"{at}: {name} refers to itself; recursive models cannot be inlined")
        # Keywords next to the reference (a parameter's description) win over the definition's.
        inlined = _rewrite(target, definitions, (*expanding, name), at)
        node = {**inlined, **node}
    node.pop("title", None)
    node.pop("$defs", None)
    for key in _SUBSCHEMA:
        if key in node:
            node[key] = _rewrite(node[key], definitions, expanding, f"{at}.{key}")
    for key in _SUBSCHEMA_LISTS:
        if key in node:
            node[key] = [_rewrite(item, definitions, expanding, at) for item in node[key]]
    for key in _SUBSCHEMA_MAPS:
        if key in node:
            node[key] = {
                name: _rewrite(sub, definitions, expanding, f"{at}.{name}")
                for name, sub in node[key].items()
            }
    _check_closed(node, at)
    return node


def _is_map(node: dict[str, Any]) -> bool:
    """A `dict[str, V]`: no named properties, every value checked against one schema."""
    return isinstance(node.get("additionalProperties"), dict) and not node.get("properties")


def _check_closed(node: dict[str, Any], at: str) -> None:
    if node.get("type") != "object" or _is_map(node):
        return
    if node.get("additionalProperties") is not False:
        raise SchemaError(
            f"{at}: objects in tool arguments must forbid unknown fields; use a pydantic model "
            "with model_config = ConfigDict(extra='forbid') (ToolArgs does this), or a map "
            "dict[str, V] with a value type, not a plain dict, TypedDict or dataclass"
        )


def model_parameters_schema(
    raw: dict[str, Any], *, accepts_idempotency_key: bool
) -> dict[str, Any]:
    """The `parameters` schema of a tool, from pydantic's schema of its arguments model.

    Args:
        raw: `args_model.model_json_schema()`.
        accepts_idempotency_key: Whether to advertise the optional `idempotency_key` property
            (state-changing tools).

    Raises:
        SchemaError: A reference cannot be inlined or an object allows unknown fields.
    """
    definitions = raw.get("$defs", {})
    schema = _rewrite(raw, definitions, (), "$")
    schema.pop("description", None)  # the tool description already says it
    schema.setdefault("properties", {})
    if accepts_idempotency_key:
        schema["properties"][IDEMPOTENCY_KEY] = copy.deepcopy(IDEMPOTENCY_KEY_SCHEMA)
    return schema


def iter_subschemas(node: Any) -> list[dict[str, Any]]:
    """Every schema node under `node` (itself included), for checks and tests."""
    if not isinstance(node, dict):
        return []
    found = [node]
    for key in _SUBSCHEMA:
        found += iter_subschemas(node.get(key))
    for key in _SUBSCHEMA_LISTS:
        for item in node.get(key, ()):
            found += iter_subschemas(item)
    for key in _SUBSCHEMA_MAPS:
        for sub in node.get(key, {}).values():
            found += iter_subschemas(sub)
    return found
