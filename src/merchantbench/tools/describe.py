"""A tool described for people: the web playground, the docs, `merchantbench tools`.

The description is read off the same JSON schema the model sees, so the two cannot disagree.
Fields of structured arguments get rows of their own (`items[].sale_price`), because those are
the ones a person filling in a form needs to know about.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from merchantbench.tools.declare import Tool

_BOUNDS = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "length ≥ {}"),
    ("maxLength", "length ≤ {}"),
    ("minItems", "≥ {} items"),
    ("maxItems", "≤ {} items"),
    ("pattern", "matches {}"),
)


@dataclass(frozen=True)
class ParameterRow:
    """One line of a tool's parameter table.

    Attributes:
        name: Parameter name; fields of structured arguments are dotted (`items[].product_id`).
        type: The type in words, e.g. `integer`, `"asc" | "desc"`, `list of object`.
        required: Whether the agent must send it.
        default: The default as JSON text, or None.
        constraints: Bounds in words, e.g. `≥ 1, ≤ 100`.
        description: What the model is told about it.
    """

    name: str
    type: str
    required: bool
    default: str | None
    constraints: str
    description: str


@dataclass(frozen=True)
class ToolDescription:
    """A tool as people read it: name, tags, summary, full description and parameter table."""

    name: str
    kind: str
    group: str
    optional: bool
    summary: str
    description: str
    parameters: tuple[ParameterRow, ...]
    role: str = "environment"

    def as_markdown(self) -> str:
        """The description as Markdown: heading, tags, text and a parameter table."""
        tags = f"{self.kind} · {self.group}" + (" · optional" if self.optional else "")
        tags += " · framework" if self.role == "framework" else ""
        lines = [f"### `{self.name}`", "", f"*{tags}*", "", self.description, ""]
        if self.parameters:
            lines += ["| parameter | type | required | default | constraints | description |"]
            lines += ["|---|---|---|---|---|---|"]
            for row in self.parameters:
                cells = (
                    f"`{row.name}`",
                    row.type,
                    "yes" if row.required else "no",
                    f"`{row.default}`" if row.default is not None else "",
                    row.constraints,
                    row.description,
                )
                lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        return "\n".join(lines).rstrip() + "\n"


def type_words(schema: dict[str, Any]) -> str:
    """A JSON schema's type in a few words."""
    if "enum" in schema:
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return " | ".join(type_words(option) for option in schema[union])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {type_words(schema.get('items', {}))}"
    if isinstance(kind, list):
        return " | ".join(kind)
    return kind or "any"


def constraint_words(schema: dict[str, Any]) -> str:
    """A schema's bounds in words, e.g. `≥ 0.01, ≤ 1000000.0`, including those of the options
    of a nullable parameter (`Annotated[float, Field(gt=0)] | None`)."""
    words = [text.format(schema[key]) for key, text in _BOUNDS if key in schema]
    words += [text for text in map(constraint_words, schema.get("anyOf", ())) if text]
    return ", ".join(words)


def _object_inside(schema: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The object a parameter holds (directly, in a list, or as a nullable option), if any."""
    if schema.get("type") == "object":
        return "", schema
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        inner = _object_inside(schema["items"])
        return ("[]" + inner[0], inner[1]) if inner else None
    for option in schema.get("anyOf", ()):
        inner = _object_inside(option)
        if inner:
            return inner
    return None


def parameter_rows(schema: dict[str, Any], prefix: str = "") -> list[ParameterRow]:
    """Rows for an object schema's properties, then for the fields of nested objects."""
    rows = []
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        default = json.dumps(prop["default"], ensure_ascii=False) if "default" in prop else None
        row = ParameterRow(
            name=prefix + name,
            type=type_words(prop),
            required=name in required,
            default=default,
            constraints=constraint_words(prop),
            description=prop.get("description", ""),
        )
        rows.append(row)
        inner = _object_inside(prop)
        if inner is not None:
            rows += parameter_rows(inner[1], f"{prefix}{name}{inner[0]}.")
    return rows


def describe_tool(declared: Tool) -> ToolDescription:
    """The human-facing description of a declared tool."""
    return ToolDescription(
        name=declared.name,
        kind=declared.kind,
        group=declared.group,
        optional=declared.optional,
        summary=declared.summary,
        description=declared.description,
        parameters=tuple(parameter_rows(declared.parameters_schema)),
        role=declared.role,
    )
