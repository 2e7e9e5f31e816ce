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

Two kinds of tool share this mechanism: *environment* tools act on the store (the session is
their context) and *framework* tools belong to an agent harness (its code runner, memory, plan;
`role="framework"`), which may be `async def`. Limits a tool states are settings, not numbers
in its text (`merchantbench.tools.render`): `Tool.render(scenario)` states the run's values.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal, Protocol, TypedDict, get_args

from pydantic import BaseModel, ConfigDict, create_model

from merchantbench.scenario import Scenario
from merchantbench.tools.docstring import parse_docstring
from merchantbench.tools.render import render_text, resolve_all
from merchantbench.tools.schema import model_parameters_schema
from merchantbench.tools.signature import argument_fields, setting_paths

ToolKind = Literal["read", "write"]
ToolRole = Literal["environment", "framework"]
EnvironmentGroup = Literal["sourcing", "listing", "cash", "monitoring", "control"]
FrameworkGroup = Literal["code", "memory", "plan", "skills"]
ToolGroup = EnvironmentGroup | FrameworkGroup

_KINDS: frozenset[str] = frozenset(get_args(ToolKind))
_GROUPS: dict[str, frozenset[str]] = {
    "environment": frozenset(get_args(EnvironmentGroup)),
    "framework": frozenset(get_args(FrameworkGroup)),
}
# What environment tools state their limits from unless told otherwise.
DEFAULT_SCENARIO = Scenario()
_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")  # OpenAI allows [a-zA-Z0-9_-]{1,64}


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
        kind: `read` (changes nothing) or `write` (changes state).
        group: The tool group: of the agent interface (docs/design.md §8) for environment tools, or
        of
            the harness (`code`, `memory`, `plan`, `skills`) for framework tools.
        optional: Off unless a scenario enables it.
        summary: First line of the docstring.
        description: The tool description shown to the model.
        parameters_schema: JSON schema of the arguments (OpenAI `parameters`). Do not mutate.
        args_model: Pydantic model validating the arguments (without `idempotency_key`).
        fn: The declared function, called as `fn(ctx, **arguments)`.
        role: `environment` (a store tool; its calls are environment calls) or `framework` (a
            tool of an agent harness, recorded as a framework call).
        ends_window: Calling it closes the decision window (`end_of_step`); it does not count
            towards the window's call cap.
        settings: The settings the tool states (path → value it was rendered with). Do not
            mutate.
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
    role: ToolRole = "environment"
    ends_window: bool = False
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The arguments the agent may send, in signature order."""
        return tuple(self.parameters_schema["properties"])

    @property
    def accepts_idempotency_key(self) -> bool:
        """Environment write tools take an optional idempotency key; framework tools do not."""
        return _accepts_key(self.kind, self.role)

    @cached_property
    def is_async(self) -> bool:
        """Whether the function is `async def` (then call it through `call_async`); asked on
        every call, so found once."""
        return inspect.iscoroutinefunction(self.fn)

    def render(self, settings: object) -> Tool:
        """This tool stating the values of `settings` (e.g. a run's scenario).

        Returns the tool itself when the values are those it already states; renderings are
        cached, so building a registry per run is cheap.

        Raises:
            ValueError: `settings` lacks one of the settings the tool states.
        """
        try:
            values = resolve_all(settings, tuple(self.settings))
        except LookupError as exc:
            raise ValueError(f"tool {self.name}: {exc}") from None
        if values == self.settings:
            return self
        return _rendered(self, tuple(values.items()))

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


def _accepts_key(kind: str, role: str) -> bool:
    # An idempotency key guards a state change of the store against a retried call.
    return kind == "write" and role == "environment"


def _deep_copy(value: Any) -> Any:
    # Schemas are JSON-shaped, so this is exact and several times faster than copy.deepcopy.
    if isinstance(value, dict):
        return {key: _deep_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_deep_copy(item) for item in value]
    return value


def _check_options(fn: Callable[..., Any], options: dict[str, Any]) -> None:
    where = f"tool {fn.__name__}"
    role, group = options["role"], options["group"]
    if options["kind"] not in _KINDS:
        raise ValueError(f"{where}: kind must be one of {sorted(_KINDS)}")
    if role not in _GROUPS:
        raise ValueError(f"{where}: role must be one of {sorted(_GROUPS)}")
    if group not in _GROUPS[role]:
        raise ValueError(f"{where}: {role} tools have the groups {sorted(_GROUPS[role])}")
    if not _TOOL_NAME.match(fn.__name__):
        raise ValueError(f"{where}: names are snake_case, at most 64 characters")
    if options["ends_window"] and (role != "environment" or options["kind"] != "write"):
        raise ValueError(f"{where}: only an environment write tool can end the window")
    if role == "environment" and inspect.iscoroutinefunction(fn):
        raise TypeError(f"{where}: the session calls environment tools synchronously; only "
                        "framework tools may be async")  # fmt: skip


def _build(fn: Callable[..., Any], options: dict[str, Any], values: dict[str, Any]) -> Tool:
    """The tool stating these setting values."""
    try:
        text = render_text(fn.__doc__ or "", values)
    except ValueError as exc:
        raise TypeError(f"tool {fn.__name__}: {exc}") from None
    docstring = parse_docstring(text)
    fields = argument_fields(fn, docstring.parameters, values)
    model_name = "".join(part.title() for part in fn.__name__.split("_")) + "Args"
    args_model = create_model(model_name, __config__=_ARGS_CONFIG, **fields)
    schema = model_parameters_schema(
        args_model.model_json_schema(),
        accepts_idempotency_key=_accepts_key(options["kind"], options["role"]),
    )
    return Tool(
        name=fn.__name__,
        summary=docstring.summary,
        description=docstring.description,
        parameters_schema=schema,
        args_model=args_model,
        fn=fn,
        settings=values,
        **options,
    )


@lru_cache(maxsize=512)
def _rendered(declared: Tool, values: tuple[tuple[str, Any], ...]) -> Tool:
    options = {
        "kind": declared.kind,
        "group": declared.group,
        "optional": declared.optional,
        "role": declared.role,
        "ends_window": declared.ends_window,
    }
    return _build(declared.fn, options, dict(values))


def declare_tool(
    fn: Callable[..., Any],
    *,
    kind: ToolKind,
    group: ToolGroup,
    optional: bool = False,
    role: ToolRole = "environment",
    ends_window: bool = False,
    renders_from: object = None,
) -> Tool:
    """Derive a `Tool` from a function; see `tool` for the rules the function must follow."""
    options = {
        "kind": kind,
        "group": group,
        "optional": optional,
        "role": role,
        "ends_window": ends_window,
    }
    _check_options(fn, options)
    source = DEFAULT_SCENARIO if renders_from is None else renders_from
    try:
        values = resolve_all(source, setting_paths(fn))
    except LookupError as exc:
        raise TypeError(f"tool {fn.__name__}: {exc}") from None
    return _build(fn, options, values)


def tool(
    *,
    kind: ToolKind,
    group: ToolGroup,
    optional: bool = False,
    role: ToolRole = "environment",
    ends_window: bool = False,
    renders_from: object = None,
) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a function as a tool.

    The function's first parameter is the context (see `ToolContext`); every other parameter is
    an argument the agent sends, annotated with its type (`Annotated[int, Field(ge=1)]`,
    `Literal[...]`, a `ToolArgs` model, `list[...]` of those) and documented in the docstring's
    `Args:` section, which is the only place parameter descriptions are written. The function
    returns a dict or a pydantic model (the result), or raises `ToolError` to refuse. Limits it
    states are settings: `{path}` in the docstring, `Limit(...)` in a bound (see `render`).

    Args:
        kind: `read` for tools that change nothing, `write` for tools that change state.
        group: The tool group: `sourcing`, `listing`, `cash`, `monitoring` or `control` for an
            environment tool; `code`, `memory`, `plan` or `skills` for a framework tool.
        optional: Whether the tool is off unless a scenario enables it.
        role: `environment` (a store tool, called by the session) or `framework` (a tool of an
            agent harness; it may be `async def`).
        ends_window: Whether calling it closes the decision window (`end_of_step`).
        renders_from: The settings the docstring's placeholders and the `Limit` bounds are read
            from at declaration; default the default scenario. `Tool.render` reads them again.

    Raises:
        TypeError: The signature or docstring does not follow the rules above, or names a
            setting `renders_from` lacks.
        ValueError: Unknown kind, role or group, or a name the providers would refuse.
    """

    def decorate(fn: Callable[..., Any]) -> Tool:
        return declare_tool(
            fn,
            kind=kind,
            group=group,
            optional=optional,
            role=role,
            ends_window=ends_window,
            renders_from=renders_from,
        )

    return decorate
