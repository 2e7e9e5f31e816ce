"""Reading tool answers: the compact tables tools return ({"columns": [...], "rows": [[...]]})
as dicts, and the store's state in a snapshot."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from merchantbench.tools.context import parse_clock_text


def rows_of(result: dict[str, Any], key: str | None = None) -> list[dict[str, Any]]:
    """The rows of a tool's table (or of `result[key]`) as column → value dicts; [] on error."""
    if not result.get("ok", True):
        return []
    block = result[key] if key else result
    if not isinstance(block, dict) or "columns" not in block:
        return []
    columns = block["columns"]
    return [dict(zip(columns, row, strict=True)) for row in block["rows"]]


def columns_of(result: dict[str, Any], *names: str) -> list[tuple[Any, ...]]:
    """The named columns of each row of a tool's table, as tuples; [] on error or when the
    table lacks one of them. Cheaper than `rows_of` for an agent reading a few columns."""
    if not result.get("ok", True) or not isinstance(result.get("columns"), list):
        return []
    columns = result["columns"]
    if any(name not in columns for name in names):
        return []
    if len(names) == 1:
        k = columns.index(names[0])
        return [(row[k],) for row in result["rows"]]
    pick = itemgetter(*(columns.index(name) for name in names))
    return [pick(row) for row in result["rows"]]


def open_store_hour(snapshot: dict[str, Any]) -> int | None:
    """The hour a `get_store_snapshot` answer was taken at, or None when the call was refused,
    the store is closed or its time does not read as "Day N HH:00"."""
    if not snapshot.get("ok") or snapshot.get("store") != "open":
        return None
    return parse_clock_text(snapshot.get("at", ""))
