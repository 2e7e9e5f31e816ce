"""From a tool function's signature to the fields of its arguments model.

The first parameter is the context; every other one is an argument the agent sends, whose
annotation gives its type and bounds and whose description comes from the docstring. The rules
a parameter must follow (and the mistakes refused at declaration) are in `check_parameter`.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Annotated, Any, get_origin, get_type_hints

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from merchantbench.tools.render import (
    has_nested_limit,
    limits_of,
    placeholder_paths,
    render_annotation,
    render_default,
)
from merchantbench.tools.schema import IDEMPOTENCY_KEY

_EMPTY_CODE = (lambda: None).__code__


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


def _arguments(fn: Callable[..., Any]) -> tuple[list[inspect.Parameter], dict[str, Any]]:
    """The parameters after the context, and their resolved annotations."""
    where = f"tool {fn.__name__}"
    parameters = list(inspect.signature(fn).parameters.values())
    if not parameters or parameters[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise TypeError(f"{where}: the first parameter must be the context")
    arguments = parameters[1:]
    return arguments, _argument_hints(fn, [parameter.name for parameter in arguments])


def argument_fields(
    fn: Callable[..., Any], documented: dict[str, str], values: dict[str, Any]
) -> dict[str, Any]:
    """Field definitions for `create_model`, one per parameter after the context."""
    where = f"tool {fn.__name__}"
    arguments, hints = _arguments(fn)
    fields: dict[str, Any] = {}
    for parameter in arguments:
        _check_parameter(where, parameter, hints)
        if parameter.name not in documented:
            raise TypeError(f"{where}: parameter {parameter.name} is missing from the Args section")
        hint = hints[parameter.name]
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        # Bounds stay in the annotation; pydantic merges them with this description.
        described = Field(
            render_default(hint, default, values), description=documented[parameter.name]
        )
        fields[parameter.name] = (render_annotation(hint, values), described)
    undeclared = set(documented) - set(fields)
    if undeclared:
        raise TypeError(f"{where}: the docstring documents unknown parameters {sorted(undeclared)}")
    return fields


def setting_paths(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The settings a tool states: placeholders of its docstring, then `Limit` bounds."""
    arguments, hints = _arguments(fn)
    paths = placeholder_paths(fn.__doc__ or "")
    for parameter in arguments:
        hint = hints.get(parameter.name)
        if has_nested_limit(hint):
            raise TypeError(
                f"tool {fn.__name__}: put the Limit of {parameter.name} at the top level of its "
                "Annotated[...]; inside a list, a union or a model it would not be rendered"
            )
        paths += [path for limit in limits_of(hint) for path in limit.paths]
    return tuple(dict.fromkeys(paths))
