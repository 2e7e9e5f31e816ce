"""Declare a tool once, as a typed Python function; derive everything else from it.

    @tool(kind="read", group="sourcing")
    def search_products(
        ctx: ToolContext,
        query: Annotated[str, Field(min_length=1, max_length=200)],
        sort: Literal["relevance", "price_asc", "price_desc"] = "relevance",
        page: Annotated[int, Field(ge=1)] = 1,
    ) -> dict[str, Any]:
        '''Search the wholesale catalog.

        Args:
            query: Words to look for in product titles.
            sort: Order of the results.
            page: 1-based page number.
        '''

The first parameter is the context the tool acts on; the others are the arguments the agent
sends. From this one declaration the decorator builds, once: a pydantic model that validates the
arguments (unknown arguments rejected, NaN and infinities too), the JSON schema of the arguments
with every `$ref` inlined, and the description from the docstring. `ToolRegistry.call` uses
them on every call without rebuilding anything.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import (
    Annotated,
    Any,
    Literal,
    Protocol,
    TypedDict,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from merchantbench.tools.docstring import parse_docstring
from merchantbench.tools.schema import IDEMPOTENCY_KEY, model_parameters_schema

ToolKind = Literal["read", "write"]
ToolGroup = Literal["sourcing", "listing", "cash", "monitoring", "control"]

_KINDS: frozenset[str] = frozenset(get_args(ToolKind))
_GROUPS: frozenset[str] = frozenset(get_args(ToolGroup))
_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")  # OpenAI allows [a-zA-Z0-9_-]{1,64}
_EMPTY_CODE = (lambda: None).__code__


class IdempotencyRecord(TypedDict):
    """The remembered outcome of a state-changing call made with an idempotency key.

    Plain strings only, so that the record snapshots and restores with the session as is.
    """

    tool: str
    args_sha256: str
    result_json: str


class ToolContext(Protocol):
    """What the framework needs from the object a tool acts on (in practice, the session).

    Tools themselves expect more (the engine, the clock, the catalog); each tool module types its
    context with its own protocol that extends this one.
    """

    @property
    def idempotency_store(self) -> MutableMapping[str, IdempotencyRecord]:
        """Idempotency key → the first successful outcome of the call that used it."""
        ...


class ToolArgs(BaseModel):
    """Base for structured arguments (e.g. one item of a batch): unknown fields and non-finite
    numbers are rejected, as the schema shown to the model promises."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


_ARGS_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False)


@dataclass(frozen=True, eq=False)
class Tool:
    """One declared tool and everything derived from its declaration.

    Attributes:
        name: The function name; what the model calls.
        kind: `read` (changes nothing) or `write` (changes state; accepts an idempotency key).
        group: The tool group of the agent interface (SPEC §8).
        optional: Off unless a scenario enables it.
        summary: First line of the docstring.
        description: The tool description shown to the model.
        parameters_schema: JSON schema of the arguments (OpenAI `parameters`). Do not mutate.
        args_model: Pydantic model validating the arguments (without `idempotency_key`).
        fn: The declared function, called as `fn(ctx, **arguments)`.
    """

    name: str
    kind: ToolKind
    group: ToolGroup
    optional: bool
    summary: str
    description: str
    parameters_schema: dict[str, Any]
    args_model: type[BaseModel]
    fn: Callable[..., Any]

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The arguments the agent may send, in signature order."""
        return tuple(self.parameters_schema["properties"])

    def openai_schema(self) -> dict[str, Any]:
        """The tool in OpenAI function-calling format (a fresh dict, safe to modify)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _deep_copy(self.parameters_schema),
            },
        }

    def __call__(self, ctx: Any, /, **arguments: Any) -> Any:
        """Call the function directly, without validation (for tests and internal reuse)."""
        return self.fn(ctx, **arguments)


def _deep_copy(value: Any) -> Any:
    # Schemas are JSON-shaped, so this is exact and several times faster than copy.deepcopy.
    if isinstance(value, dict):
        return {key: _deep_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_deep_copy(item) for item in value]
    return value


def _has_description(annotation: Any) -> bool:
    if get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)


def _argument_hints(fn: Callable[..., Any], names: list[str]) -> dict[str, Any]:
    """Resolve the annotations of the arguments only.

    The context's annotation is often imported under `TYPE_CHECKING` alone, so resolving the
    whole signature (as `get_type_hints(fn)` does) would fail on it.
    """
    holder = types.FunctionType(_EMPTY_CODE, fn.__globals__)
    holder.__annotations__ = {n: a for n, a in fn.__annotations__.items() if n in names}
    return get_type_hints(holder, include_extras=True)


