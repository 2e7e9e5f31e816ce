"""Where a replay first differs from its record: `Divergence`, and the first difference of
two JSON values as a path (`first_difference`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

_SHOWN = 60  # characters of a value a one-line message shows


@dataclass(frozen=True)
class Divergence:
    """The first place where the replay and the record differ.

    Attributes:
        file: The record file that differs (`trace.jsonl`, `transcript.jsonl`, `run.json`,
            `metrics.json`, a Parquet table).
        field: Where inside it: a JSON path within the call's trace entry or answer
            (`answer.listed[0].sale_price`, `args.items[0].sale_price`), a window's
            `observation`, a `run.json` key, a metric (`coherence.x`), or a table's
            `column[row]`.
        expected: What the record holds there (None when it has nothing).
        actual: What the replay produced there (None when it produced nothing).
        window: The window of the call, if the difference is at a call or a window.
        seq: The call's trace sequence number (1-based), if at a call.
        tool: The call's tool, if at a call.
        line: The line of `file` (1-based), for the JSONL files.
    """

    file: str
    field: str
    expected: Any
    actual: Any
    window: int | None = None
    seq: int | None = None
    tool: str | None = None
    line: int | None = None
    against: str = "replayed"  # what `actual` is: the replay's, or a check of the files' own

    def describe(self) -> str:
        """One line: where (window, call, file and field) and the two values."""
        where = []
        if self.window is not None:
            where.append(f"window {self.window}")
        if self.seq is not None:
            where.append(f"call {self.seq}" + (f" ({self.tool})" if self.tool else ""))
        place = f"{self.file}" + (f" line {self.line}" if self.line is not None else "")
        prefix = ", ".join(where) + ": " if where else ""
        return (
            f"{prefix}{place} {self.field}: recorded {_short(self.expected)}, "
            f"{self.against} {_short(self.actual)}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "field": self.field,
            "expected": _jsonable(self.expected),
            "actual": _jsonable(self.actual),
            "window": self.window,
            "seq": self.seq,
            "tool": self.tool,
            "line": self.line,
        }


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def _key_path(path: str, key: str) -> str:
    part = key if key.isidentifier() else repr(key)
    return f"{path}.{part}" if path else part


def first_difference(expected: Any, actual: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place where two JSON values differ, as (path, expected there, actual there);
    None if they are equal. Keys present on one side only differ (the other side is None)."""
    if type(expected) is not type(actual):
        return (path or "(value)", expected, actual)
    if isinstance(expected, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            if key not in actual or key not in expected:
                return (_key_path(path, str(key)), expected.get(key), actual.get(key))
            found = first_difference(expected[key], actual[key], _key_path(path, str(key)))
            if found is not None:
                return found
        return None
    if isinstance(expected, list):
        for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(left, right, f"{path}[{index}]")
            if found is not None:
                return found
        if len(expected) != len(actual):
            index = min(len(expected), len(actual))
            left = expected[index] if index < len(expected) else None
            right = actual[index] if index < len(actual) else None
            return (f"{path}[{index}]", left, right)
        return None
    if expected != actual:
        return (path or "(value)", expected, actual)
    return None
