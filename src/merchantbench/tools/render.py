"""Limits a tool states, rendered from the settings of the run (for store tools, the scenario).

A limit is written once, in the settings, and every place a tool states it names the setting
instead of repeating the number:

- in the docstring, a setting's path in braces: `At most {tools.max_active_listings} active
  listings`, optionally with a format: `{tools.memory_doc_bytes:bytes}` reads `256 KiB`,
  `{orders.resolution_hours.1:days}` reads `7` (hours as days); a path segment that is a
  number indexes a tuple;
- in an argument's bounds, a `Limit` next to the fixed ones:
  `Annotated[list[Item], Field(min_length=1), Limit(max_length="tools.list_items_max")]`; a
  numeric default beyond a rendered `le`/`ge` bound is moved to the bound.

`declare_tool` reads the values from the default settings; `Tool.render(settings)` reads them
again from another settings object (the run's scenario) and rebuilds what depends on them: the
description, the parameter descriptions, the bounds in the schema and the validation model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

_PATH = r"[a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*"
_PLACEHOLDER = re.compile(r"\{(?P<path>" + _PATH + r")(?::(?P<format>[a-z]+))?\}")
_PATH_TEXT = re.compile(_PATH + r"\Z")
# The keyword bounds of `Field` a setting may fill.
_BOUNDS = frozenset({"ge", "gt", "le", "lt", "min_length", "max_length", "multiple_of"})


def number_text(value: Any) -> str:
    """A number as a sentence states it: `50`, `100` for 100.0, `0.5`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a limit is a number, not {type(value).__name__}")
    return str(value) if isinstance(value, int) else f"{value:g}"


def byte_size_text(size: int) -> str:
    """A size in bytes as a sentence states it: `256 KiB`, or `10 bytes` if not whole KiB."""
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} bytes"


def hours_as_days_text(hours: Any) -> str:
    """A number of hours stated in days: `7` for 168."""
    return number_text(hours / 24)


FORMATS: dict[str, Callable[[Any], str]] = {
    "": number_text,
    "bytes": byte_size_text,
    "days": hours_as_days_text,
}


@dataclass(frozen=True, init=False)
class Limit:
    """Bounds of an argument taken from the settings: `Limit(le="tools.page_size_max")`.

    Put it in the argument's `Annotated[...]`, beside a `Field` holding the fixed bounds. It is
    read at the top level of a parameter's annotation only (not inside `list[...]`, a union or
    a model), which declaration checks.

    Args:
        **bounds: `Field` bound keyword (`ge`, `le`, `max_length` …) → path of the setting.
    """

    bounds: tuple[tuple[str, str], ...]

    def __init__(self, **bounds: str) -> None:
        if not bounds:
            raise TypeError("Limit needs at least one bound")
        for keyword, path in bounds.items():
            if keyword not in _BOUNDS:
                raise TypeError(f"Limit: {keyword!r} is not one of {sorted(_BOUNDS)}")
            if not isinstance(path, str) or not _PATH_TEXT.match(path):
                raise TypeError(f"Limit: {path!r} is not a setting path such as 'tools.x'")
        object.__setattr__(self, "bounds", tuple(sorted(bounds.items())))

    @property
    def paths(self) -> tuple[str, ...]:
        """The settings this limit reads."""
        return tuple(path for _, path in self.bounds)

    def field(self, values: Mapping[str, Any]) -> FieldInfo:
        """The bounds with their values, as a `Field` pydantic merges with the others."""
        return Field(**{keyword: values[path] for keyword, path in self.bounds})  # type: ignore[call-overload, no-any-return]


def placeholder_paths(text: str) -> list[str]:
    """The setting paths named in a text, in order of first appearance."""
    return list(dict.fromkeys(match["path"] for match in _PLACEHOLDER.finditer(text)))


def resolve(settings: object, path: str) -> Any:
    """The value of a setting: attributes by name, tuple items by number.

    Raises:
        LookupError: The path does not lead to a value.
    """
    value: Any = settings
    for segment in path.split("."):
        try:
            value = value[int(segment)] if segment.isdigit() else getattr(value, segment)
        except (AttributeError, IndexError, KeyError, TypeError):
            raise LookupError(f"{type(settings).__name__} has no setting {path!r}") from None
    return value


def resolve_all(settings: object, paths: tuple[str, ...]) -> dict[str, Any]:
    """Path → value for each path (`LookupError` if one does not resolve)."""
    return {path: resolve(settings, path) for path in paths}


def render_text(text: str, values: Mapping[str, Any]) -> str:
    """The text with each placeholder replaced by its setting's value, formatted.

    Raises:
        ValueError: A placeholder has an unknown format.
    """

    def replace(match: re.Match[str]) -> str:
        style = match["format"] or ""
        if style not in FORMATS:
            known = ", ".join(sorted(FORMATS))
            raise ValueError(f"unknown format {style!r} in {match[0]}; use one of {known}")
        return FORMATS[style](values[match["path"]])

    return _PLACEHOLDER.sub(replace, text)


def limits_of(annotation: Any) -> list[Limit]:
    """The `Limit`s at the top level of a parameter's annotation."""
    if get_origin(annotation) is not Annotated:
        return []
    return [item for item in annotation.__metadata__ if isinstance(item, Limit)]


def render_annotation(annotation: Any, values: Mapping[str, Any]) -> Any:
    """The annotation with each top-level `Limit` replaced by a `Field` of its values."""
    if not limits_of(annotation):
        return annotation
    base, *metadata = get_args(annotation)
    rendered = [item.field(values) if isinstance(item, Limit) else item for item in metadata]
    return Annotated[(base, *rendered)]  # type: ignore[valid-type]


def render_default(annotation: Any, default: Any, values: Mapping[str, Any]) -> Any:
    """A numeric default moved inside the rendered `ge`/`le` bounds of its annotation, so
    that the schema never offers a default its own bounds forbid (`page_size` 20 where the
    scenario allows 4 rows: the default becomes 4)."""
    if isinstance(default, bool) or not isinstance(default, int | float):
        return default
    for limit in limits_of(annotation):
        for keyword, path in limit.bounds:
            if keyword == "le":
                default = min(default, values[path])
            elif keyword == "ge":
                default = max(default, values[path])
    return default


def has_nested_limit(annotation: Any) -> bool:
    """Whether a `Limit` sits below the top level of an annotation, where it would be ignored."""
    inner = get_args(annotation)
    if get_origin(annotation) is Annotated:
        inner = inner[:1]  # the top level's own metadata is where a Limit belongs
    return any(_holds_limit(item) for item in inner)


def _holds_limit(annotation: Any) -> bool:
    if isinstance(annotation, Limit):
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = annotation.model_fields.values()
        return any(_holds_limit(item) for field in fields for item in field.metadata)
    return any(_holds_limit(item) for item in get_args(annotation))