def _check_parameter(where: str, parameter: inspect.Parameter, hints: dict[str, Any]) -> None:
    """Refuse an argument the model could not be told about, or told about wrongly."""
    name = parameter.name
    if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        raise TypeError(f"{where}: *args and **kwargs cannot be described to a model")
    if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise TypeError(f"{where}: {name} must be passable by keyword")
    if name not in hints:
        raise TypeError(f"{where}: parameter {name} needs a type annotation")
    # Field names that shadow BaseModel attributes would break the arguments model.
    if name == IDEMPOTENCY_KEY or name.startswith("_") or hasattr(BaseModel, name):
        raise TypeError(f"{where}: the parameter name {name!r} is reserved")
    if isinstance(parameter.default, FieldInfo):
        raise TypeError(f"{where}: put Field() for {name} inside Annotated[...]")
    if _has_description(hints[name]):
        raise TypeError(f"{where}: describe {name} in the docstring's Args, not in Field()")


def _argument_fields(fn: Callable[..., Any], documented: dict[str, str]) -> dict[str, Any]:
    """Field definitions for `create_model`, one per parameter after the context."""
    where = f"tool {fn.__name__}"
    parameters = list(inspect.signature(fn).parameters.values())
    if not parameters or parameters[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise TypeError(f"{where}: the first parameter must be the context")
    arguments = parameters[1:]
    hints = _argument_hints(fn, [parameter.name for parameter in arguments])
    fields: dict[str, Any] = {}
    for parameter in arguments:
        _check_parameter(where, parameter, hints)
        if parameter.name not in documented:
            raise TypeError(f"{where}: parameter {parameter.name} is missing from the Args section")
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        # Bounds stay in the annotation; pydantic merges them with this description.
        field = Field(default, description=documented[parameter.name])
        fields[parameter.name] = (hints[parameter.name], field)
    undeclared = set(documented) - set(fields)
    if undeclared:
        raise TypeError(f"{where}: the docstring documents unknown parameters {sorted(undeclared)}")
    return fields


def declare_tool(
    fn: Callable[..., Any], *, kind: ToolKind, group: ToolGroup, optional: bool = False
) -> Tool:
    """Derive a `Tool` from a function; see `tool` for the rules the function must follow."""
    if kind not in _KINDS:
        raise ValueError(f"tool {fn.__name__}: kind must be one of {sorted(_KINDS)}")
    if group not in _GROUPS:
        raise ValueError(f"tool {fn.__name__}: group must be one of {sorted(_GROUPS)}")
    if not _TOOL_NAME.match(fn.__name__):
        raise ValueError(f"tool {fn.__name__}: names are snake_case, at most 64 characters")
    docstring = parse_docstring(fn.__doc__)
    fields = _argument_fields(fn, docstring.parameters)
    model_name = "".join(part.title() for part in fn.__name__.split("_")) + "Args"
    args_model = create_model(model_name, __config__=_ARGS_CONFIG, **fields)
    schema = model_parameters_schema(
        args_model.model_json_schema(), accepts_idempotency_key=kind == "write"
    )
    return Tool(
        name=fn.__name__,
        kind=kind,
        group=group,
        optional=optional,
        summary=docstring.summary,
        description=docstring.description,
        parameters_schema=schema,
        args_model=args_model,
        fn=fn,
    )


def tool(
    *, kind: ToolKind, group: ToolGroup, optional: bool = False
) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a function as a tool.

    The function's first parameter is the context (see `ToolContext`); every other parameter is
    an argument the agent sends, annotated with its type (`Annotated[int, Field(ge=1)]`,
    `Literal[...]`, a `ToolArgs` model, `list[...]` of those) and documented in the docstring's
    `Args:` section, which is the only place parameter descriptions are written. The function
    returns a dict or a pydantic model (the result), or raises `ToolError` to refuse.

    Args:
        kind: `read` for tools that change nothing, `write` for tools that change state.
        group: The tool group of the agent interface.
        optional: Whether the tool is off unless a scenario enables it.

    Raises:
        TypeError: The signature or docstring does not follow the rules above.
        ValueError: Unknown kind or group, or a name the providers would refuse.
    """

    def decorate(fn: Callable[..., Any]) -> Tool:
        return declare_tool(fn, kind=kind, group=group, optional=optional)

    return decorate
